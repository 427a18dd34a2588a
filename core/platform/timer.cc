#include "core/platform/timer.h"

#include <vector>

namespace shardflow {

Timer::Timer(std::string name) : name_(std::move(name)), thread_([this] { Loop(); }) {}

Timer::~Timer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    changed_ = true;
  }
  thread_.join();
}

Timer::Id Timer::Schedule(absl::Time when, std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  const Id id = next_id_++;
  if (queue_.empty() || when < queue_.begin()->first.first) changed_ = true;
  queue_.emplace(std::make_pair(when, id), std::move(fn));
  when_[id] = when;
  return id;
}

bool Timer::Cancel(Id id) {
  absl::MutexLock lock(&mu_);
  auto it = when_.find(id);
  if (it == when_.end()) return false;
  queue_.erase({it->second, id});
  when_.erase(it);
  return true;
}

int Timer::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

void Timer::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const absl::Time next = queue_.empty() ? absl::InfiniteFuture() : queue_.begin()->first.first;
    if (next > absl::Now()) {
      changed_ = false;
      mu_.AwaitWithDeadline(absl::Condition(&changed_), next);
      continue;
    }
    // Due: run it without the lock, so that it may schedule or cancel.
    std::function<void()> fn = std::move(queue_.begin()->second);
    when_.erase(queue_.begin()->first.second);
    queue_.erase(queue_.begin());
    mu_.Unlock();
    fn();
    mu_.Lock();
  }
}

}  // namespace shardflow
