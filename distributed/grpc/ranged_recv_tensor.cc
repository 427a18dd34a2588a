#include "distributed/grpc/ranged_recv_tensor.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace shardflow {
namespace {

// Recently dropped transfers remembered for late ranges.
constexpr size_t kDroppedKept = 4096;

}  // namespace

// Note [Ranged RecvTensor]
// A unary reply reaches the receiver whole, so its copy into the destination tensor (~20% of a
// 64 MB call on loopback) cannot start before the last byte has arrived. A receiver therefore
// pulls a large tensor as byte ranges, a few calls in flight at once, and copies each range
// while the next ones are still on the wire (GrpcWorkerClient::RecvTensorAsync). The first
// ranged call takes the tensor from the worker as a whole call would; the tensor then waits
// here for the other ranges. Each byte is served at most once, so the server knows when the
// last range has gone and drops the tensor without the receiver having to say so; a range that
// overlaps one already served is an error (a confused or hostile peer), as is one outside the
// tensor. Aborting the step drops its tensors at once (the worker tells DropStep), and a tensor
// whose receiver stopped pulling part-way is dropped after the idle timeout, its step aborted.
// The ranges are a property of the gRPC transport (its messages are unary); the worker knows
// nothing of them.
RangedRecvTensorServer::RangedRecvTensorServer(Worker* worker, absl::Duration idle_timeout)
    : worker_(worker), idle_timeout_(idle_timeout) {}

absl::Status RangedRecvTensorServer::ServeLocked(const Key& key, Kept* kept, ByteRange* range) {
  const int64_t total = static_cast<int64_t>(kept->tensor.TotalBytes());
  if (range->offset >= 0 && range->offset < total) {
    range->length = std::min(range->length, total - range->offset);
  }
  if (range->offset < 0 || range->offset >= total || range->length <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor of '", key.second, "' on task ", worker_->task(),
                     ": byte range starting at ", range->offset, " (length ", range->length,
                     ") is not inside the tensor's ", total, " bytes"));
  }
  const int64_t end = range->offset + range->length;
  auto next = kept->served.upper_bound(range->offset);
  const bool overlaps_before =
      next != kept->served.begin() && std::prev(next)->second > range->offset;
  const bool overlaps_after = next != kept->served.end() && next->first < end;
  if (overlaps_before || overlaps_after) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecvTensor of '", key.second, "' on task ", worker_->task(), ": bytes [",
                     range->offset, ", ", end, ") were already served, in part or whole"));
  }
  kept->served[range->offset] = end;
  kept->bytes_left -= range->length;
  kept->last_pulled = absl::Now();
  // The reply holds its own reference to the tensor until gRPC has written it out.
  if (kept->bytes_left == 0) kept_.erase(key);
  return absl::OkStatus();
}

void RangedRecvTensorServer::Serve(int64_t step_id, const std::string& key, ByteRange range,
                                   RangeCallback done) {
  if (range.offset < 0 || range.length < 0 || (range.length == 0 && range.offset != 0)) {
    done(absl::InvalidArgumentError(absl::StrCat(
             "RecvTensor of '", key, "': byte range offset ", range.offset, " length ",
             range.length, " is invalid (length 0 asks for the whole tensor, at offset 0)")),
         Tensor(), range);
    return;
  }
  const Key k(step_id, key);
  if (range.length > 0) {
    absl::Status status;
    Tensor tensor;
    bool handled = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = kept_.find(k);
      if (it != kept_.end()) {
        handled = true;
        status = worker_->StepStatus(step_id);
        if (!status.ok()) {
          kept_.erase(it);
          RememberDroppedLocked(k, status);
        } else {
          tensor = it->second.tensor;
          status = ServeLocked(k, &it->second, &range);
        }
      } else if (auto dropped = dropped_.find(k); dropped != dropped_.end()) {
        handled = true;
        status = dropped->second;
      }
    }
    if (handled) {
      done(status, status.ok() ? tensor : Tensor(), range);
      return;
    }
  }
  worker_->RecvTensorAsync(
      step_id, key,
      [this, k, range, done = std::move(done)](const absl::Status& s, const Tensor& t) mutable {
        const int64_t total = s.ok() ? static_cast<int64_t>(t.TotalBytes()) : 0;
        if (!s.ok() || t.dtype() == DT_STRING || range.length == 0 ||
            (range.offset == 0 && range.length >= total)) {
          done(s, t, ByteRange());  // the whole tensor
          return;
        }
        absl::Status status;
        {
          absl::MutexLock lock(&mu_);
          Kept& kept = kept_[k];
          kept.tensor = t;
          kept.bytes_left = total;
          status = ServeLocked(k, &kept, &range);
          if (!status.ok() && kept.served.empty()) kept_.erase(k);
        }
        done(status, status.ok() ? t : Tensor(), range);
      });
}

void RangedRecvTensorServer::RememberDroppedLocked(const Key& key, const absl::Status& status) {
  if (dropped_.emplace(key, status).second) dropped_order_.push_back(key);
  while (dropped_order_.size() > kDroppedKept) {
    dropped_.erase(dropped_order_.front());
    dropped_order_.pop_front();
  }
}

void RangedRecvTensorServer::DropStep(int64_t step_id, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  for (auto it = kept_.lower_bound(Key(step_id, ""));
       it != kept_.end() && it->first.first == step_id;) {
    RememberDroppedLocked(it->first, status);
    it = kept_.erase(it);
  }
}

void RangedRecvTensorServer::CollectGarbage(absl::Time now) {
  if (idle_timeout_ <= absl::ZeroDuration()) return;
  std::vector<std::pair<int64_t, absl::Status>> abandoned;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = kept_.begin(); it != kept_.end();) {
      const absl::Duration idle = now - it->second.last_pulled;
      if (idle <= idle_timeout_) {
        ++it;
        continue;
      }
      absl::Status status = absl::AbortedError(
          absl::StrCat("step ", it->first.first, " on task ", worker_->task(),
                       " was abandoned: a ranged RecvTensor stopped part-way ",
                       absl::FormatDuration(idle), " ago; its tensor was freed"));
      LOG(INFO) << worker_->task() << ": " << status.message();
      RememberDroppedLocked(it->first, status);
      abandoned.emplace_back(it->first.first, status);
      it = kept_.erase(it);
    }
  }
  for (const auto& [step_id, status] : abandoned) worker_->AbortStep(step_id, status);
}

int RangedRecvTensorServer::num_kept() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(kept_.size());
}

}  // namespace shardflow
