#include "tools/shardflow/task_server.h"

#include <signal.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/platform/status.h"
#include "distributed/protocol.h"
#include "distributed/worker_interface.h"
#include "glog/logging.h"

namespace shardflow {

absl::StatusOr<std::unique_ptr<Server>> StartTaskServer(const ClusterFlags& cluster,
                                                        const std::string& job, int task,
                                                        int threads) {
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::FromJsonFile(cluster.cluster));
  if (!spec.HasTask(job, task)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--job ", job, " --task ", task, ": the cluster file ", cluster.cluster,
                     " has no such task (job ", job, " has ", spec.num_tasks(job), " task(s))"));
  }
  ServerOptions options;
  options.job = job;
  options.task = task;
  options.cluster = spec;
  options.config.set_intra_op_threads(threads);
  options.config.set_inter_op_threads(threads);
  options.security.token = cluster.token;
  options.security.tls_ca_file = cluster.tls_ca;
  options.security.plaintext = cluster.plaintext;
  options.host_master = false;  // the chief's training loop runs its own master
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
  std::printf("task %s serving on %s\n", server->task_name().c_str(), server->address().c_str());
  std::fflush(stdout);
  return server;
}

absl::Status ServeUntilChiefLeaves(Server* server, const ClusterSpec& spec, const std::string& job,
                                   const SecurityOptions& security, absl::Duration first_wait,
                                   absl::Duration gone_after) {
  SF_ASSIGN_OR_RETURN(std::string address, spec.TaskAddress(job, 0));
  const std::string chief = ClusterSpec::TaskName(job, 0);
  // Probed through a cache of its own: a probe that finds the chief not up yet leaves its
  // channel backing off, which must not be the channel the task's transport pulls tensors on.
  WorkerClientOptions client;
  client.security = security;
  SF_ASSIGN_OR_RETURN(auto probes, NewWorkerCache(kDefaultProtocol, client));
  SF_ASSIGN_OR_RETURN(auto worker, probes->GetWorker(address, chief));
  // SIGTERM and SIGINT end the wait too (checked between probes).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  const absl::Time start = absl::Now();
  bool seen = false;
  absl::Time last_answer = start;
  while (true) {
    absl::Notification done;
    absl::Status status;
    GetStatusResponse response;
    worker->GetStatusAsync(
        &response,
        [&](const absl::Status& s) {
          status = s;
          done.Notify();
        },
        /*timeout_ms=*/1000);
    done.WaitForNotification();
    const absl::Time now = absl::Now();
    if (status.ok()) {
      if (!seen) {
        std::printf("task %s: the chief %s at %s is up; serving until it finishes\n",
                    server->task_name().c_str(), chief.c_str(), address.c_str());
        std::fflush(stdout);
      }
      seen = true;
      last_answer = now;
    } else if (!seen && now - start > first_wait) {
      return absl::UnavailableError(
          absl::StrCat("the chief ", chief, " at ", address, " did not answer within ",
                       absl::FormatDuration(first_wait),
                       ": start `shardflow train ... --task 0` there (", status.message(), ")"));
    } else if (seen && now - last_answer >= gone_after) {
      std::printf("task %s: the chief stopped answering (%s); done\n", server->task_name().c_str(),
                  std::string(status.message()).c_str());
      std::fflush(stdout);
      return absl::OkStatus();
    }
    timespec wait{1, 0};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      std::printf("task %s: signalled, shutting down\n", server->task_name().c_str());
      return absl::OkStatus();
    }
  }
}

}  // namespace shardflow
