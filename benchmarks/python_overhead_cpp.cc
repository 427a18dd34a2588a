// The C++ side of benchmarks/python_overhead.py: Session::Run with one small feed (float [16])
// and one small fetch (x * 2), timed per call.
//
//   build/bin/python_overhead_cpp [--calls N] [--rounds R] [--threads T]
//
// Prints one line per round, "round <r> us_per_call <value>", then "median_us_per_call <value>".
// The graph and the session options match those the Python script builds, so the difference of
// the two figures is the cost of going through Python (argument conversion, NumPy wrapping, the
// GIL release, building the result list).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

int Main(int argc, char** argv) {
  int calls = 20000, rounds = 5, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({16}));
  Output y = ops::Mul(s.WithOpName("y"), x, 2.0f);
  GraphDef def;
  if (!s.ToGraphDef(&def).ok()) return 1;
  SessionOptions options;
  options.config.set_inter_op_threads(threads);
  options.config.set_intra_op_threads(threads);
  auto session = NewSession(options);
  if (!session.ok() || !(*session)->Create(def).ok()) return 1;
  Tensor feed(DT_FLOAT, TensorShape({16}));
  for (int i = 0; i < 16; ++i) feed.data<float>()[i] = static_cast<float>(i);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x:0", feed}};
  const std::vector<std::string> fetches = {y.name()};
  std::vector<Tensor> out;
  for (int i = 0; i < 1000; ++i) {  // warm up: prepare the step, fault in memory
    if (!(*session)->Run(feeds, fetches, {}, &out).ok()) return 1;
  }
  std::vector<double> per_round;
  for (int r = 0; r < rounds; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      if (!(*session)->Run(feeds, fetches, {}, &out).ok()) return 1;
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count() /
                calls;
    per_round.push_back(us);
    std::printf("round %d us_per_call %.3f\n", r, us);
  }
  if (out[0].data<float>()[3] != 6.0f) return 2;
  std::sort(per_round.begin(), per_round.end());
  std::printf("median_us_per_call %.3f\n", per_round[per_round.size() / 2]);
  return 0;
}

}  // namespace
}  // namespace shardflow

int main(int argc, char** argv) { return shardflow::Main(argc, argv); }
