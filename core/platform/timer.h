// Timer: runs callbacks at given times, on one thread of its own.
//
//   Timer timer("deadlines");
//   Timer::Id id = timer.Schedule(absl::Now() + absl::Seconds(5), [] { ... });
//   timer.Cancel(id);        // true when it had not run yet (it never will)
//
// Callbacks run one at a time on the timer's thread, in time order; keep them short (hand long
// work to another thread). A callback may call Schedule and Cancel.
//
// Thread safety: every method may be called from any thread. The destructor drops the
// callbacks still pending (they never run) and joins the thread; it must not be called from a
// callback.
#ifndef SHARDFLOW_CORE_PLATFORM_TIMER_H_
#define SHARDFLOW_CORE_PLATFORM_TIMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace shardflow {

class Timer {
 public:
  using Id = uint64_t;

  explicit Timer(std::string name);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Runs `fn` at `when` (at once, on the timer's thread, if that has passed).
  Id Schedule(absl::Time when, std::function<void()> fn);
  // True when `id` was pending and now never runs; false when it ran, runs now, or never was.
  bool Cancel(Id id);
  // Callbacks waiting to run.
  int pending() const;

 private:
  void Loop();

  const std::string name_;
  mutable absl::Mutex mu_;
  std::map<std::pair<absl::Time, Id>, std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::map<Id, absl::Time> when_ ABSL_GUARDED_BY(mu_);
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Set when the earliest callback changed or the timer stops; the loop re-reads the queue.
  bool changed_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_PLATFORM_TIMER_H_
