// StepStatsCollector: gathers the NodeExecStats of one step, per device.
//
// Thread safety: Record may be called from any thread.
#ifndef SHARDFLOW_RUNTIME_STEP_STATS_COLLECTOR_H_
#define SHARDFLOW_RUNTIME_STEP_STATS_COLLECTOR_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/protos/step_stats.pb.h"

namespace shardflow {

class StepStatsCollector {
 public:
  void Record(const std::string& device, NodeExecStats stats);
  // Moves everything gathered into `out` (appending one DeviceStepStats per device).
  void Finalize(StepStats* out);

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, DeviceStepStats> by_device_ ABSL_GUARDED_BY(mu_);
};

// Microseconds since the Unix epoch.
int64_t NowMicros();

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_STEP_STATS_COLLECTOR_H_
