#include "distributed/local_worker_client.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace shardflow {

LocalWorkerClient::LocalWorkerClient(Worker* worker, std::string address)
    : address_(std::move(address)), task_(worker->task()), worker_(worker) {}

Worker* LocalWorkerClient::Enter() {
  absl::MutexLock lock(&mu_);
  if (worker_ != nullptr) ++entering_;
  return worker_;
}

void LocalWorkerClient::Leave() {
  absl::MutexLock lock(&mu_);
  --entering_;
}

void LocalWorkerClient::Detach() {
  absl::MutexLock lock(&mu_);
  worker_ = nullptr;
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entering_ == 0; };
  mu_.Await(absl::Condition(&idle));
}

namespace {
absl::Status Gone() {
  return absl::UnavailableError("the task's server in this process has shut down");
}
}  // namespace

void LocalWorkerClient::GetStatusAsync(GetStatusResponse* response, StatusCallback done,
                                       int64_t /*timeout_ms*/, bool /*wait_for_ready*/) {
  absl::Status status;
  if (Worker* worker = Enter()) {
    worker->GetStatus(response);
    Leave();
  } else {
    status = Gone();
  }
  done(WorkerCallError(task_, address_, "GetStatus", status));
}

void LocalWorkerClient::RegisterGraphAsync(const RegisterGraphRequest* request,
                                           RegisterGraphResponse* response, StatusCallback done) {
  absl::Status status = Gone();
  if (Worker* worker = Enter()) {
    status = worker->RegisterGraph(*request, response);
    Leave();
  }
  done(WorkerCallError(task_, address_, "RegisterGraph", status));
}

void LocalWorkerClient::RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                                      int64_t /*timeout_ms*/, CallCancellation* cancel,
                                      StatusCallback done) {
  // The step's deadline is the request's timeout_ms, which the worker enforces itself.
  Worker* worker = Enter();
  if (worker == nullptr) {
    done(WorkerCallError(task_, address_, "RunGraph", Gone()));
    return;
  }
  const int64_t step_id = request->step_id();
  if (cancel != nullptr) {
    // The worker outlives the step: its Shutdown waits for every RunGraph callback.
    cancel->SetCancelHook([worker, step_id, task = task_] {
      worker->AbortStep(step_id, absl::CancelledError(absl::StrCat(
                                     "RunGraph of step ", step_id, " on task ", task,
                                     " was cancelled by its caller; the step is aborted here")));
    });
  }
  worker->RunGraphAsync(
      request, response,
      [task = task_, address = address_, cancel, done = std::move(done)](const absl::Status& s) {
        if (cancel != nullptr) cancel->ClearCancelHook();
        done(WorkerCallError(task, address, "RunGraph", s));
      });
  Leave();
}

void LocalWorkerClient::CleanupGraphAsync(const std::string& graph_handle, StatusCallback done) {
  absl::Status status = Gone();
  if (Worker* worker = Enter()) {
    status = worker->CleanupGraph(graph_handle);
    Leave();
  }
  done(WorkerCallError(task_, address_, "CleanupGraph", status));
}

void LocalWorkerClient::ResetResourcesAsync(const std::vector<std::string>& containers,
                                            StatusCallback done) {
  absl::Status status = Gone();
  if (Worker* worker = Enter()) {
    status = worker->ResetResources(containers);
    Leave();
  }
  done(WorkerCallError(task_, address_, "ResetResources", status));
}

void LocalWorkerClient::AbortStepAsync(int64_t step_id, const absl::Status& status,
                                       StatusCallback done) {
  if (Worker* worker = Enter()) {
    worker->AbortStep(step_id, status);
    Leave();
  }
  done(absl::OkStatus());
}

}  // namespace shardflow
