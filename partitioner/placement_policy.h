// Placement policies: given every colocation group's feasible devices, choose one per group.
//
// The placer (placer.h) works out the constraints — requested devices, colocation, kernels —
// and hands a PlacementProblem to a policy:
//   constraints  the first feasible device in the device list (TensorFlow's behaviour);
//   cost         list scheduling by earliest finish time on the cost model; then local search
//                (one colocation group moved at a time, kept when the placement simulator says
//                the step gets faster) from that schedule and from every device alone, keeping
//                the fastest; respects the devices' memory limits.
#ifndef SHARDFLOW_PARTITIONER_PLACEMENT_POLICY_H_
#define SHARDFLOW_PARTITIONER_PLACEMENT_POLICY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/graph/graph.h"
#include "partitioner/cost_model.h"

namespace shardflow {

struct PlacementProblem {
  const Graph* graph = nullptr;
  const DeviceTopology* topology = nullptr;  // its devices, in order, are the candidates
  const CostModel* costs = nullptr;
  std::vector<int> group_of;                    // node id -> group, -1 for unused ids
  std::vector<std::vector<int>> group_members;  // group -> node ids
  std::vector<std::vector<int>> feasible;       // group -> device indices, never empty
};

struct PlacementDecision {
  std::vector<int> group_device;    // group -> device index
  std::vector<std::string> reason;  // node id -> why the policy put it there
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string name() const = 0;
  virtual absl::Status Place(const PlacementProblem& problem,
                             PlacementDecision* decision) const = 0;
};

struct CostPolicyOptions {
  // Local search after list scheduling stops once it has replayed this many nodes in the
  // simulator in total, over all its starts (so a 10,000-node graph gets a few dozen moves
  // tried, a small one exhaustive passes).
  int64_t refine_budget_node_visits = 3'000'000;
};

std::unique_ptr<PlacementPolicy> NewConstraintsPolicy();
std::unique_ptr<PlacementPolicy> NewCostPolicy(CostPolicyOptions options = {});
// "constraints" or "cost"; an error names the policies that exist.
absl::StatusOr<std::unique_ptr<PlacementPolicy>> NewPlacementPolicy(const std::string& name);

}  // namespace shardflow

#endif  // SHARDFLOW_PARTITIONER_PLACEMENT_POLICY_H_
