// UcxEngine: the UCP context, worker and progress thread of one task, and the wire protocol of
// the "ucx" data plane (Note [UCX data plane] in ucx_data_plane.h). Internal to distributed/ucx/:
// ucx_data_plane.cc builds the TensorTransport (peers, addresses, fallback to gRPC) on top of it.
#ifndef SHARDFLOW_DISTRIBUTED_UCX_UCX_ENGINE_H_
#define SHARDFLOW_DISTRIBUTED_UCX_UCX_ENGINE_H_

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/tensor.h"
#include "distributed/data_plane.h"
#include "distributed/transport.h"

namespace shardflow {

class Worker;

namespace ucx_detail {
struct RequestHeader;  // the wire header of a request or cancel (ucx_engine.cc)
// Polling after the last activity before the progress thread sleeps (SHARDFLOW_UCX_SPIN_US). A
// thread that pulls polls for its answer for a quarter of it (Note [UCX data plane]: threads).
constexpr int64_t kDefaultSpinUs = 200;
}  // namespace ucx_detail

// The UCP context, worker and progress thread of one task (Note [UCX data plane]). Everything
// that touches UCX, and the maps below, runs with the worker held (worker_mu_): on the progress
// thread, or on a thread that took the worker to send and poll itself.
class UcxEngine : public std::enable_shared_from_this<UcxEngine> {
 public:
  using Done = TensorTransport::RecvDone;

  static absl::StatusOr<std::shared_ptr<UcxEngine>> Create(const DataPlaneOptions& options);
  ~UcxEngine();

  const std::string& address() const { return address_; }
  const std::string& task() const { return task_; }

  // Runs `fn` with the worker held: here when this thread holds it or can take it within
  // kTakeWorker, else queued for the progress thread. After Stop, dropped.
  void Run(std::function<void()> fn);
  // Pull(), and then this thread polls for the answer for up to caller_poll_ (the done callback
  // then runs here, after the worker is released); past that the progress thread takes over.
  void PullHere(uint64_t ep_id, const RecvTensorCall& call, CallCancellation* cancel, Done done);
  // Ends the progress thread: pending pulls fail UNAVAILABLE, endpoints close. Idempotent.
  void Stop();

  // With the worker held ------------------------------------------------------------------
  // Connects to a peer's worker address; returns the endpoint's id.
  // `same_host`: the peer runs on this machine (Note [UCX data plane]: error-handling mode).
  absl::StatusOr<uint64_t> Connect(const std::string& peer_task, const std::string& peer_address,
                                   bool same_host);
  bool Alive(uint64_t ep_id) const { return eps_.count(ep_id) != 0; }
  // Closes the endpoint to a peer that is gone (restarted: a new incarnation at its address);
  // its pending pulls fail with `why`. The data plane is not told (it asked).
  void Disconnect(uint64_t ep_id, const absl::Status& why) { CloseEndpoint(ep_id, why, false); }
  // Pulls call.key from the peer at `ep_id`.
  void Pull(uint64_t ep_id, const RecvTensorCall& call, CallCancellation* cancel, Done done);
  void set_serving(Worker* worker) { serving_ = worker; }
  // Told (with the worker held) when an endpoint fails: the data plane forgets the peer.
  void set_on_peer_lost(std::function<void(const std::string& peer_task)> f) {
    on_peer_lost_ = std::move(f);
  }

 private:
  using RequestHeader = ucx_detail::RequestHeader;
  struct Endpoint {
    ucp_ep_h ep;
    std::string task;
  };
  struct Pending {
    uint64_t ep_id = 0;
    RecvTensorCall call;
    CallCancellation* cancel = nullptr;
    Done done;
    bool receiving = false;  // a rendezvous receive into `tensor` is in flight
    bool finished = false;   // `done` has run (cancelled while receiving)
    ucs_status_ptr_t recv_request = nullptr;
    Tensor tensor;
    std::string staging;  // DT_STRING values
  };
  // Held by UCX until a send completes: what the send reads.
  struct SendContext {
    std::weak_ptr<UcxEngine> engine;
    uint64_t pending_id = 0;  // a request's pull, failed if the send fails; 0 for replies
    std::string header;
    std::string key;
    Tensor tensor;
    std::string payload;
  };
  struct RecvContext {
    UcxEngine* engine;
    uint64_t id;
  };

  explicit UcxEngine(const DataPlaneOptions& options)
      : task_(options.task), token_(options.token), same_host_only_(options.same_host_only) {}
  // The header of a request or cancel: id, step, this task's token.
  std::string RequestHeaderBytes(uint64_t id, int64_t step_id) const;
  // Parses a request's or cancel's header and checks its token; false = drop it, with *why set
  // when the sender should be told.
  bool ParseRequestHeader(const void* header, size_t header_length, RequestHeader* h,
                          absl::Status* why) const;
  absl::Status Init();
  void Loop();
  bool HoldsWorker() const {
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  // Takes worker_mu_ from another thread than the progress thread, waiting at most kTakeWorker;
  // false = busy (the caller queues instead).
  bool TryTakeWorker(std::unique_lock<std::mutex>* lock);
  // Releases it; `wake`: the progress thread goes on with what this thread started.
  void ReleaseWorker(std::unique_lock<std::mutex>* lock, bool wake);
  bool Stopped() {
    absl::MutexLock l(&mu_);
    return stopped_;
  }

  // AM handlers (with the worker held).
  static ucs_status_t OnRequest(void* arg, const void* header, size_t header_length, void* data,
                                size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t OnReply(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param);
  static ucs_status_t OnCancel(void* arg, const void* header, size_t header_length, void* data,
                               size_t length, const ucp_am_recv_param_t* param);
  static void OnEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void OnSent(void* request, ucs_status_t status, void* user_data);
  static void OnReceived(void* request, ucs_status_t status, size_t length, void* user_data);

  ucs_status_t HandleReply(const void* header, size_t header_length, void* data, size_t length,
                           const ucp_am_recv_param_t* param);
  void SendReply(ucp_ep_h ep, uint64_t id, const absl::Status& status, const Tensor& tensor);
  // Sends on `ep`; `ctx` is freed when the send completes (or fails).
  void Send(ucp_ep_h ep, unsigned am, std::unique_ptr<SendContext> ctx, const void* data,
            size_t length, uint32_t flags);
  // Runs the pull's `done` once and forgets it (unless a receive still writes into its tensor).
  void Finish(uint64_t id, const absl::Status& status);
  void Cancel(uint64_t id);
  void CloseEndpoint(uint64_t ep_id, const absl::Status& why, bool tell_peer_lost = true);

  const std::string task_;
  const std::string token_;
  const bool same_host_only_;  // DataPlaneOptions::same_host_only
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  size_t max_am_header_ = 0;
  std::chrono::microseconds spin_{ucx_detail::kDefaultSpinUs};
  std::chrono::microseconds caller_poll_{ucx_detail::kDefaultSpinUs / 4};
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  std::thread thread_;

  // Held by whoever touches UCX or the maps below; owner_ names that thread (Run from inside a
  // callback runs inline). wanted_ counts threads waiting to take it: the progress thread leaves
  // it to them between its passes.
  std::mutex worker_mu_;
  std::atomic<std::thread::id> owner_{};
  std::atomic<int> wanted_{0};

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool sleeping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;

  // With the worker held.
  uint64_t next_id_ = 1;
  std::map<uint64_t, Endpoint> eps_;
  std::map<ucp_ep_h, uint64_t> ep_ids_;
  std::map<uint64_t, Pending> pending_;
  Worker* serving_ = nullptr;
  // The pulls this task is answering, by (the peer's reply endpoint, its request id) -> step: a
  // cancel aborts a step only when the same peer asked for one of its tensors.
  std::map<std::pair<ucp_ep_h, uint64_t>, int64_t> answering_;
  bool down_ = false;  // stopping: new pulls fail at once
  std::function<void(const std::string&)> on_peer_lost_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_UCX_UCX_ENGINE_H_
