// A Google Benchmark console reporter that also keeps every repetition's mean real time, so a
// benchmark's main() can print a side-by-side table of medians (ratios measured in the same
// process run). Run with --benchmark_repetitions=N --benchmark_enable_random_interleaving=true
// so that both sides of a ratio see the same machine noise.
#ifndef SHARDFLOW_BENCHMARKS_SUMMARY_REPORTER_H_
#define SHARDFLOW_BENCHMARKS_SUMMARY_REPORTER_H_

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace shardflow {

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && r.iterations > 0) {
        std::string name = r.run_name.str();
        seconds_[name].push_back(r.real_accumulated_time / static_cast<double>(r.iterations));
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // Median over repetitions of the wall seconds per iteration of the named benchmark
  // ("BM_Foo/1024/real_time"), or -1 when it did not run.
  double Seconds(const std::string& name) const {
    auto it = seconds_.find(name);
    if (it == seconds_.end() || it->second.empty()) return -1;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
  int Repetitions(const std::string& name) const {
    auto it = seconds_.find(name);
    return it == seconds_.end() ? 0 : static_cast<int>(it->second.size());
  }

 private:
  std::map<std::string, std::vector<double>> seconds_;
};

// Runs the registered benchmarks with this project's defaults — 5 repetitions in random order
// (flags on the command line override them) — reporting through `reporter`.
inline void RunBenchmarks(int argc, char** argv, SummaryReporter* reporter) {
  std::vector<char*> args(argv, argv + argc);
  static std::string reps = "--benchmark_repetitions=5";
  static std::string interleave = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, {reps.data(), interleave.data()});
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  benchmark::RunSpecifiedBenchmarks(reporter);
}

}  // namespace shardflow

#endif  // SHARDFLOW_BENCHMARKS_SUMMARY_REPORTER_H_
