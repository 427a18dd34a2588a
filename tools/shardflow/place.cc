#include "tools/shardflow/place.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/graph/graph_io.h"
#include "core/platform/status.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "partitioner/placer.h"
#include "partitioner/simulator.h"
#include "tools/shardflow/flags.h"
#include "tools/shardflow/models.h"

namespace shardflow {
namespace {

struct PlaceConfig {
  std::string model = "cnn";
  std::string graph;
  int64_t devices = 2;
  int64_t threads_per_device = 1;
  std::string cluster;
  std::string policy = "cost";
  std::string explain;
  bool simulate = false;
  bool log_placement = false;
  bool allow_soft_placement = false;
  int64_t batch_size = 64;
};

absl::StatusOr<GraphDef> BuildGraph(const PlaceConfig& c) {
  if (!c.graph.empty()) return ReadGraphDef(c.graph);
  Scope s = Scope::NewRootScope();
  if (c.model == "towers") {
    BuildTowers(s, 1024, 6);
  } else {
    SF_ASSIGN_OR_RETURN(Model m, BuildModel(s, c.model, 1));
    AdamOptimizer adam(1e-3);
    SF_RETURN_IF_ERROR(adam.Minimize(s, m.loss).status());
  }
  GraphDef def;
  SF_RETURN_IF_ERROR(s.ToGraphDef(&def));
  return def;
}

absl::StatusOr<DeviceTopology> MakeCluster(const PlaceConfig& c) {
  if (!c.cluster.empty()) return DeviceTopology::FromJsonFile(c.cluster);
  if (c.devices < 1 || c.threads_per_device < 1) {
    return absl::InvalidArgumentError("--devices and --threads-per-device must be positive");
  }
  std::vector<DeviceAttributes> devices;
  for (int64_t i = 0; i < c.devices; ++i) {
    devices.push_back({absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", i), "CPU", 0});
  }
  return DeviceTopology::ForDevices(devices, std::vector<int>(c.devices, c.threads_per_device));
}

absl::Status Place(const PlaceConfig& c) {
  SF_ASSIGN_OR_RETURN(GraphDef def, BuildGraph(c));
  SF_ASSIGN_OR_RETURN(DeviceTopology cluster, MakeCluster(c));
  CostModelOptions cost_options;
  cost_options.unknown_dim = c.batch_size;
  CostModel costs(cost_options);
  PlacerOptions options;
  options.policy = c.policy;
  options.topology = &cluster;
  options.costs = &costs;
  options.allow_soft_placement = c.allow_soft_placement;
  options.log_device_placement = c.log_placement;
  std::vector<DeviceAttributes> devices = cluster.Devices();
  if (!c.explain.empty()) {
    SF_ASSIGN_OR_RETURN(NodePlacement e, ExplainPlacement(def, devices, options, c.explain));
    std::printf("%s", FormatNodePlacement(e).c_str());
    return absl::OkStatus();
  }
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(def));
  auto start = std::chrono::steady_clock::now();
  SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), devices, options));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::map<std::string, int> per_device;
  for (Node* n : graph->nodes()) per_device[n->assigned_device()] += 1;
  std::printf("placed %d nodes on %d device(s) with the %s policy in %.1f ms\n", graph->num_nodes(),
              cluster.num_devices(), c.policy.c_str(), ms);
  for (const auto& d : cluster.description().devices()) {
    std::printf("  %-48s %6d nodes\n", d.name().c_str(), per_device[d.name()]);
  }
  if (c.simulate) {
    SF_ASSIGN_OR_RETURN(SimGraph sim, BuildSimGraph(*graph, cluster, costs));
    SF_ASSIGN_OR_RETURN(std::vector<int> where, PlacementVector(sim, cluster));
    std::printf("\n%s", FormatSimResult(Simulate(sim, where, cluster), cluster).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

void BuildTowers(const Scope& scope, int dim, int depth) {
  Tensor w(DT_FLOAT, TensorShape({dim, dim}));
  for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] = (i % 17) * 1e-3f;
  std::vector<Output> tops;
  for (int t = 0; t < 2; ++t) {
    Scope ts = scope.NewSubScope(absl::StrCat("tower", t));
    Output x = ops::Const(ts.WithOpName("input"), w);
    for (int d = 0; d < depth; ++d) {
      x = ops::MatMul(ts.WithOpName(absl::StrCat("matmul", d)), x,
                      ops::Const(ts.WithOpName(absl::StrCat("weight", d)), w));
    }
    tops.push_back(x);
  }
  ops::Add(scope.WithOpName("join"), tops[0], tops[1]);
}

void AddPlaceCommand(CommandLine* cli) {
  auto config = std::make_shared<PlaceConfig>();
  PlaceConfig& c = *config;
  Flags& flags = *cli->AddCommand(
      "place", "place a graph on devices, explain a node, simulate the step",
      "Places a graph on devices and says where every node went and why. The graph is a\n"
      "model's training step (--model) or a GraphDef file (--graph); the devices are N local\n"
      "CPU devices (--devices) or a cluster description (--cluster, JSON: devices with their\n"
      "GFLOP/s, memory and slots, links with bandwidth and latency; see docs/placement.md).\n"
      "--simulate estimates the step time and per-device utilisation of the placement;\n"
      "--explain NODE prints that node's constraints and the policy's reason.",
      [config] { return Place(*config); }, "shardflow place: ");
  flags.String("model", &c.model, "cnn, mlp or towers (two independent matmul towers)");
  flags.String("graph", &c.graph, "a GraphDef file (binary or text) to place instead of --model");
  flags.Int("devices", &c.devices, "local CPU devices to place on (without --cluster)");
  flags.Int("threads-per-device", &c.threads_per_device,
            "intra-op threads of each local CPU device (sets its speed in the cost model)");
  // --cluster is the flag's old name (other commands' --cluster is a cluster spec of tasks).
  flags.String("topology,--cluster", &c.cluster,
               "device topology JSON file: devices, speeds, memory and links (instead of "
               "--devices; --cluster is its old name)");
  flags.String("policy", &c.policy, "cost (list scheduling on the cost model) or constraints");
  flags.String("explain", &c.explain, "explain the placement of this node and stop");
  flags.Bool("simulate", &c.simulate, "print the simulated step time and device utilisation");
  flags.Bool("log-placement", &c.log_placement, "print 'name (Op) -> device' for every node");
  flags.Bool("allow-soft-placement", &c.allow_soft_placement,
             "let a node whose requested device cannot run it go to another device of its task");
  flags.Int("batch-size", &c.batch_size, "size assumed for unknown (batch) dimensions");
}

}  // namespace shardflow
