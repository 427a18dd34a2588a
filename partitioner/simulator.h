// Placement simulator: how long one step of a placed graph takes on a cluster.
//
//   SF_ASSIGN_OR_RETURN(SimGraph sim, BuildSimGraph(graph, cluster, costs));
//   SF_ASSIGN_OR_RETURN(std::vector<int> where, PlacementVector(graph, sim, cluster));
//   SimResult r = Simulate(sim, where, cluster);
//   std::cout << FormatSimResult(r, cluster);
//
// The model is a discrete-event replay of the executor: a node becomes ready when its last
// input has arrived and starts on the first free slot of its device (nodes in the order they
// became ready); a tensor consumed on another device crosses once per (tensor, destination
// device), as the partitioner's Send/Recv pairs do, and transfers over one link go one after
// another, each costing latency + bytes / bandwidth.
#ifndef SHARDFLOW_PARTITIONER_SIMULATOR_H_
#define SHARDFLOW_PARTITIONER_SIMULATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "partitioner/cost_model.h"

namespace shardflow {

struct SimResult {
  double step_micros = 0;
  std::vector<double> busy_micros;  // per device: sum of its nodes' compute time
  std::vector<int> nodes_per_device;
  // (src device, dst device) -> bytes and transfers that crossed it.
  std::map<std::pair<int, int>, int64_t> link_bytes;
  std::map<std::pair<int, int>, int> link_transfers;
  std::vector<double> start, finish;  // per SimGraph node, µs from the step's start

  double Utilisation(int device) const {
    return step_micros > 0 ? busy_micros[device] / step_micros : 0.0;
  }
};

// `device_of[n]` is the cluster index of SimGraph node n.
SimResult Simulate(const SimGraph& graph, const std::vector<int>& device_of,
                   const DeviceTopology& cluster);
// The same, computing only the step time (the cost policy calls this many times).
double SimulateStepMicros(const SimGraph& graph, const std::vector<int>& device_of,
                          const DeviceTopology& cluster);

// The device indices of a placed graph's nodes, in SimGraph order. Error for a node that is
// not placed or placed on a device the cluster does not list.
absl::StatusOr<std::vector<int>> PlacementVector(const SimGraph& graph,
                                                 const DeviceTopology& cluster);

// A table: step time, then per device its nodes, busy time and utilisation, then per link the
// bytes and transfers.
std::string FormatSimResult(const SimResult& result, const DeviceTopology& cluster);

}  // namespace shardflow

#endif  // SHARDFLOW_PARTITIONER_SIMULATOR_H_
