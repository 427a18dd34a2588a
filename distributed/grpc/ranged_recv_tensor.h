// RangedRecvTensorServer: the serving side of ranged RecvTensor calls (Note [Ranged RecvTensor]
// in ranged_recv_tensor.cc), for one Worker. The worker hands a tensor over whole
// (Worker::RecvTensorAsync); this keeps it while a peer pulls it range by range.
//
//   RangedRecvTensorServer ranged(worker, /*idle_timeout=*/absl::Seconds(60));
//   ranged.Serve(step_id, key, {offset, length}, [](absl::Status s, Tensor t, ByteRange r) {
//     ... reply with bytes [r.offset, r.offset + r.length) of t (length 0: all of t) ...
//   });
//   ranged.DropStep(step_id, status);       // the step was aborted: its kept tensors go
//   ranged.CollectGarbage(absl::Now());     // pulls abandoned part-way go, their steps abort
//
// Thread safety: every method may be called from any thread.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_RANGED_RECV_TENSOR_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_RANGED_RECV_TENSOR_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/framework/tensor.h"
#include "distributed/worker.h"

namespace shardflow {

class RangedRecvTensorServer {
 public:
  // A byte range of a served tensor. length 0 = the whole tensor.
  struct ByteRange {
    int64_t offset = 0;
    int64_t length = 0;
  };
  // `range` is what to send of `tensor`: length 0 = all of it (the tensor is small enough, a
  // DT_STRING, or the request asked for all of it), else a range inside it.
  using RangeCallback =
      std::function<void(const absl::Status&, const Tensor&, const ByteRange& range)>;

  // `worker` is borrowed and must outlive this. `idle_timeout`: a kept tensor no range was
  // pulled of for this long is dropped by CollectGarbage (zero = never).
  RangedRecvTensorServer(Worker* worker, absl::Duration idle_timeout);

  // Serves bytes [range.offset, range.offset + range.length) of the tensor a local _Send left
  // under `key` in step `step_id`, cut at its end (length 0 = all of it, as
  // Worker::RecvTensorAsync). `done` gets the tensor and the range to send: the whole tensor
  // when the range covers it or the tensor is DT_STRING. Errors, besides RecvTensorAsync's:
  // INVALID_ARGUMENT for a range that starts outside the tensor or overlaps bytes already
  // served (the tensor stays for the ranges still to come); the status the step was aborted or
  // abandoned with.
  void Serve(int64_t step_id, const std::string& key, ByteRange range, RangeCallback done);

  // Drops the tensors kept for step `step_id`; a later range of them gets `status`.
  void DropStep(int64_t step_id, const absl::Status& status);

  // Drops tensors no range was pulled of for the idle timeout as of `now`, and aborts their
  // steps on the worker (the receiver is gone).
  void CollectGarbage(absl::Time now);

  // Tensors kept for ranged transfers.
  int num_kept() const;

 private:
  using Key = std::pair<int64_t, std::string>;  // step id, rendezvous key
  // A tensor taken from the worker by a ranged RecvTensor, kept until all of it is served.
  struct Kept {
    Tensor tensor;
    std::map<int64_t, int64_t> served;  // offset -> end of every range served so far
    int64_t bytes_left = 0;
    absl::Time last_pulled;
  };

  // Serves `range` of `kept` (cut at its end); erases it when all bytes are served.
  absl::Status ServeLocked(const Key& key, Kept* kept, ByteRange* range)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RememberDroppedLocked(const Key& key, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Worker* const worker_;
  const absl::Duration idle_timeout_;
  mutable absl::Mutex mu_;
  std::map<Key, Kept> kept_ ABSL_GUARDED_BY(mu_);
  // Transfers dropped lately, with why: a late range gets that instead of "no such tensor".
  std::map<Key, absl::Status> dropped_ ABSL_GUARDED_BY(mu_);
  std::deque<Key> dropped_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_RANGED_RECV_TENSOR_H_
