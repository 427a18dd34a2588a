#include "core/platform/threadpool.h"

#include <algorithm>
#include <atomic>
#include <memory>

namespace shardflow {

ThreadPool::ThreadPool(std::string name, int num_threads, std::function<void()> thread_init)
    : name_(std::move(name)), thread_init_(std::move(thread_init)) {
  for (int i = 0; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : workers_) t.join();
}

void ThreadPool::Schedule(std::function<void()> fn) {
  if (workers_.empty()) {
    fn();
    return;
  }
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(fn));
}

void ThreadPool::WorkerLoop() {
  if (thread_init_) thread_init_();
  auto has_work = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !tasks_.empty() || stopping_; };
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&has_work));
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

namespace {
struct ParallelForState {
  std::function<void(int64_t, int64_t)> fn;
  int64_t total = 0;
  int64_t chunk = 0;
  int64_t num_chunks = 0;
  std::atomic<int64_t> next{0};
  absl::Mutex mu;
  int64_t finished ABSL_GUARDED_BY(mu) = 0;

  // Claims and runs chunks until none are left.
  void Drain() {
    int64_t done_here = 0;
    for (int64_t c = next.fetch_add(1); c < num_chunks; c = next.fetch_add(1)) {
      int64_t begin = c * chunk;
      fn(begin, std::min(total, begin + chunk));
      ++done_here;
    }
    if (done_here > 0) {
      absl::MutexLock lock(&mu);
      finished += done_here;
    }
  }

  // True once every chunk has run; the condition ParallelFor awaits.
  bool AllDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return finished == num_chunks; }
};
}  // namespace

void ThreadPool::ParallelFor(int64_t total, int64_t cost_per_unit_ns,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (total <= 0) return;
  constexpr int64_t kMinShardNs = 20000;
  int64_t max_shards = static_cast<int64_t>(workers_.size()) + 1;
  int64_t by_cost =
      std::max<int64_t>(1, total * std::max<int64_t>(cost_per_unit_ns, 1) / kMinShardNs);
  int64_t shards = std::min({max_shards, by_cost, total});
  if (shards <= 1) {
    fn(0, total);
    return;
  }
  // A few chunks per shard balance uneven progress between threads.
  auto state = std::make_shared<ParallelForState>();
  state->fn = fn;
  state->total = total;
  int64_t num_chunks = std::min<int64_t>(total, shards * 4);
  state->chunk = (total + num_chunks - 1) / num_chunks;
  state->num_chunks = (total + state->chunk - 1) / state->chunk;
  for (int64_t i = 0; i < shards - 1; ++i) Schedule([state] { state->Drain(); });
  state->Drain();
  absl::MutexLock lock(&state->mu);
  state->mu.Await(absl::Condition(state.get(), &ParallelForState::AllDone));
}

}  // namespace shardflow
