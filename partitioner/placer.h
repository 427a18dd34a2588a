// Placer: gives every node of a graph a full device name.
//
//   PlacerOptions options;
//   options.policy = "cost";                       // or "constraints" (the default)
//   std::vector<NodePlacement> report;             // optional: what decided each node
//   SF_RETURN_IF_ERROR(PlaceGraph(graph, devices, options, &report));
//
// First the constraints. Nodes that must share a device form a colocation group (union-find):
// a node whose `_class` attr lists "loc:@other" joins other's group, and every node that uses a
// variable (an input fed by a VarHandleOp) joins the variable's group. A group may run on the
// devices that match the requests of all its members (requests merge: "/job:ps" and
// "/device:CPU:1" give "/job:ps/device:CPU:1") and that have kernels for all its members (the
// kernel registry says which device types do). A node already assigned a device keeps it. With
// allow_soft_placement, a group whose request no device can satisfy keeps only the job and task
// of the request. Impossible constraints are errors that name the nodes, their requests and the
// devices that exist.
//
// Then the policy (placement_policy.h) picks one feasible device per group.
#ifndef SHARDFLOW_PARTITIONER_PLACER_H_
#define SHARDFLOW_PARTITIONER_PLACER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/device_base.h"
#include "core/graph/graph.h"
#include "partitioner/cost_model.h"

namespace shardflow {

// The attr that lists colocation requests, as strings "loc:@<node name>".
inline constexpr char kColocationAttr[] = "_class";
inline constexpr char kColocationPrefix[] = "loc:@";

struct PlacerOptions {
  bool allow_soft_placement = false;
  // Print "name (Op) -> device" for every node, to stderr.
  bool log_device_placement = false;
  // "constraints" or "cost".
  std::string policy = "constraints";
  // For the cost policy: device speeds, memory and links (default: DeviceTopology::ForDevices of
  // the devices), and the cost model (default: analytic estimates). The cluster's devices must be
  // the devices given to PlaceGraph, in the same order.
  const DeviceTopology* topology = nullptr;
  const CostModel* costs = nullptr;
};

// Why a node is where it is.
struct NodePlacement {
  std::string node;
  std::string op;
  std::string requested;                  // the node's own request ("" = none)
  std::vector<std::string> group;         // its colocation group, itself included
  std::string group_request;              // the merged request of the group
  std::vector<std::string> kernel_types;  // device types with kernels for the whole group
  std::vector<std::string> feasible;      // devices the group may run on
  bool soft = false;                      // the request was relaxed by soft placement
  std::string device;                     // the choice
  std::string policy;
  std::string reason;  // the policy's reason
};

// A readable multi-line account of a NodePlacement.
std::string FormatNodePlacement(const NodePlacement& placement);

// Removes the colocation entries that name a node no longer in `graph` (a run's graph pruned
// to its fetches, or rewritten by the optimizer): the whole graph was placed with them, and a
// request with a node that does not run binds nothing.
void DropColocationWithMissingNodes(Graph* graph);

// Assigns every node of `graph` a device of `devices`. `report`, when given, receives one entry
// per node in graph order.
absl::Status PlaceGraph(Graph* graph, const std::vector<DeviceAttributes>& devices,
                        const PlacerOptions& options = {},
                        std::vector<NodePlacement>* report = nullptr);

// Places a copy of `graph` and says why `node` goes where it goes. NotFound for an unknown node.
absl::StatusOr<NodePlacement> ExplainPlacement(const GraphDef& graph,
                                               const std::vector<DeviceAttributes>& devices,
                                               const PlacerOptions& options,
                                               const std::string& node);

}  // namespace shardflow

#endif  // SHARDFLOW_PARTITIONER_PLACER_H_
