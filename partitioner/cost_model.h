// The cost model behind the `cost` placement policy and the placement simulator.
//
//   DeviceTopology cluster = DeviceTopology::ForDevices(*session->ListDevices());      // or
//   FromJsonFile CostModel costs;                                                     // analytic
//   estimates costs.AddStepStats(metadata.step_stats(), cluster);                  // refined by a
//   run SF_ASSIGN_OR_RETURN(SimGraph sim, BuildSimGraph(*graph, cluster, costs));
//
// A node's compute time on a device is estimated from its FLOPs and the bytes it reads and
// writes (whichever bound is slower at the device's GFLOP/s and GB/s), plus a fixed dispatch
// overhead. Measured step stats replace the estimate for the nodes they cover (scaled by the
// relative speed of the device they ran on), and calibrate the remaining nodes of the same op
// type by the measured/estimated ratio. A transfer between two devices costs
// latency + bytes / bandwidth of their link.
#ifndef SHARDFLOW_PARTITIONER_COST_MODEL_H_
#define SHARDFLOW_PARTITIONER_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/framework/device_base.h"
#include "core/graph/graph.h"
#include "core/protos/cost.pb.h"
#include "core/protos/step_stats.pb.h"

namespace shardflow {

// Defaults for a device the description says nothing about.
inline constexpr double kDefaultCpuGflopsPerThread = 100.0;
inline constexpr double kDefaultCpuMemoryGbps = 10.0;
inline constexpr double kDefaultGpuGflops = 30000.0;
inline constexpr double kDefaultGpuMemoryGbps = 1500.0;
// Devices of one process hand tensors over by reference: no bandwidth term, a small latency.
inline constexpr double kInProcessLatencyUs = 2.0;

// Devices (in placement order) and the links between them.
class DeviceTopology {
 public:
  // Errors name the device or link at fault. Missing speeds get the defaults above.
  static absl::StatusOr<DeviceTopology> FromDescription(const TopologyDescription& description);
  // `source` names the JSON in errors (a file name).
  static absl::StatusOr<DeviceTopology> FromJson(const std::string& json,
                                                 const std::string& source);
  static absl::StatusOr<DeviceTopology> FromJsonFile(const std::string& path);
  // One device per entry with default speeds (a CPU device: kDefaultCpuGflopsPerThread per
  // intra-op thread when `intra_op_threads` gives them), linked in-process.
  static DeviceTopology ForDevices(const std::vector<DeviceAttributes>& devices,
                                   const std::vector<int>& intra_op_threads = {},
                                   const std::vector<int>& slots = {});

  int num_devices() const { return static_cast<int>(description_.devices_size()); }
  const DeviceDescription& device(int i) const { return description_.devices(i); }
  // -1 when absent.
  int FindDevice(const std::string& name) const;
  // As DeviceAttributes, for the placer.
  std::vector<DeviceAttributes> Devices() const;
  const TopologyDescription& description() const { return description_; }

  // Microseconds to move `bytes` from device a to device b (0 when a == b).
  double TransferMicros(int a, int b, int64_t bytes) const {
    if (a == b) return 0.0;
    const Link& l = links_[a * num_devices() + b];
    return l.latency_us + (l.us_per_byte > 0 ? l.us_per_byte * static_cast<double>(bytes) : 0.0);
  }

 private:
  struct Link {
    double latency_us = 0;
    double us_per_byte = 0;  // 0 = unlimited bandwidth
  };
  TopologyDescription description_;
  std::vector<Link> links_;  // [a * D + b]
};

struct CostModelOptions {
  // Size used for a dimension shape inference left unknown (typically the batch).
  int64_t unknown_dim = 32;
  // Dispatch cost of an op that does work, and of one that does none (Const, Identity...), µs.
  double op_overhead_us = 2.0;
  double cheap_op_overhead_us = 0.1;
};

class CostModel {
 public:
  explicit CostModel(CostModelOptions options = {}) : options_(options) {}

  // Work of a node by the analytic model.
  struct Work {
    double flops = 0;
    double bytes = 0;    // read + written
    bool cheap = false;  // moves no data (Const, Identity, handles, Send/Recv, ...)
  };
  Work AnalyticWork(const Node& node) const;

  // The analytic time of that work on `device`, µs.
  double AnalyticMicros(const Work& work, const DeviceDescription& device) const;
  // Compute time of `node` on `device`, µs: measured (scaled to the device) when the node was
  // measured, else analytic. BuildSimGraph also calibrates unmeasured nodes by op type.
  double ComputeMicros(const Node& node, const DeviceDescription& device) const;
  // Bytes of output `slot` (measured when known, else from the inferred shape).
  int64_t OutputBytes(const Node& node, int slot) const;
  // Memory the node holds on its device: its outputs (none for ops that alias an input), plus
  // the variable it creates. Summed over a device this is an upper bound: it assumes nothing
  // is freed during the step.
  int64_t MemoryBytes(const Node& node) const;

  // Folds in the node times and output sizes of a traced step; `cluster` says how fast the
  // devices they ran on are (devices it does not list count as a default CPU device).
  void AddStepStats(const StepStats& stats, const DeviceTopology& cluster);
  // Sets a node's measured time directly: `micros` on a device of `gflops` / `memory_gbps`.
  // Output sizes are optional. For synthetic graphs and tests.
  void SetMeasured(const std::string& node, double micros, double gflops, double memory_gbps,
                   std::vector<int64_t> output_bytes = {});
  bool IsMeasured(const std::string& node) const;
  int num_measured() const { return static_cast<int>(measured_.size()); }
  const CostModelOptions& options() const { return options_; }

 private:
  struct Measured {
    double micros_sum = 0;
    int count = 0;
    double gflops = 0;
    double memory_gbps = 0;
    std::vector<int64_t> output_bytes;  // -1 = not seen
  };
  CostModelOptions options_;
  absl::flat_hash_map<std::string, Measured> measured_;
};

// A graph reduced to what scheduling needs: per-device costs, memory, edges with bytes. Nodes
// are numbered 0..num_nodes-1 in topological order.
struct SimGraph {
  struct Edge {
    int src = 0;
    int slot = 0;  // -1 for a control edge
    int dst = 0;
    int64_t bytes = 0;
  };
  int num_nodes = 0;
  int num_devices = 0;
  std::vector<const Node*> nodes;  // [n]
  std::vector<double> cost;        // [n * num_devices + d], µs
  std::vector<int64_t> memory;     // [n]
  std::vector<Edge> edges;
  std::vector<std::vector<int>> in_edges;   // [n] -> indices into edges
  std::vector<std::vector<int>> out_edges;  // [n] -> indices into edges
  std::vector<int> index_of;                // node id -> n, -1 for ids not in the graph

  double Cost(int n, int d) const { return cost[static_cast<size_t>(n) * num_devices + d]; }
};

absl::StatusOr<SimGraph> BuildSimGraph(const Graph& graph, const DeviceTopology& cluster,
                                       const CostModel& costs);

}  // namespace shardflow

#endif  // SHARDFLOW_PARTITIONER_COST_MODEL_H_
