// Note [absl's deadlock detection]
// Debian builds Abseil without NDEBUG, so every absl::Mutex runs the debug build's lock-order
// check: a process-wide graph of mutexes and the locks each thread holds, updated under a
// global lock on every Lock and on every Mutex's destruction. Measured in a release build of
// shardflow (AMD EPYC, 2 vCPUs, 2026-11-29, alternating runs): the fixed cost of a session Run
// whose graph the optimizer folds to a few nodes went from 0.93-1.39 to 0.62-1.06 us without
// it, and GraphCycles::GetId was 0.25-0.35% of the CPU of a distributed CNN step; the
// executor's cost per node did not move (0.046 us either way). A release build (NDEBUG) turns
// the check off when libshardflow loads, as Abseil's own release builds have it;
// SHARDFLOW_MUTEX_DEADLOCK_DETECTION=1 keeps it (ctest sets it for every test, so a lock-order
// inversion still aborts in CI), and a debug build keeps it always.
#include <cstdlib>
#include <cstring>

#include "absl/synchronization/mutex.h"

namespace shardflow {
namespace {

[[maybe_unused]] const bool kMutexChecksSet = [] {
#ifdef NDEBUG
  const char* keep = std::getenv("SHARDFLOW_MUTEX_DEADLOCK_DETECTION");
  if (keep == nullptr || std::strcmp(keep, "1") != 0) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
#endif
  return true;
}();

}  // namespace
}  // namespace shardflow
