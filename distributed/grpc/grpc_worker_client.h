// GrpcWorkerClient: the master's and the transport's handle on one task's WorkerService.
//
//   GrpcClientOptions options;                      // TLS, token, control-call deadline
//   GrpcWorkerCache cache(options);                 // one channel per address, shared
//   SF_ASSIGN_OR_RETURN(auto client, cache.GetClient("10.0.0.2:2222", "/job:worker/.../task:1"));
//   GetStatusResponse status;
//   SF_RETURN_IF_ERROR(client->GetStatus(&status));  // devices + incarnation
//   client->RunGraphAsync(&req, &resp, /*timeout_ms=*/0, &cancel, [](absl::Status s) { ... });
//
// Errors name the task (when given) and the address: "task /job:worker/replica:0/task:1 at
// 127.0.0.1:4567: RunGraph failed: UNAVAILABLE: ...". Control calls (GetStatus, RegisterGraph)
// have a deadline of options.control_timeout_ms, the tidying ones (AbortStep, CleanupGraph) of
// options.cleanup_timeout_ms; RunGraph only the one
// given; RecvTensor none (it waits for the sender's compute; a dead peer is noticed by the
// connection breaking or by keepalive pings, within ~6 s).
//
// Thread safety: every method may be called from any thread; callbacks run on the thread of the
// client's GrpcClientQueue (one per cache, GrpcClientOptions::queue_threads threads; with more
// than one, two callbacks may run at once): keep them short.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_GRPC_WORKER_CLIENT_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_GRPC_WORKER_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/allocator.h"
#include "core/framework/tensor.h"
#include "core/protos/worker.grpc.pb.h"
#include "distributed/grpc/grpc_security.h"
#include "distributed/transport.h"
#include "distributed/worker_interface.h"
#include "grpcpp/channel.h"
#include "grpcpp/completion_queue.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/channel_arguments.h"

namespace shardflow {

// The protocol-neutral client options, by their gRPC-era name.
using GrpcClientOptions = WorkerClientOptions;

// Channel arguments shardflow uses on both ends: no message size limit, keepalive, fast
// reconnection after a task restarts, and TransferChannelArguments().
grpc::ChannelArguments WorkerChannelArguments(const GrpcClientOptions& options);

// The HTTP/2 settings for moving large tensors, set on clients and servers alike (a server's
// settings govern what its clients send it, and the other way round): frames of up to 16 MB and
// a fixed 8 MB flow-control window per stream, with gRPC's BDP probing off. See Note [HTTP/2
// flow control for tensors] in grpc_worker_client.cc.
const std::vector<std::pair<std::string, int>>& TransferChannelArguments();

// A completion queue and the threads that finish the client calls made on it (decoding
// RecvTensor replies included; with gRPC's epoll engine they also read the sockets). Shared by
// the clients of a GrpcWorkerCache.
class GrpcClientQueue {
 public:
  struct Call {
    virtual ~Call() = default;
    virtual void OnDone(bool ok) = 0;
  };
  explicit GrpcClientQueue(int num_threads = 1);
  // Waits for the calls in flight to finish.
  ~GrpcClientQueue();
  grpc::CompletionQueue* cq() { return &cq_; }

 private:
  grpc::CompletionQueue cq_;
  std::vector<std::thread> threads_;
};

class GrpcWorkerClient final : public WorkerInterface {
 public:
  using TensorCallback = std::function<void(const absl::Status&, Tensor)>;

  // `task` may be empty; it only names the peer in errors. `queue` null = a queue of its own.
  // The client must outlive its calls.
  GrpcWorkerClient(std::string address, std::string task, std::shared_ptr<grpc::Channel> channel,
                   GrpcClientOptions options, std::shared_ptr<GrpcClientQueue> queue = nullptr);

  const std::string& address() const override { return address_; }
  const std::string& task() const override { return task_; }

  // WorkerInterface (distributed/worker_interface.h).
  void GetStatusAsync(GetStatusResponse* response, StatusCallback done, int64_t timeout_ms = 0,
                      bool wait_for_ready = false) override;
  void RegisterGraphAsync(const RegisterGraphRequest* request, RegisterGraphResponse* response,
                          StatusCallback done) override;
  void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response, int64_t timeout_ms,
                     CallCancellation* cancel, StatusCallback done) override;
  void CleanupGraphAsync(const std::string& graph_handle, StatusCallback done) override;
  void AbortStepAsync(int64_t step_id, const absl::Status& status, StatusCallback done) override;
  void ResetResourcesAsync(const std::vector<std::string>& containers,
                           StatusCallback done) override;

  // The tensor `key` of step `step_id`, decoded into memory from `allocator` (null = CPU). A
  // tensor larger than options.recv_chunk_bytes comes as several ranged calls; `done` is called
  // once, after every one of them has finished, with the first error if any (the others are
  // cancelled then). `cancel` (may be null) is borrowed until `done` and ends them all.
  // With an initialized `destination` of the reply's dtype and shape, the bytes are decoded
  // into it (and it is what `done` gets) instead of into a new tensor.
  void RecvTensorAsync(int64_t step_id, const std::string& key, Allocator* allocator,
                       CallCancellation* cancel, TensorCallback done,
                       Tensor destination = Tensor());

 private:
  friend class RangedRecvTensor;
  template <typename Request, typename Response, typename Method>
  void CallAsync(const char* name, Method method, const Request* request, Response* response,
                 int64_t timeout_ms, CallCancellation* cancel, StatusCallback done);
  absl::Status Annotate(const char* method, const grpc::Status& status) const;

  const std::string address_;
  const std::string task_;
  const std::shared_ptr<grpc::Channel> channel_;
  const GrpcClientOptions options_;
  const std::shared_ptr<GrpcClientQueue> queue_;
  std::unique_ptr<WorkerService::Stub> stub_;
  grpc::GenericStub generic_;
};

// Clients by address, one channel each, created on first use.
class GrpcWorkerCache final : public WorkerCacheInterface,
                              public std::enable_shared_from_this<GrpcWorkerCache> {
 public:
  explicit GrpcWorkerCache(GrpcClientOptions options);
  // Errors: credentials that cannot be made (plaintext to a non-loopback address without
  // options.security.plaintext, unreadable PEM files).
  absl::StatusOr<std::shared_ptr<GrpcWorkerClient>> GetClient(const std::string& address,
                                                              const std::string& task = "");
  const GrpcClientOptions& options() const { return options_; }

  // WorkerCacheInterface.
  absl::StatusOr<std::shared_ptr<WorkerInterface>> GetWorker(const std::string& address,
                                                             const std::string& task) override;
  // A GrpcTensorTransport over this cache (which must outlive it).
  std::unique_ptr<TensorTransport> NewTransport() override;

 private:
  const GrpcClientOptions options_;
  const std::shared_ptr<GrpcClientQueue> queue_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<GrpcWorkerClient>> clients_ ABSL_GUARDED_BY(mu_);
};

// The gRPC TensorTransport: RecvTensor through the cache's clients.
class GrpcTensorTransport final : public TensorTransport {
 public:
  explicit GrpcTensorTransport(std::shared_ptr<GrpcWorkerCache> cache);
  void RecvTensorAsync(const RecvTensorCall& call, CallCancellation* cancel,
                       RecvDone done) override;

 private:
  const std::shared_ptr<GrpcWorkerCache> cache_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_GRPC_WORKER_CLIENT_H_
