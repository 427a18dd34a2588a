// WorkerInterface: what a master (and a task's peers) may ask of one task's worker, whatever
// carries the calls. The master, the remote rendezvous and the servers use only this interface
// and WorkerCacheInterface; gRPC is one implementation (distributed/grpc/grpc_worker_client.h),
// chosen by name through distributed/protocol.h, and another (an RDMA control plane, an
// in-process one for tests) plugs in beside it without touching them.
//
//   SF_ASSIGN_OR_RETURN(auto cache, NewWorkerCache("grpc", client_options));
//   SF_ASSIGN_OR_RETURN(auto worker, cache->GetWorker("10.0.0.2:2222", "/job:worker/.../task:1"));
//   GetStatusResponse status;
//   SF_RETURN_IF_ERROR(worker->GetStatus(&status));
//   worker->RunGraphAsync(&request, &response, /*timeout_ms=*/0, &cancel, done);
//
// Errors name the task (when known) and its address, e.g. "task /job:worker/replica:0/task:1 at
// 127.0.0.1:4567: RunGraph failed: UNAVAILABLE: ...".
//
// Thread safety: every method may be called from any thread; callbacks may run on any thread
// and should be short.
#ifndef SHARDFLOW_DISTRIBUTED_WORKER_INTERFACE_H_
#define SHARDFLOW_DISTRIBUTED_WORKER_INTERFACE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/protos/worker.pb.h"
#include "distributed/security.h"
#include "distributed/transport.h"

namespace shardflow {

// How a task's clients reach other tasks' workers.
struct WorkerClientOptions {
  SecurityOptions security;
  // Deadline of control calls (GetStatus, RegisterGraph).
  int64_t control_timeout_ms = 30000;
  // Deadline of the calls that tidy up after a step or a session (AbortStep, CleanupGraph):
  // best effort (a worker aborts steps and drops graphs left idle by itself), and a host that
  // went away without a reset (its connection still looks open, a reconnect's SYN is never
  // answered) must not hold up closing the session or the process for the control deadline.
  int64_t cleanup_timeout_ms = 5000;
  // Keepalive pings on idle and busy connections: a peer that stops answering is declared
  // unavailable after keepalive_time_ms + keepalive_timeout_ms.
  int keepalive_time_ms = 3000;
  int keepalive_timeout_ms = 3000;
  // RecvTensor asks for a tensor's first recv_chunk_bytes; a larger tensor comes as ranges of
  // that size, recv_ranges_in_flight calls at a time, each copied into the destination while
  // the next is on the wire (Note [Ranged RecvTensor] in distributed/grpc/). 0 = one call per
  // tensor, whatever its size. Chosen by measurement (docs/distributed.md, "Measured transfer
  // speed"): 4 MB x 2 beat 2 MB, 8 MB and 3 or more in flight on loopback.
  int64_t recv_chunk_bytes = 4 << 20;
  int recv_ranges_in_flight = 2;
  // Threads that finish client calls. One: a second thread polling the same queue made 64 MB
  // pulls twice as slow on 2 vCPUs (the pollers hand the socket back and forth).
  int queue_threads = 1;
};

class WorkerInterface {
 public:
  using StatusCallback = std::function<void(const absl::Status&)>;
  virtual ~WorkerInterface() = default;

  // The worker's address ("host:port") and task name ("" when not given).
  virtual const std::string& address() const = 0;
  virtual const std::string& task() const = 0;

  // Each `done` is called exactly once, possibly on another thread; requests and responses are
  // borrowed until then. timeout_ms 0 = the control deadline (GetStatus), no deadline (RunGraph).
  // With wait_for_ready, a worker that cannot be reached yet (starting, restarting) is waited
  // for until the deadline instead of failing at once.
  virtual void GetStatusAsync(GetStatusResponse* response, StatusCallback done,
                              int64_t timeout_ms = 0, bool wait_for_ready = false) = 0;
  virtual void RegisterGraphAsync(const RegisterGraphRequest* request,
                                  RegisterGraphResponse* response, StatusCallback done) = 0;
  // `cancel` (may be null) ends the call early: `done` then gets CANCELLED.
  virtual void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                             int64_t timeout_ms, CallCancellation* cancel, StatusCallback done) = 0;
  virtual void CleanupGraphAsync(const std::string& graph_handle, StatusCallback done) = 0;
  virtual void AbortStepAsync(int64_t step_id, const absl::Status& status, StatusCallback done) = 0;
  // Clears the task's resources in `containers` (worker.proto's ResetResourcesRequest). A
  // worker that cannot is UNIMPLEMENTED.
  virtual void ResetResourcesAsync(const std::vector<std::string>& containers,
                                   StatusCallback done) {
    done(absl::UnimplementedError("ResetResources is not served by this worker"));
  }

  // The same, waiting for the answer.
  absl::Status GetStatus(GetStatusResponse* response);
  absl::Status RegisterGraph(const RegisterGraphRequest& request, RegisterGraphResponse* response);
  absl::Status RunGraph(const RunGraphRequest& request, RunGraphResponse* response,
                        int64_t timeout_ms = 0);
  absl::Status CleanupGraph(const std::string& graph_handle);
  absl::Status AbortStep(int64_t step_id, const absl::Status& status);
  absl::Status ResetResources(const std::vector<std::string>& containers);
};

// The error of a call to a worker, as every WorkerInterface words it: "task T at ADDRESS: METHOD
// failed: ..." ("worker at ADDRESS" when the task is not known), with the call's code. OK stays
// OK.
absl::Status WorkerCallError(const std::string& task, const std::string& address,
                             const char* method, const absl::Status& status);

// The workers of a cluster by address, each made on first use and shared.
class WorkerCacheInterface {
 public:
  virtual ~WorkerCacheInterface() = default;
  // Errors: the worker cannot be addressed with these options (plaintext to a non-loopback
  // address without security.plaintext, unreadable PEM files).
  virtual absl::StatusOr<std::shared_ptr<WorkerInterface>> GetWorker(
      const std::string& address, const std::string& task = "") = 0;
  // The transport a worker of this cluster pulls tensors from its peers with.
  virtual std::unique_ptr<TensorTransport> NewTransport() = 0;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_WORKER_INTERFACE_H_
