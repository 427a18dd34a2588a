// Executor overhead: a session step over 10,000 trivial (Identity) nodes, as a chain and as a
// wide fan-out, reported in microseconds per node.
//
//   build/bin/executor_benchmark [--benchmark_min_time=1]
//
// Target (issue 2): <= 0.25 us per node.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/summary_reporter.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

constexpr int kNodes = 10000;

std::unique_ptr<Session> MakeSession(const Scope& s) {
  GraphDef def;
  if (!s.ToGraphDef(&def).ok()) std::abort();
  // The executor's overhead, not the optimizer's: with its passes on, the Identity chain folds
  // to a constant and the step runs a handful of nodes (1 us "per 10,000 nodes" since the
  // graph optimizer landed).
  SessionOptions options;
  options.config.mutable_rewrite_options()->set_disable_meta_optimizer(true);
  auto session = NewSession(options);
  if (!session.ok() || !(*session)->Create(def).ok()) std::abort();
  return *std::move(session);
}

// Const -> Identity -> Identity -> ... (kNodes Identities), fetch the last one.
void BM_ExecutorChain(benchmark::State& state) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Const(s, 1.0f);
  for (int i = 0; i < kNodes; ++i) x = ops::Identity(s, x);
  auto session = MakeSession(s);
  std::vector<Tensor> out;
  if (!session->Run({}, {x.name()}, {}, &out).ok()) std::abort();  // warm the executor cache
  for (auto _ : state) {
    if (!session->Run({}, {x.name()}, {}, &out).ok()) std::abort();
  }
  state.counters["nodes"] = kNodes + 2;
}

// Const -> kNodes Identities in parallel -> NoOp joined by control edges (the target).
void BM_ExecutorFanOut(benchmark::State& state) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Const(s, 1.0f);
  std::vector<Operation> leaves;
  for (int i = 0; i < kNodes; ++i) leaves.push_back(ops::Identity(s, x).op());
  ops::NoOp(s.WithOpName("join").WithControlDependencies(leaves));
  auto session = MakeSession(s);
  std::vector<Tensor> out;
  if (!session->Run({}, {}, {"join"}, &out).ok()) std::abort();
  for (auto _ : state) {
    if (!session->Run({}, {}, {"join"}, &out).ok()) std::abort();
  }
  state.counters["nodes"] = kNodes + 2;
}

BENCHMARK(BM_ExecutorChain)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_ExecutorFanOut)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) {
  shardflow::SummaryReporter reporter;
  shardflow::RunBenchmarks(argc, argv, &reporter);
  std::printf(
      "\nExecutor overhead, %d trivial nodes per step (+Const, +fetch/target), %u hardware "
      "threads\n",
      shardflow::kNodes, std::thread::hardware_concurrency());
  std::printf("%-12s %14s %14s %10s\n", "graph", "step (us)", "us per node", "target");
  for (const char* graph : {"Chain", "FanOut"}) {
    double sec = reporter.Seconds(std::string("BM_Executor") + graph + "/real_time");
    if (sec < 0) continue;
    std::printf("%-12s %14.1f %14.3f %10s\n", graph, sec * 1e6, sec * 1e6 / (shardflow::kNodes + 2),
                "<= 0.25");
  }
  return 0;
}
