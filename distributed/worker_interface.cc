#include "distributed/worker_interface.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace shardflow {
namespace {

// Starts an async call and waits for its callback.
template <typename Start>
absl::Status Wait(Start start) {
  auto finished = std::make_shared<absl::Notification>();
  auto result = std::make_shared<absl::Status>();
  start([finished, result](const absl::Status& s) {
    *result = s;
    finished->Notify();
  });
  finished->WaitForNotification();
  return *result;
}

}  // namespace

absl::Status WorkerCallError(const std::string& task, const std::string& address,
                             const char* method, const absl::Status& status) {
  if (status.ok()) return status;
  std::string who = task.empty() ? absl::StrCat("worker at ", address)
                                 : absl::StrCat("task ", task, " at ", address);
  return absl::Status(status.code(),
                      absl::StrCat(who, ": ", method, " failed: ", status.message()));
}

absl::Status WorkerInterface::GetStatus(GetStatusResponse* response) {
  return Wait([&](StatusCallback done) { GetStatusAsync(response, std::move(done)); });
}

absl::Status WorkerInterface::RegisterGraph(const RegisterGraphRequest& request,
                                            RegisterGraphResponse* response) {
  return Wait(
      [&](StatusCallback done) { RegisterGraphAsync(&request, response, std::move(done)); });
}

absl::Status WorkerInterface::RunGraph(const RunGraphRequest& request, RunGraphResponse* response,
                                       int64_t timeout_ms) {
  return Wait([&](StatusCallback done) {
    RunGraphAsync(&request, response, timeout_ms, nullptr, std::move(done));
  });
}

absl::Status WorkerInterface::CleanupGraph(const std::string& graph_handle) {
  return Wait([&](StatusCallback done) { CleanupGraphAsync(graph_handle, std::move(done)); });
}

absl::Status WorkerInterface::AbortStep(int64_t step_id, const absl::Status& status) {
  return Wait([&](StatusCallback done) { AbortStepAsync(step_id, status, std::move(done)); });
}

absl::Status WorkerInterface::ResetResources(const std::vector<std::string>& containers) {
  return Wait([&](StatusCallback done) { ResetResourcesAsync(containers, std::move(done)); });
}

}  // namespace shardflow
