// The cost policy's quality and speed.
//
//   build/bin/placement_benchmark
//
// 1. Quality: random DAGs small enough to enumerate every placement (10 nodes on 2 devices =
//    1,024 placements; 7 nodes on 3 devices = 2,187), with random compute times and tensor
//    sizes on clusters with a real link. For each graph, the simulated step time of the cost
//    policy's placement over the best of all placements; issue 4's target: within 5% on average.
// 2. Speed: placing a 10,000-node graph (layers of matmuls and element-wise ops with random
//    skip connections) on 4 devices, with each policy; target < 1 s.
#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "benchmarks/summary_reporter.h"
#include "ops/ops.h"
#include "partitioner/placer.h"
#include "partitioner/simulator.h"
#include "tests/util/random_graph.h"

namespace shardflow {
namespace {

// ---- quality ---------------------------------------------------------------------------------

struct RandomGraph {
  Scope scope = Scope::NewRootScope();
  CostModel costs;
};

DeviceTopology MakeCluster(int devices, double gbps, double latency_us, bool mixed_speeds) {
  TopologyDescription d;
  for (int i = 0; i < devices; ++i) {
    auto* dev = d.add_devices();
    dev->set_name(absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", i));
    dev->set_gflops(mixed_speeds && i == 0 ? 200 : 100);
    dev->set_memory_gbps(mixed_speeds && i == 0 ? 20 : 10);
  }
  d.mutable_default_link()->set_gbps(gbps);
  d.mutable_default_link()->set_latency_us(latency_us);
  auto c = DeviceTopology::FromDescription(d);
  if (!c.ok()) std::abort();
  return *c;
}

struct Quality {
  double mean_ratio = 0, worst_ratio = 0, mean_constraints_ratio = 0;
  int optimal = 0, graphs = 0;
};

Quality MeasureQuality(int nodes, const DeviceTopology& cluster, int graphs, uint32_t seed0) {
  Quality q;
  const int d = cluster.num_devices();
  for (int k = 0; k < graphs; ++k) {
    RandomGraph rg;
    test::BuildRandomGraph(seed0 + k, nodes, rg.scope, &rg.costs);
    GraphDef def;
    if (!rg.scope.ToGraphDef(&def).ok()) std::abort();
    double policy_time[2];
    SimGraph sim;
    for (int p = 0; p < 2; ++p) {
      auto graph = Graph::FromGraphDef(def);
      PlacerOptions options;
      options.policy = p == 0 ? "cost" : "constraints";
      options.topology = &cluster;
      options.costs = &rg.costs;
      if (!PlaceGraph(graph->get(), cluster.Devices(), options).ok()) std::abort();
      auto s = BuildSimGraph(**graph, cluster, rg.costs);
      auto where = PlacementVector(*s, cluster);
      if (!s.ok() || !where.ok()) std::abort();
      policy_time[p] = SimulateStepMicros(*s, *where, cluster);
      if (p == 0) sim = std::move(*s);
    }
    // Every placement of every node (constants included).
    double best = 1e300;
    std::vector<int> where(sim.num_nodes, 0);
    int64_t total = 1;
    for (int n = 0; n < sim.num_nodes; ++n) total *= d;
    for (int64_t code = 0; code < total; ++code) {
      int64_t c = code;
      for (int n = 0; n < sim.num_nodes; ++n, c /= d) where[n] = static_cast<int>(c % d);
      best = std::min(best, SimulateStepMicros(sim, where, cluster));
    }
    double ratio = policy_time[0] / best;
    q.mean_ratio += ratio;
    q.mean_constraints_ratio += policy_time[1] / best;
    q.worst_ratio = std::max(q.worst_ratio, ratio);
    q.optimal += ratio < 1 + 1e-9;
    q.graphs += 1;
  }
  q.mean_ratio /= graphs;
  q.mean_constraints_ratio /= graphs;
  return q;
}

// ---- speed -----------------------------------------------------------------------------------

// ~10,000 nodes: 1,000 layers of (MatMul, Add, Relu, ...) with random skip connections.
GraphDef LargeGraph(int target_nodes) {
  Scope s = Scope::NewRootScope();
  std::mt19937 rng(7);
  Output x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({64, 256}));
  std::vector<Output> layers = {x};
  Tensor wv(DT_FLOAT, TensorShape({256, 256}));
  for (int64_t i = 0; i < wv.NumElements(); ++i) wv.data<float>()[i] = 1e-3f;
  int layer = 0;
  while (s.graph()->num_nodes() < target_nodes) {
    Scope ls = s.NewSubScope(absl::StrCat("layer", layer++));
    Output in = layers[layers.size() - 1 - rng() % std::min<size_t>(layers.size(), 4)];
    Output h = ops::MatMul(ls, in, ops::Const(ls, wv));
    h = ops::Add(ls, h, layers.back());
    h = ops::Relu(ls, h);
    h = ops::Mul(ls, h, ops::Const(ls, 0.5f));
    h = ops::Tanh(ls, ops::Sub(ls, h, ops::Const(ls, 0.1f)));
    layers.push_back(h);
  }
  GraphDef def;
  if (!s.ToGraphDef(&def).ok()) std::abort();
  return def;
}

void BM_Place10kNodes(benchmark::State& state, const char* policy) {
  static const GraphDef* def = new GraphDef(LargeGraph(10000));
  DeviceTopology cluster = MakeCluster(4, 10, 20, false);
  for (auto _ : state) {
    state.PauseTiming();
    auto graph = Graph::FromGraphDef(*def);
    if (!graph.ok()) std::abort();
    state.ResumeTiming();
    PlacerOptions options;
    options.policy = policy;
    options.topology = &cluster;
    if (!PlaceGraph(graph->get(), cluster.Devices(), options).ok()) std::abort();
  }
  state.counters["nodes"] = def->node_size();
}

BENCHMARK_CAPTURE(BM_Place10kNodes, cost, "cost")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Place10kNodes, constraints, "constraints")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) {
  using shardflow::MakeCluster;
  using shardflow::MeasureQuality;
  shardflow::SummaryReporter reporter;
  shardflow::RunBenchmarks(argc, argv, &reporter);
  struct Case {
    const char* name;
    int nodes;
    shardflow::DeviceTopology cluster;
  };
  std::vector<Case> cases = {
      {"10 nodes, 2 devices, 10 GB/s, 20 us", 10, MakeCluster(2, 10, 20, false)},
      {"10 nodes, 2 devices, 1 GB/s, 50 us", 10, MakeCluster(2, 1, 50, false)},
      {"10 nodes, 2 devices of 2x speeds, 10 GB/s", 10, MakeCluster(2, 10, 20, true)},
      {"7 nodes, 3 devices, 10 GB/s, 20 us", 7, MakeCluster(3, 10, 20, false)},
  };
  std::printf(
      "\ncost policy vs the best of every placement (simulated step time, 25 random "
      "graphs per row; constants count as nodes)\n");
  std::printf("%-44s %10s %10s %9s %18s\n", "case", "mean", "worst", "optimal", "constraints mean");
  double all = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    shardflow::Quality q = MeasureQuality(cases[i].nodes, cases[i].cluster, 25, 1000 * (i + 1));
    all += q.mean_ratio;
    std::printf("%-44s %9.3fx %9.3fx %6d/%-2d %17.3fx\n", cases[i].name, q.mean_ratio,
                q.worst_ratio, q.optimal, q.graphs, q.mean_constraints_ratio);
  }
  std::printf("all cases: cost policy within %.1f%% of the best on average (target: 5%%)\n",
              100.0 * (all / cases.size() - 1));
  double cost = reporter.Seconds("BM_Place10kNodes/cost");
  double constraints = reporter.Seconds("BM_Place10kNodes/constraints");
  if (cost > 0) {
    std::printf(
        "placing a 10,000-node graph on 4 devices: cost policy %.0f ms, constraints "
        "policy %.0f ms (target < 1 s)\n",
        cost * 1e3, constraints * 1e3);
  }
  return 0;
}
