// Placer: gives every node of a graph a full device name.
//
// The `constraints` policy (like TensorFlow's): a node goes to the first device, in the given
// order, that matches its requested spec and has a kernel for it. With allow_soft_placement a
// node whose requested device cannot run it falls back to any device of the same task that can.
// Errors name the node, what it asked for and the devices that exist.
#ifndef SHARDFLOW_PARTITIONER_PLACER_H_
#define SHARDFLOW_PARTITIONER_PLACER_H_

#include <vector>

#include "absl/status/status.h"
#include "core/framework/device_base.h"
#include "core/graph/graph.h"

namespace shardflow {

struct PlacerOptions {
  bool allow_soft_placement = false;
  // Print "name (Op) -> device" for every node.
  bool log_device_placement = false;
};

absl::Status PlaceGraph(Graph* graph, const std::vector<DeviceAttributes>& devices,
                        const PlacerOptions& options = {});

}  // namespace shardflow

#endif  // SHARDFLOW_PARTITIONER_PLACER_H_
