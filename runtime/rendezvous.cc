#include "runtime/rendezvous.h"

#include <vector>

namespace shardflow {

LocalRendezvous::~LocalRendezvous() {
  StartAbort(absl::CancelledError("the step's rendezvous was destroyed"));
}

void LocalRendezvous::Deliver(const RecvArgs& args, const DoneCallback& done, const Tensor& value) {
  auto received = ToReceiverMemory(value, args);
  if (received.ok()) {
    done(absl::OkStatus(), *received);
  } else {
    done(received.status(), Tensor());
  }
}

absl::Status LocalRendezvous::Send(const std::string& key, const Tensor& value) {
  Waiter waiter;
  {
    absl::MutexLock lock(&mu_);
    if (!status_.ok()) return status_;
    Slot& slot = slots_[key];
    if (slot.waiters.empty()) {
      slot.values.push_back(value);
      return absl::OkStatus();
    }
    waiter = std::move(slot.waiters.front());
    slot.waiters.pop_front();
    if (slot.waiters.empty() && slot.values.empty()) slots_.erase(key);
  }
  // Outside the lock: it may run the receiver's successors.
  Deliver(waiter.args, waiter.done, value);
  return absl::OkStatus();
}

void LocalRendezvous::RecvAsync(const std::string& key, const RecvArgs& args, DoneCallback done) {
  Tensor value;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = status_;
    if (status.ok()) {
      Slot& slot = slots_[key];
      if (slot.values.empty()) {
        slot.waiters.push_back(Waiter{args, std::move(done)});
        return;
      }
      value = std::move(slot.values.front());
      slot.values.pop_front();
      if (slot.waiters.empty() && slot.values.empty()) slots_.erase(key);
    }
  }
  if (!status.ok()) {
    done(status, Tensor());
    return;
  }
  Deliver(args, done, value);
}

void LocalRendezvous::StartAbort(const absl::Status& status) {
  std::vector<Waiter> waiters;
  std::vector<std::function<void(const absl::Status&)>> on_abort;
  absl::Status abort;
  {
    absl::MutexLock lock(&mu_);
    if (!status_.ok()) return;
    status_ = status.ok() ? absl::CancelledError("rendezvous aborted") : status;
    abort = status_;
    for (auto& [key, slot] : slots_) {
      for (auto& w : slot.waiters) waiters.push_back(std::move(w));
    }
    slots_.clear();
    on_abort.swap(on_abort_);
  }
  // Waiters get the abort status, never OK with an empty tensor.
  for (auto& w : waiters) w.done(abort, Tensor());
  for (auto& fn : on_abort) fn(abort);
}

void LocalRendezvous::OnAbort(std::function<void(const absl::Status&)> fn) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = status_;
    if (status.ok()) {
      on_abort_.push_back(std::move(fn));
      return;
    }
  }
  fn(status);
}

bool LocalRendezvous::Idle() const {
  absl::MutexLock lock(&mu_);
  return slots_.empty();
}

}  // namespace shardflow
