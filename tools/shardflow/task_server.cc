#include "tools/shardflow/task_server.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "core/framework/resource_mgr.h"
#include "core/platform/status.h"
#include "distributed/peer_watch.h"
#include "distributed/worker_interface.h"
#include "glog/logging.h"
#include "ops/ops.h"
#include "runtime/device.h"

namespace shardflow {

absl::StatusOr<std::unique_ptr<Server>> StartTaskServer(
    const ClusterFlags& cluster, const std::string& job, int task, int threads, int devices,
    const std::map<std::string, std::string>& labels) {
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
  options.transport = cluster.transport;
  options.host_master = false;  // the chief's training loop runs its own master
  options.worker.labels = labels;
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
  std::printf("task %s serving on %s\n", server->task_name().c_str(), server->address().c_str());
  std::fflush(stdout);
  return server;
}

absl::Status CheckPeersAgree(const ClusterFlags& cluster, const ClusterSpec& spec,
                             const TaskId& self, const std::map<std::string, std::string>& labels,
                             const std::vector<std::string>& across_jobs, absl::Duration wait) {
  if (labels.empty()) return absl::OkStatus();
  struct Peer {
    std::string name, address;
    bool same_job = false;
    bool compared = false;
  };
  std::vector<Peer> peers;
  for (const TaskId& t : spec.tasks()) {
    if (t.job == self.job && t.task == self.task) continue;
    Peer p;
    p.name = ClusterSpec::TaskName(t.job, t.task);
    p.same_job = t.job == self.job;
    SF_ASSIGN_OR_RETURN(p.address, spec.TaskAddress(t.job, t.task));
    peers.push_back(std::move(p));
  }
  const absl::Time deadline = absl::Now() + wait;
  absl::Status disagreement;  // the first difference found
  while (true) {
    // Fresh channels each round: a channel that found a peer not yet listening backs off for
    // seconds, longer than a peer that found a difference stays up to be seen.
    SF_ASSIGN_OR_RETURN(auto probes, NewProbeCache(cluster.Security()));
    bool all = true;
    for (Peer& p : peers) {
      if (p.compared) continue;
      SF_ASSIGN_OR_RETURN(auto worker, probes->GetWorker(p.address, p.name));
      GetStatusResponse status;
      absl::Notification answered;
      absl::Status probe;
      worker->GetStatusAsync(
          &status,
          [&](const absl::Status& s) {
            probe = s;
            answered.Notify();
          },
          /*timeout_ms=*/1000);
      answered.WaitForNotification();
      if (!probe.ok()) {
        all = false;
        continue;
      }
      p.compared = true;
      if (status.labels().empty()) continue;  // not started by `shardflow train`
      for (const auto& [key, mine] : labels) {
        if (!p.same_job &&
            std::find(across_jobs.begin(), across_jobs.end(), key) == across_jobs.end()) {
          continue;
        }
        auto it = status.labels().find(key);
        const std::string theirs = it == status.labels().end() ? "(not given)" : it->second;
        if (theirs == mine || !disagreement.ok()) continue;
        disagreement = absl::FailedPreconditionError(
            absl::StrCat("task ", p.name, " at ", p.address, " was started with ", key, " ", theirs,
                         " and this task with ", key, " ", mine,
                         ": start every task of the job with the same training flags"));
      }
    }
    if (all || absl::Now() >= deadline) {
      // Every peer that came up probes this task too; stay long enough for them to see the
      // difference (they probe every 200 ms) and fail with it rather than wait for a task
      // that is gone.
      if (!disagreement.ok()) absl::SleepFor(absl::Seconds(2));
      return disagreement;
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

namespace {

constexpr char kJobDone[] = "shardflow_job_done";

// Whether the chief has marked this task's job done (MarkJobDone).
bool JobDone(Server* server) {
  for (Device* d : server->devices()) {
    if (d->resource_manager() != nullptr && d->resource_manager()->Lookup(kJobDone).ok()) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::Status MarkJobDone(const ClusterFlags& cluster, const std::vector<TaskId>& tasks) {
  if (tasks.empty()) return absl::OkStatus();
  Scope s = Scope::NewRootScope();
  std::vector<Operation> marks;
  for (const TaskId& t : tasks) {
    Scope ts = s.WithDevice(ClusterSpec::TaskName(t.job, t.task) + "/device:CPU:0")
                   .NewSubScope(absl::StrCat(t.job, "_", t.task));
    Output handle(OpBuilder(ts.WithOpName("done"), "VarHandleOp")
                      .Attr("dtype", DT_INT32)
                      .Attr("shape", TensorShape())
                      .Attr("shared_name", std::string(kJobDone))
                      .Finalize(),
                  0);
    marks.push_back(OpBuilder(ts.WithOpName("mark"), "AssignVariableOp")
                        .Input(handle)
                        .Input(Tensor::Scalar<int32_t>(1))
                        .Finalize());
  }
  ops::NoOp(s.WithOpName("mark_job_done").WithControlDependencies(marks));
  GraphDef def;
  SF_RETURN_IF_ERROR(s.ToGraphDef(&def));
  ClusterFlags quick = cluster;
  quick.connect_timeout = absl::Seconds(3);
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, quick.OpenSession(SessionOptions()));
  SF_RETURN_IF_ERROR(session->Create(def));
  std::vector<Tensor> out;
  return session->Run({}, {}, {"mark_job_done"}, &out);
}

absl::Status ServeUntilTasksLeave(Server* server, const ClusterSpec& spec,
                                  const std::vector<TaskId>& tasks, const SecurityOptions& security,
                                  absl::Duration first_wait, absl::Duration gone_after) {
  SF_ASSIGN_OR_RETURN(auto probes, NewProbeCache(security));
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
    const std::vector<absl::Status> statuses = ProbeTasks(workers, absl::Seconds(1));
    const absl::Time now = absl::Now();
    bool any = false;
    for (const absl::Status& s : statuses) {
      any |= s.ok();
      if (!s.ok()) last_error = std::string(s.message());
    }
    if (JobDone(server)) {
      std::printf("task %s: the chief says training is done; exiting\n",
                  server->task_name().c_str());
      std::fflush(stdout);
      return absl::OkStatus();
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
      // Gone without saying training is done: it failed (or was killed). An error exit lets a
      // cluster manager restart this task with the rest of the job (which resumes from the
      // last checkpoint).
      return absl::UnavailableError(absl::StrCat(
          tasks.size() == 1 ? "the chief " : "every worker (", who, tasks.size() == 1 ? "" : ")",
          " stopped answering (", last_error,
          ") before training was done; exiting with an error so that the job is restarted "
          "(training resumes from the last checkpoint with --auto-resume or --resume)"));
    }
    timespec wait{0, 250'000'000};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      std::printf("task %s: signalled, shutting down\n", server->task_name().c_str());
      return absl::OkStatus();
    }
  }
}

}  // namespace shardflow
