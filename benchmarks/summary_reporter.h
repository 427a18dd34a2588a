// A Google Benchmark console reporter that also keeps each run's mean real time, so a
// benchmark's main() can print a side-by-side table (ratios measured in the same process run).
#ifndef SHARDFLOW_BENCHMARKS_SUMMARY_REPORTER_H_
#define SHARDFLOW_BENCHMARKS_SUMMARY_REPORTER_H_

#include <map>
#include <string>

#include "benchmark/benchmark.h"

namespace shardflow {

class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && r.iterations > 0) {
        seconds_[r.benchmark_name()] = r.real_accumulated_time / static_cast<double>(r.iterations);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  // Mean wall seconds per iteration of the named benchmark ("BM_Foo/1024"), or -1.
  double Seconds(const std::string& name) const {
    auto it = seconds_.find(name);
    return it == seconds_.end() ? -1 : it->second;
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_BENCHMARKS_SUMMARY_REPORTER_H_
