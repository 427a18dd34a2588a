#include "distributed/master.h"

#include <algorithm>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/framework/device_name.h"
#include "core/platform/status.h"
#include "distributed/master_session.h"
#include "distributed/worker.h"
#include "glog/logging.h"

namespace shardflow {

// ---- Master --------------------------------------------------------------------------------

Master::Master(MasterOptions options, std::shared_ptr<WorkerCacheInterface> cache)
    : options_(std::move(options)),
      cache_(std::move(cache)),
      between_graph_steps_(std::make_shared<BetweenGraphSteps>()) {
  SetPeerWatch(options_.peer_watch);
  if (options_.session_idle_timeout > absl::ZeroDuration()) {
    const absl::Duration every =
        std::clamp(options_.session_idle_timeout / 4, absl::Milliseconds(100), absl::Seconds(5));
    collector_ = std::thread([this, every] {
      while (!stop_.WaitForNotificationWithTimeout(every)) CollectGarbage(absl::Now());
    });
  }
}

Master::~Master() {
  stop_.Notify();
  if (collector_.joinable()) collector_.join();
  std::map<std::string, std::shared_ptr<MasterSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
  }
  for (auto& [handle, session] : sessions) session->Close();
}

absl::StatusOr<std::shared_ptr<Master>> Master::Create(MasterOptions options) {
  if (options.cluster.tasks().empty()) {
    return absl::InvalidArgumentError(
        "the master's cluster spec has no tasks; give {\"worker\": [\"host:port\", ...]}");
  }
  std::shared_ptr<WorkerCacheInterface> cache = options.worker_cache;
  if (cache == nullptr) {
    SF_ASSIGN_OR_RETURN(cache, NewWorkerCache(options.protocol, options.client));
  }
  return std::shared_ptr<Master>(new Master(std::move(options), std::move(cache)));
}

absl::StatusOr<std::string> Master::CreateSession(const GraphDef& graph,
                                                  const SessionOptionsProto& config) {
  {
    absl::MutexLock lock(&mu_);
    if (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the master has ", sessions_.size(),
          " open sessions, the most it keeps (--max-sessions); close sessions that are no "
          "longer used"));
    }
  }
  const std::string handle = NewRandomHandle("session-");
  auto session = MasterSession::New(handle, &options_, cache_, config, between_graph_steps_);
  SF_RETURN_IF_ERROR(session->Init(graph));
  LOG(INFO) << "master: opened session " << handle << " (" << graph.node_size() << " nodes)";
  absl::MutexLock lock(&mu_);
  sessions_[handle] = std::move(session);
  return handle;
}

absl::StatusOr<std::shared_ptr<MasterSession>> Master::Find(const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    // ABORTED, as TensorFlow's master answers: the client's session is gone for good (a
    // MonitoredSession recovers by creating a new one; Note [Restarted tasks]).
    return absl::AbortedError(absl::StrCat(
        "no session '", handle,
        "' on this master (closed, collected after being idle, or the master was restarted); "
        "create a new session"));
  }
  return it->second;
}

absl::Status Master::ExtendSession(const std::string& handle, const GraphDef& graph) {
  SF_ASSIGN_OR_RETURN(auto session, Find(handle));
  return session->Extend(graph);
}

void Master::RunStepAsync(const std::string& handle, const RunOptions& options,
                          std::vector<std::pair<std::string, Tensor>> feeds,
                          const std::vector<std::string>& fetches,
                          const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                          RunMetadata* metadata, StepCall* call,
                          std::function<void(absl::Status)> done) {
  auto session = Find(handle);
  if (!session.ok()) {
    done(session.status());
    return;
  }
  // The session stays alive until the step is done, even if it is closed meanwhile.
  std::shared_ptr<MasterSession> keep = *session;
  std::shared_ptr<PeerWatch> watch;
  {
    absl::MutexLock lock(&mu_);
    watch = peer_watch_;
  }
  if (watch == nullptr) {
    keep->RunAsync(options, std::move(feeds), fetches, targets, outputs, metadata, call,
                   [keep, done = std::move(done)](absl::Status s) { done(std::move(s)); });
    return;
  }
  // A lost task cancels the step (through the caller's StepCall, or one of our own); the
  // watch's callback may run after the step is done, so it reaches the call through `link`,
  // which the end of the step cuts. The cancel runs outside link->mu: it may end the step at
  // once, on the same thread (a task served in this process whose step was waiting), and the
  // end of the step takes link->mu. An end on another thread waits for the cancel to return,
  // so the call it uses stays alive.
  struct Link {
    absl::Mutex mu;
    StepCall* call ABSL_GUARDED_BY(mu) = nullptr;
    bool cancelling ABSL_GUARDED_BY(mu) = false;
    std::thread::id canceller ABSL_GUARDED_BY(mu);
  };
  auto link = std::make_shared<Link>();
  std::shared_ptr<StepCall> own = call == nullptr ? std::make_shared<StepCall>() : nullptr;
  if (own != nullptr) call = own.get();
  {
    absl::MutexLock lock(&link->mu);
    link->call = call;
  }
  const int64_t id = watch->OnLoss([link] {
    StepCall* target = nullptr;
    {
      absl::MutexLock lock(&link->mu);
      if (link->call == nullptr || link->cancelling) return;
      target = link->call;
      link->cancelling = true;
      link->canceller = std::this_thread::get_id();
    }
    target->cancellation.Cancel();
    absl::MutexLock lock(&link->mu);
    link->cancelling = false;
  });
  keep->RunAsync(options, std::move(feeds), fetches, targets, outputs, metadata, call,
                 [keep, watch, id, link, own, done = std::move(done)](absl::Status s) {
                   watch->Remove(id);
                   {
                     absl::MutexLock lock(&link->mu);
                     if (link->canceller != std::this_thread::get_id()) {
                       link->mu.Await(absl::Condition(
                           +[](Link* l) ABSL_NO_THREAD_SAFETY_ANALYSIS { return !l->cancelling; },
                           link.get()));
                     }
                     link->call = nullptr;
                   }
                   // A step cancelled (or broken) because a task was lost says which.
                   if (!s.ok() && !watch->status().ok()) s = watch->status();
                   done(std::move(s));
                 });
}

void Master::SetPeerWatch(std::shared_ptr<PeerWatch> watch) {
  absl::MutexLock lock(&mu_);
  peer_watch_ = std::move(watch);
}

absl::Status Master::RunStep(const std::string& handle, const RunOptions& options,
                             const std::vector<std::pair<std::string, Tensor>>& feeds,
                             const std::vector<std::string>& fetches,
                             const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                             RunMetadata* metadata) {
  absl::Notification finished;
  absl::Status result;
  RunStepAsync(handle, options, feeds, fetches, targets, outputs, metadata, nullptr,
               [&](absl::Status s) {
                 result = std::move(s);
                 finished.Notify();
               });
  finished.WaitForNotification();
  return result;
}

absl::Status Master::CloseSession(const std::string& handle) {
  std::shared_ptr<MasterSession> session;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(handle);
    if (it == sessions_.end()) return absl::OkStatus();
    session = std::move(it->second);
    sessions_.erase(it);
  }
  LOG(INFO) << "master: closed session " << handle;
  session->Close();
  return absl::OkStatus();
}

void Master::CollectGarbage(absl::Time now) {
  if (options_.session_idle_timeout <= absl::ZeroDuration()) return;
  std::vector<std::pair<std::string, std::shared_ptr<MasterSession>>> candidates;
  {
    absl::MutexLock lock(&mu_);
    candidates.assign(sessions_.begin(), sessions_.end());
  }
  // Asked without the master's lock, so that a busy session never holds up the others.
  std::vector<std::pair<std::string, std::shared_ptr<MasterSession>>> idle;
  for (auto& [handle, session] : candidates) {
    const absl::Duration idle_for = session->IdleFor(now);
    if (idle_for <= options_.session_idle_timeout) continue;
    {
      absl::MutexLock lock(&mu_);
      auto it = sessions_.find(handle);
      if (it == sessions_.end() || it->second != session) continue;  // closed meanwhile
      sessions_.erase(it);
    }
    LOG(INFO) << "master: closing session " << handle << ": idle for "
              << absl::FormatDuration(idle_for) << " (session idle timeout "
              << absl::FormatDuration(options_.session_idle_timeout) << ")";
    idle.emplace_back(handle, std::move(session));
  }
  for (auto& [handle, session] : idle) session->Close();
}

int Master::num_sessions() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sessions_.size());
}

absl::Status Master::Reset(const std::vector<std::string>& containers,
                           const std::vector<std::string>& device_filters) {
  if (containers.size() > static_cast<size_t>(Worker::kMaxResetContainers)) {
    return absl::InvalidArgumentError(absl::StrCat("Session.reset: ", containers.size(),
                                                   " containers named; at most ",
                                                   Worker::kMaxResetContainers));
  }
  SF_ASSIGN_OR_RETURN(std::vector<DeviceName> filters, ParseDeviceFilters(device_filters));
  // Every task at once; each call has the control deadline, so this ends.
  struct Call {
    std::string task;
    std::shared_ptr<WorkerInterface> client;
    absl::Status status;
    absl::Notification done;
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (const TaskId& id : options_.cluster.tasks()) {
    if (!TaskPassesFilters(filters, id)) continue;
    auto call = std::make_unique<Call>();
    call->task = ClusterSpec::TaskName(id.job, id.task);
    SF_ASSIGN_OR_RETURN(std::string address, options_.cluster.TaskAddress(id.job, id.task));
    SF_ASSIGN_OR_RETURN(call->client, cache_->GetWorker(address, call->task));
    calls.push_back(std::move(call));
  }
  for (auto& call : calls) {
    Call* c = call.get();
    c->client->ResetResourcesAsync(containers, [c](const absl::Status& s) {
      c->status = s;
      c->done.Notify();
    });
  }
  std::vector<std::string> failed;
  absl::StatusCode code = absl::StatusCode::kOk;  // the first failure's
  for (auto& call : calls) {
    call->done.WaitForNotification();
    if (call->status.ok()) continue;
    failed.push_back(std::string(call->status.message()));
    if (code == absl::StatusCode::kOk) code = call->status.code();
  }
  if (!failed.empty()) {
    return absl::Status(
        code, absl::StrCat("Session.reset: ", failed.size(), " of ", calls.size(),
                           " tasks did not reset their resources: ", absl::StrJoin(failed, "; ")));
  }
  LOG(INFO) << "master: reset the resources of " << calls.size() << " task(s)";
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DeviceAttributes>> Master::ListDevices() {
  std::vector<DeviceAttributes> out;
  absl::Status first_error;
  for (const TaskId& id : options_.cluster.tasks()) {
    std::string name = ClusterSpec::TaskName(id.job, id.task);
    SF_ASSIGN_OR_RETURN(std::string address, options_.cluster.TaskAddress(id.job, id.task));
    SF_ASSIGN_OR_RETURN(auto client, cache_->GetWorker(address, name));
    GetStatusResponse status;
    absl::Status s = client->GetStatus(&status);
    if (!s.ok()) {
      // A task that is down has no devices to offer; the others still do.
      if (first_error.ok()) first_error = s;
      continue;
    }
    for (const WorkerDevice& d : status.devices()) {
      out.push_back(DeviceAttributes{d.name(), d.device_type(), d.memory_limit()});
    }
  }
  if (out.empty() && !first_error.ok()) return first_error;
  return out;
}

}  // namespace shardflow
