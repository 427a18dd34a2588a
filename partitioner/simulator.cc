#include "partitioner/simulator.h"

#include <algorithm>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace shardflow {
namespace {

// The replay, shared by Simulate and SimulateStepMicros. `result` may be null.
double Run(const SimGraph& g, const std::vector<int>& device_of, const DeviceTopology& cluster,
           SimResult* result) {
  const int n = g.num_nodes;
  const int d_count = g.num_devices;
  std::vector<int> pending(n);
  std::vector<double> ready(n, 0.0);
  for (int i = 0; i < n; ++i) pending[i] = static_cast<int>(g.in_edges[i].size());
  // Lanes: per device, the times its slots become free.
  std::vector<std::vector<double>> lanes(d_count);
  for (int d = 0; d < d_count; ++d) {
    lanes[d].assign(std::max(1, cluster.device(d).slots()), 0.0);
  }
  std::vector<double> link_free(static_cast<size_t>(d_count) * d_count, 0.0);
  // Arrival of (src node, slot) on a device: one transfer per tensor and destination device.
  absl::flat_hash_map<int64_t, double> arrivals;
  using Item = std::pair<double, int>;  // (ready time, node), earliest first
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) queue.push({0.0, i});
  }
  if (result != nullptr) {
    result->busy_micros.assign(d_count, 0.0);
    result->nodes_per_device.assign(d_count, 0);
    result->start.assign(n, 0.0);
    result->finish.assign(n, 0.0);
    result->link_bytes.clear();
    result->link_transfers.clear();
  }
  double step = 0;
  while (!queue.empty()) {
    auto [at, node] = queue.top();
    queue.pop();
    const int dev = device_of[node];
    auto lane = std::min_element(lanes[dev].begin(), lanes[dev].end());
    const double start = std::max(at, *lane);
    const double cost = g.Cost(node, dev);
    const double end = start + cost;
    *lane = end;
    step = std::max(step, end);
    if (result != nullptr) {
      result->busy_micros[dev] += cost;
      result->nodes_per_device[dev] += 1;
      result->start[node] = start;
      result->finish[node] = end;
    }
    for (int ei : g.out_edges[node]) {
      const SimGraph::Edge& e = g.edges[ei];
      const int dst_dev = device_of[e.dst];
      double arrival = end;
      if (dst_dev != dev) {
        int64_t key = (static_cast<int64_t>(node) * 1024 + (e.slot + 1)) * 1024 + dst_dev;
        auto it = arrivals.find(key);
        if (it != arrivals.end()) {
          arrival = it->second;
        } else {
          double& free = link_free[static_cast<size_t>(dev) * d_count + dst_dev];
          const double begin = std::max(end, free);
          const double cost_link = cluster.TransferMicros(dev, dst_dev, e.bytes);
          const double latency = cluster.TransferMicros(dev, dst_dev, 0);
          free = begin + (cost_link - latency);  // the link is busy for the bytes' time
          arrival = begin + cost_link;
          arrivals.emplace(key, arrival);
          if (result != nullptr) {
            result->link_bytes[{dev, dst_dev}] += e.bytes;
            result->link_transfers[{dev, dst_dev}] += 1;
          }
        }
      }
      ready[e.dst] = std::max(ready[e.dst], arrival);
      if (--pending[e.dst] == 0) queue.push({ready[e.dst], e.dst});
    }
  }
  if (result != nullptr) result->step_micros = step;
  return step;
}

}  // namespace

SimResult Simulate(const SimGraph& graph, const std::vector<int>& device_of,
                   const DeviceTopology& cluster) {
  SimResult result;
  Run(graph, device_of, cluster, &result);
  return result;
}

double SimulateStepMicros(const SimGraph& graph, const std::vector<int>& device_of,
                          const DeviceTopology& cluster) {
  return Run(graph, device_of, cluster, nullptr);
}

absl::StatusOr<std::vector<int>> PlacementVector(const SimGraph& graph,
                                                 const DeviceTopology& cluster) {
  std::vector<int> out(graph.num_nodes, -1);
  for (int n = 0; n < graph.num_nodes; ++n) {
    const Node* node = graph.nodes[n];
    if (node->assigned_device().empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node '", node->name(), "' is not placed; place the graph before simulating it"));
    }
    out[n] = cluster.FindDevice(node->assigned_device());
    if (out[n] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node->name(), "' is placed on '", node->assigned_device(),
          "', which the cluster description does not list; describe every device the graph "
          "uses"));
    }
  }
  return out;
}

std::string FormatSimResult(const SimResult& r, const DeviceTopology& cluster) {
  std::string out = absl::StrFormat("simulated step time: %.1f us\n\n", r.step_micros);
  absl::StrAppendFormat(&out, "%-48s %7s %12s %8s\n", "device", "nodes", "busy us", "util");
  for (int d = 0; d < cluster.num_devices(); ++d) {
    absl::StrAppendFormat(&out, "%-48s %7d %12.1f %7.1f%%\n", cluster.device(d).name(),
                          r.nodes_per_device[d], r.busy_micros[d], 100.0 * r.Utilisation(d));
  }
  if (!r.link_bytes.empty()) {
    absl::StrAppendFormat(&out, "\n%-40s %-40s %12s %9s\n", "from", "to", "bytes", "tensors");
    for (const auto& [link, bytes] : r.link_bytes) {
      absl::StrAppendFormat(&out, "%-40s %-40s %12d %9d\n", cluster.device(link.first).name(),
                            cluster.device(link.second).name(), bytes, r.link_transfers.at(link));
    }
  }
  return out;
}

}  // namespace shardflow
