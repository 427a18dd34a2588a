// ThreadPool: a fixed set of worker threads, plus ParallelFor for intra-op parallelism.
//
//   ThreadPool pool("intra", 2);
//   pool.Schedule([] { ... });
//   pool.ParallelFor(n, /*cost_per_unit_ns=*/5, [&](int64_t begin, int64_t end) { ... });
//
// ParallelFor never waits on work that no thread has started: the calling thread claims chunks
// itself, so it is safe to call from one of the pool's own threads, and with every worker busy it
// degrades to a serial loop instead of deadlocking.
//
// Thread safety: every method may be called from any thread. The destructor runs the tasks
// already scheduled, then joins the workers.
#ifndef SHARDFLOW_CORE_PLATFORM_THREADPOOL_H_
#define SHARDFLOW_CORE_PLATFORM_THREADPOOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace shardflow {

class ThreadPool {
 public:
  // `thread_init` runs once on each worker before it takes tasks (e.g. to set OpenMP threads).
  ThreadPool(std::string name, int num_threads, std::function<void()> thread_init = nullptr);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> fn);
  int NumThreads() const { return static_cast<int>(workers_.size()); }
  // Calls fn(begin, end) on disjoint ranges covering [0, total). Splits only when the work is
  // worth it: total * cost_per_unit_ns above ~20 µs per extra thread.
  void ParallelFor(int64_t total, int64_t cost_per_unit_ns,
                   const std::function<void(int64_t, int64_t)>& fn);
  const std::string& name() const { return name_; }

 private:
  void WorkerLoop();

  const std::string name_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> thread_init_;
  std::vector<std::thread> workers_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_PLATFORM_THREADPOOL_H_
