// MatMul through a session vs oneDNN's dnnl_sgemm called directly, fp32, n x n x n, in GFLOP/s.
//
//   build/bin/matmul_benchmark
//
// Both sides use the same thread budget (the session's intra-op threads = hardware threads;
// OpenMP for dnnl_sgemm is set to the same number). Target (issue 2): session >= 95% of
// dnnl_sgemm at n = 1024 and 2048.
#include <omp.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/summary_reporter.h"
#include "oneapi/dnnl/dnnl.h"
#include "ops/ops.h"
#include "runtime/device.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

Tensor RandomMatrix(int64_t n, int seed) {
  Tensor t(DT_FLOAT, TensorShape({n, n}));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < n * n; ++i) t.data<float>()[i] = dist(gen);
  return t;
}

void SetFlops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

void BM_SessionMatMul(benchmark::State& state) {
  int64_t n = state.range(0);
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithOpName("a"), DT_FLOAT, TensorShape({n, n}));
  auto b = ops::Placeholder(s.WithOpName("b"), DT_FLOAT, TensorShape({n, n}));
  auto c = ops::MatMul(s.WithOpName("c"), a, b);
  GraphDef def;
  if (!s.ToGraphDef(&def).ok()) std::abort();
  auto session = NewSession(SessionOptions());
  if (!session.ok() || !(*session)->Create(def).ok()) std::abort();
  std::vector<std::pair<std::string, Tensor>> feeds = {{"a", RandomMatrix(n, 1)},
                                                       {"b", RandomMatrix(n, 2)}};
  std::vector<Tensor> out;
  if (!(*session)->Run(feeds, {"c"}, {}, &out).ok()) std::abort();
  for (auto _ : state) {
    out.clear();
    if (!(*session)->Run(feeds, {"c"}, {}, &out).ok()) std::abort();
  }
  SetFlops(state, n);
}

void BM_DnnlSgemm(benchmark::State& state) {
  int64_t n = state.range(0);
  omp_set_num_threads(NumHardwareThreads());
  Tensor a = RandomMatrix(n, 1), b = RandomMatrix(n, 2), c(DT_FLOAT, TensorShape({n, n}));
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data<float>(), n, b.data<float>(), n, 0.0f,
               c.data<float>(), n);
  }
  SetFlops(state, n);
}

BENCHMARK(BM_SessionMatMul)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DnnlSgemm)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) {
  shardflow::SummaryReporter reporter;
  shardflow::RunBenchmarks(argc, argv, &reporter);
  std::printf("\nfp32 MatMul n x n x n, %d threads: session vs dnnl_sgemm (same process run)\n",
              shardflow::NumHardwareThreads());
  std::printf("%6s %18s %18s %8s %8s\n", "n", "session GFLOP/s", "dnnl_sgemm GFLOP/s", "ratio",
              "target");
  for (int n : {256, 1024, 2048}) {
    double s = reporter.Seconds("BM_SessionMatMul/" + std::to_string(n) + "/real_time");
    double d = reporter.Seconds("BM_DnnlSgemm/" + std::to_string(n) + "/real_time");
    if (s <= 0 || d <= 0) continue;
    double flops = 2.0 * n * n * n;
    std::printf("%6d %18.1f %18.1f %7.1f%% %8s\n", n, flops / s / 1e9, flops / d / 1e9, 100 * d / s,
                n >= 1024 ? ">= 95%" : "-");
  }
  return 0;
}
