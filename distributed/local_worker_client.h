// LocalWorkerClient: the WorkerInterface of a Worker in this process, called directly. A master
// that runs in the same process as one of its tasks (`shardflow train --task N`, a Python
// sf.train.Server's sessions) reaches its own task through it instead of an RPC to itself: no
// serialization of the RunGraph request and reply, no trip through the network stack, no
// completion-queue thread between the two, which is most of a small step's overhead in
// between-graph data parallelism (docs/distributed.md, "Between-graph groups").
//
//   auto local = std::make_shared<LocalWorkerClient>(server->worker(), server->address());
//   master_options.local_worker = local;     // MasterOptions (distributed/master.h)
//   ...
//   local->Detach();                         // before the worker goes: later calls UNAVAILABLE
//
// Errors are worded by WorkerCallError (distributed/worker_interface.h), as the gRPC client's
// are, so the master's messages read the same either way.
//
// Thread safety: every method may be called from any thread; Detach waits for the calls that
// are entering the worker, and the worker's own Shutdown waits for their callbacks.
#ifndef SHARDFLOW_DISTRIBUTED_LOCAL_WORKER_CLIENT_H_
#define SHARDFLOW_DISTRIBUTED_LOCAL_WORKER_CLIENT_H_

#include <cstdint>
#include <string>

#include "absl/synchronization/mutex.h"
#include "distributed/worker.h"
#include "distributed/worker_interface.h"

namespace shardflow {

class LocalWorkerClient final : public WorkerInterface {
 public:
  // `worker` is borrowed until Detach.
  LocalWorkerClient(Worker* worker, std::string address);

  const std::string& address() const override { return address_; }
  const std::string& task() const override { return task_; }

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

  // Later calls fail with UNAVAILABLE; returns once no call is entering the worker.
  void Detach();

 private:
  // The worker, counted as entered until Leave; null once detached.
  Worker* Enter();
  void Leave();

  const std::string address_;
  const std::string task_;
  absl::Mutex mu_;
  Worker* worker_ ABSL_GUARDED_BY(mu_);
  int entering_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_LOCAL_WORKER_CLIENT_H_
