#include "runtime/step_stats_collector.h"

#include <chrono>

namespace shardflow {

void StepStatsCollector::Record(const std::string& device, NodeExecStats stats) {
  absl::MutexLock lock(&mu_);
  DeviceStepStats& d = by_device_[device];
  if (d.device().empty()) d.set_device(device);
  *d.add_node_stats() = std::move(stats);
}

void StepStatsCollector::Finalize(StepStats* out) {
  absl::MutexLock lock(&mu_);
  for (auto& [_, d] : by_device_) *out->add_dev_stats() = std::move(d);
  by_device_.clear();
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace shardflow
