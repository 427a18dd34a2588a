// TensorTransport: how a worker fetches a tensor from another task's worker.
//
// The remote rendezvous (distributed/remote_rendezvous.h) sits on top of this interface and
// knows nothing of the wire; gRPC is one implementation (distributed/grpc/grpc_transport.h), an
// RDMA one can be added beside it without touching the rendezvous, the executor or the master.
//
// Pull model: the receiver asks the task that produced the tensor, by step and rendezvous key;
// the serving worker answers once its local _Send has run (or with the step's abort status).
//
//   CallCancellation cancel;
//   transport->RecvTensorAsync({task, address, step_id, key, allocator}, &cancel,
//                              [](const absl::Status& s, Tensor t) { ... });
//   cancel.Cancel();   // e.g. when the step aborts: `done` then gets CANCELLED (once)
//
// Thread safety: every method may be called from any thread.
#ifndef SHARDFLOW_DISTRIBUTED_TRANSPORT_H_
#define SHARDFLOW_DISTRIBUTED_TRANSPORT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/allocator.h"
#include "core/framework/tensor.h"

namespace shardflow {

// Lets the owner of an in-flight call end it early. The transport installs a hook with
// SetCancelHook; Cancel runs it once (at once if installed after Cancel).
class CallCancellation {
 public:
  void Cancel() {
    std::function<void()> hook;
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return;
      cancelled_ = true;
      hook = std::move(hook_);
    }
    if (hook) hook();
  }
  // Replaces the hook; runs it right away when Cancel was already called.
  void SetCancelHook(std::function<void()> hook) {
    {
      absl::MutexLock lock(&mu_);
      if (!cancelled_) {
        hook_ = std::move(hook);
        return;
      }
    }
    hook();
  }
  void ClearCancelHook() {
    absl::MutexLock lock(&mu_);
    hook_ = nullptr;
  }
  bool cancelled() const {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
};

struct RecvTensorCall {
  std::string task;     // "/job:J/replica:0/task:T", for error messages
  std::string address;  // where that task's worker listens ("host:port")
  int64_t step_id = 0;
  std::string key;  // rendezvous key (core/framework/rendezvous.h)
  // Where the received tensor's memory comes from (the receiving device's); borrowed.
  Allocator* allocator = nullptr;  // null = CpuAllocator()
  // Optional: host memory to decode into when dtype and shape match (RecvArgs::destination).
  Tensor destination;
};

class TensorTransport {
 public:
  using RecvDone = std::function<void(const absl::Status&, Tensor)>;
  virtual ~TensorTransport() = default;

  // Fetches the tensor `call.key` of step `call.step_id` from `call.task`. `done` is called
  // exactly once, possibly on another thread: with the tensor, with the serving side's error
  // (the step's abort status, a stale incarnation), with UNAVAILABLE naming the task when it
  // cannot be reached, or with CANCELLED after `cancel->Cancel()`. `cancel` (may be null) is
  // borrowed and must outlive the call.
  virtual void RecvTensorAsync(const RecvTensorCall& call, CallCancellation* cancel,
                               RecvDone done) = 0;

  // The data plane this task also serves tensors on ("ucx") and its address there, published in
  // GetStatus so that peers pull over it; "" for a transport that uses the gRPC connection only.
  virtual std::string data_plane() const { return ""; }
  virtual std::string data_plane_address() const { return ""; }
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_TRANSPORT_H_
