#include "tools/shardflow/task_server.h"

#include <signal.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/time/clock.h"
#include "core/platform/status.h"
#include "distributed/protocol.h"
#include "distributed/worker_interface.h"
#include "glog/logging.h"

namespace shardflow {

absl::StatusOr<std::unique_ptr<Server>> StartTaskServer(const ClusterFlags& cluster,
                                                        const std::string& job, int task,
                                                        int threads, int devices) {
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, cluster.Spec());
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
  options.config.set_cpu_device_count(devices);
  options.security.token = cluster.token;
  options.security.tls_ca_file = cluster.tls_ca;
  options.security.plaintext = cluster.plaintext;
  options.host_master = false;  // the chief's training loop runs its own master
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
  std::printf("task %s serving on %s\n", server->task_name().c_str(), server->address().c_str());
  std::fflush(stdout);
  return server;
}

absl::Status ServeUntilTasksLeave(Server* server, const ClusterSpec& spec,
                                  const std::vector<TaskId>& tasks, const SecurityOptions& security,
                                  absl::Duration first_wait, absl::Duration gone_after) {
  // Probed through a cache of its own: a probe that finds a task not up yet leaves its channel
  // backing off, which must not be the channel the task's transport pulls tensors on.
  WorkerClientOptions client;
  client.security = security;
  SF_ASSIGN_OR_RETURN(auto probes, NewWorkerCache(kDefaultProtocol, client));
  std::vector<std::shared_ptr<WorkerInterface>> workers;
  std::vector<std::string> named;
  for (const TaskId& t : tasks) {
    SF_ASSIGN_OR_RETURN(std::string address, spec.TaskAddress(t.job, t.task));
    const std::string name = ClusterSpec::TaskName(t.job, t.task);
    SF_ASSIGN_OR_RETURN(auto worker, probes->GetWorker(address, name));
    workers.push_back(std::move(worker));
    named.push_back(absl::StrCat(name, " at ", address));
  }
  const std::string who = absl::StrJoin(named, ", ");
  // SIGTERM and SIGINT end the wait too (checked between probes).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  const absl::Time start = absl::Now();
  bool seen = false;
  absl::Time last_answer = start;
  std::string last_error;
  while (true) {
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
          /*timeout_ms=*/1000, /*wait_for_ready=*/true);
    }
    pending.Wait();
    const absl::Time now = absl::Now();
    bool any = false;
    for (const absl::Status& s : statuses) {
      any |= s.ok();
      if (!s.ok()) last_error = std::string(s.message());
    }
    if (any) {
      if (!seen) {
        std::printf("task %s: %s up; serving until %s\n", server->task_name().c_str(),
                    tasks.size() == 1 ? "the chief is" : "the workers are",
                    tasks.size() == 1 ? "it finishes" : "they finish");
        std::fflush(stdout);
      }
      seen = true;
      last_answer = now;
    } else if (!seen && now - start > first_wait) {
      return absl::UnavailableError(
          absl::StrCat(who, " did not answer within ", absl::FormatDuration(first_wait),
                       ": start `shardflow ", "train ... --job ", tasks[0].job, " --task ",
                       tasks[0].task, "` there (", last_error, ")"));
    } else if (seen && now - last_answer >= gone_after) {
      std::printf("task %s: %s stopped answering (%s); done\n", server->task_name().c_str(),
                  tasks.size() == 1 ? "the chief" : "every worker", last_error.c_str());
      std::fflush(stdout);
      return absl::OkStatus();
    }
    timespec wait{0, 250'000'000};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      std::printf("task %s: signalled, shutting down\n", server->task_name().c_str());
      return absl::OkStatus();
    }
  }
}

}  // namespace shardflow
