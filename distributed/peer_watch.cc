#include "distributed/peer_watch.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "core/platform/status.h"
#include "distributed/protocol.h"
#include "glog/logging.h"

namespace shardflow {

std::vector<absl::Status> ProbeTasks(const std::vector<std::shared_ptr<WorkerInterface>>& workers,
                                     absl::Duration timeout) {
  std::vector<GetStatusResponse> responses(workers.size());
  std::vector<absl::Status> statuses(workers.size());
  absl::BlockingCounter pending(static_cast<int>(workers.size()));
  for (size_t i = 0; i < workers.size(); ++i) {
    workers[i]->GetStatusAsync(
        &responses[i],
        [&statuses, &pending, i](const absl::Status& s) {
          statuses[i] = s;
          pending.DecrementCount();
        },
        absl::ToInt64Milliseconds(timeout), /*wait_for_ready=*/true);
  }
  pending.Wait();
  return statuses;
}

absl::StatusOr<std::shared_ptr<WorkerCacheInterface>> NewProbeCache(
    const SecurityOptions& security) {
  WorkerClientOptions client;
  client.security = security;
  return NewWorkerCache(kDefaultProtocol, client);
}

absl::StatusOr<std::shared_ptr<PeerWatch>> PeerWatch::Start(const ClusterSpec& spec,
                                                            const std::vector<TaskId>& tasks,
                                                            const SecurityOptions& security,
                                                            PeerWatchOptions options) {
  SF_ASSIGN_OR_RETURN(std::shared_ptr<WorkerCacheInterface> probes, NewProbeCache(security));
  return Start(std::move(probes), spec, tasks, options);
}

absl::StatusOr<std::shared_ptr<PeerWatch>> PeerWatch::Start(
    std::shared_ptr<WorkerCacheInterface> probes, const ClusterSpec& spec,
    const std::vector<TaskId>& tasks, PeerWatchOptions options) {
  std::vector<Peer> peers;
  for (const TaskId& t : tasks) {
    Peer p;
    p.task = ClusterSpec::TaskName(t.job, t.task);
    SF_ASSIGN_OR_RETURN(p.address, spec.TaskAddress(t.job, t.task));
    SF_ASSIGN_OR_RETURN(p.worker, probes->GetWorker(p.address, p.task));
    peers.push_back(std::move(p));
  }
  return std::shared_ptr<PeerWatch>(new PeerWatch(std::move(peers), std::move(probes), options));
}

PeerWatch::PeerWatch(std::vector<Peer> peers, std::shared_ptr<WorkerCacheInterface> probes,
                     PeerWatchOptions options)
    : probes_(std::move(probes)), options_(options), start_(absl::Now()), peers_(std::move(peers)) {
  thread_ = std::thread([this] { Loop(); });
}

PeerWatch::~PeerWatch() {
  Stop();
  thread_.join();
}

void PeerWatch::Stop() {
  absl::MutexLock lock(&mu_);
  stop_ = true;
}

absl::Status PeerWatch::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

int64_t PeerWatch::OnLoss(std::function<void()> on_loss) {
  {
    absl::MutexLock lock(&mu_);
    if (status_.ok()) {
      callbacks_[next_id_] = std::move(on_loss);
      return next_id_++;
    }
  }
  on_loss();
  return -1;
}

void PeerWatch::Remove(int64_t id) {
  absl::MutexLock lock(&mu_);
  callbacks_.erase(id);
}

void PeerWatch::Lose(absl::Status status) {
  std::map<int64_t, std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (!status_.ok() || stop_) return;
    status_ = std::move(status);
    callbacks.swap(callbacks_);
    LOG(WARNING) << status_.message();
  }
  // Outside the lock: a callback may call Remove (or cancel a step that calls it).
  for (auto& [id, callback] : callbacks) callback();
}

void PeerWatch::ProbeAll() {
  std::vector<std::shared_ptr<WorkerInterface>> workers;
  for (const Peer& p : peers_) workers.push_back(p.worker);
  const std::vector<absl::Status> statuses = ProbeTasks(workers, options_.probe_timeout);
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& p = peers_[i];
    if (statuses[i].ok()) {
      p.seen = true;
      p.last_answer = now;
      continue;
    }
    p.last_error = std::string(statuses[i].message());
    if (p.seen && now - p.last_answer >= options_.lost_after) {
      Lose(absl::UnavailableError(absl::StrCat(
          "task ", p.task, " at ", p.address, " stopped answering ",
          absl::FormatDuration(now - p.last_answer), " ago (", p.last_error,
          "); the step cannot finish without it. Restart that task (or the job): training "
          "resumes from the last checkpoint")));
      return;
    }
    if (!p.seen && now - start_ >= options_.first_wait) {
      Lose(absl::UnavailableError(
          absl::StrCat("task ", p.task, " at ", p.address, " never answered in ",
                       absl::FormatDuration(options_.first_wait), " (", p.last_error,
                       "); start it, or check the cluster spec's address for it")));
      return;
    }
  }
}

void PeerWatch::Loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_ || !status_.ok()) return;
    }
    const absl::Time next = absl::Now() + options_.interval;
    ProbeAll();
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(&stop_), next);
  }
}

}  // namespace shardflow
