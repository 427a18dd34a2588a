// Model parallelism on one host: two independent towers of large matmuls joined at the end, on
// one CPU device with one thread vs two CPU devices with one thread each (towers placed
// explicitly, one per device; the cost-based placer is not built yet).
//
//   build/bin/towers_benchmark
//
// Issue 4's target (with the cost policy choosing the placement): >= 1.7x on two devices.
#include <cstdio>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/summary_reporter.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

constexpr int kDim = 768;
constexpr int kDepth = 6;

void BM_Towers(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  Scope s = Scope::NewRootScope();
  Tensor w(DT_FLOAT, TensorShape({kDim, kDim}));
  for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] = (i % 17) * 1e-3f;
  std::vector<Output> tops;
  for (int t = 0; t < 2; ++t) {
    Scope ts = s.WithDevice(devices == 2 ? "/device:CPU:" + std::to_string(t) : "");
    Output x = ops::Const(ts, w);
    for (int d = 0; d < kDepth; ++d) x = ops::MatMul(ts, x, ops::Const(ts, w));
    tops.push_back(x);
  }
  Output join = ops::Add(s.WithOpName("join"), tops[0], tops[1]);
  GraphDef def;
  if (!s.ToGraphDef(&def).ok()) std::abort();
  SessionOptions options;
  options.config.set_cpu_device_count(devices);
  options.config.set_intra_op_threads(1);
  options.config.set_inter_op_threads(1);
  auto session = NewSession(options);
  if (!session.ok() || !(*session)->Create(def).ok()) std::abort();
  std::vector<Tensor> out;
  if (!(*session)->Run({}, {join.name()}, {}, &out).ok()) std::abort();
  for (auto _ : state) {
    if (!(*session)->Run({}, {join.name()}, {}, &out).ok()) std::abort();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kDepth * 2 * kDim * double(kDim) * kDim * state.iterations() / 1e9,
                         benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Towers)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) {
  shardflow::SummaryReporter reporter;
  shardflow::RunBenchmarks(argc, argv, &reporter);
  double one = reporter.Seconds("BM_Towers/1/real_time");
  double two = reporter.Seconds("BM_Towers/2/real_time");
  if (one > 0 && two > 0) {
    std::printf(
        "\ntwo towers of %d matmuls (%dx%d), 1 thread per device: 1 device %.1f ms, "
        "2 devices %.1f ms, speed-up %.2fx (target with the cost policy: >= 1.7x)\n",
        shardflow::kDepth, shardflow::kDim, shardflow::kDim, one * 1e3, two * 1e3, one / two);
  }
  return 0;
}
