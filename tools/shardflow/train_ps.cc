#include "tools/shardflow/train_ps.h"

#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/platform/status.h"
#include "distributed/cluster_spec.h"

namespace shardflow {
namespace {

// Polls `count` (an int32 scalar) until it reaches `want`, for at most `limit`; `what` and
// `who` name the wait in the error.
absl::Status WaitForCount(Session* session, const Output& count, int64_t want, absl::Duration limit,
                          const std::string& what, const std::string& who) {
  const absl::Time end = absl::Now() + limit;
  std::vector<Tensor> out;
  while (true) {
    SF_RETURN_IF_ERROR(session->Run({}, {count.name()}, {}, &out));
    if (out[0].scalar<int32_t>() >= want) return absl::OkStatus();
    if (absl::Now() > end) {
      return absl::DeadlineExceededError(
          absl::StrCat("waited ", absl::FormatDuration(limit), " for ", what, "; check ", who,
                       " (its output says why it is late or failed)"));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace

absl::Status SetUpParameterServerWorker(TrainConfig* c) {
  const std::string how = absl::StrCat(
      "--strategy ", c->strategy,
      " runs one process per task: give --cluster FILE with a \"ps\" and a \"worker\" job, "
      "and --job ps|worker --task N");
  if (c->cluster.cluster.empty() || c->task < 0) return absl::InvalidArgumentError(how);
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, c->cluster.Spec());
  if (spec.num_tasks("ps") == 0 || spec.num_tasks("worker") == 0) {
    if (c->cluster.is_auto()) {
      // mpirun, srun and torchrun give ranks of one job; only TF_CONFIG and the Kubernetes
      // ps Job name a ps job.
      return absl::InvalidArgumentError(absl::StrCat(
          "--strategy ", c->strategy,
          " needs a \"ps\" and a \"worker\" job, but the cluster "
          "the launcher gave has jobs [",
          absl::StrJoin(spec.jobs(), ", "),
          "]: mpirun, srun and torchrun start the ranks of one job; give TF_CONFIG with both "
          "jobs (or the Kubernetes ps Job, docs/deploy.md), or --cluster FILE with --job "
          "ps|worker --task N, or use --strategy allreduce|averaging"));
    }
    return absl::InvalidArgumentError(absl::StrCat("the cluster file ", c->cluster.cluster,
                                                   " has jobs [", absl::StrJoin(spec.jobs(), ", "),
                                                   "]; ", how));
  }
  if (c->job != "ps" && c->job != "worker") {
    return absl::InvalidArgumentError(absl::StrCat("--job ", c->job, ": ", how));
  }
  for (int t = 0; t < spec.num_tasks("ps"); ++t) {
    c->ps_devices.push_back(ClusterSpec::TaskName("ps", t) + "/device:CPU:0");
  }
  c->worker_device = absl::StrCat(ClusterSpec::TaskName("worker", static_cast<int>(c->task)),
                                  "/device:", ComputeDeviceType(*c), ":0");
  c->num_workers = spec.num_tasks("worker");
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PeerWatch>> WatchOtherTasks(const TrainConfig& c) {
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, c.cluster.Spec());
  std::vector<TaskId> others;
  for (const TaskId& t : spec.tasks()) {
    if (t.job != c.job || t.task != c.task) others.push_back(t);
  }
  return PeerWatch::Start(spec, others, c.cluster.Security());
}

absl::Status StartParameterServerWorker(Session* session, const TrainGraph& g, const TrainConfig& c,
                                        int64_t steps_per_epoch, Position* at,
                                        std::unique_ptr<SyncUpdateLoop>* update_loop) {
  const bool sync = c.strategy == "ps-sync";
  std::vector<Tensor> out;
  if (c.task == 0) {
    if (sync) {
      SF_RETURN_IF_ERROR(session->Run({}, {}, {g.ps.chief_init_op.node()->name()}, &out));
      *update_loop =
          std::make_unique<SyncUpdateLoop>(session, g, c, at->global_step, steps_per_epoch);
    }
    SF_RETURN_IF_ERROR(session->Run({}, {}, {g.ps.ready_op.node()->name()}, &out));
  } else {
    SF_RETURN_IF_ERROR(WaitForCount(session, g.ps.is_ready, 1, absl::Minutes(10),
                                    "the chief to initialise or restore the model",
                                    "the chief (--job worker --task 0)"));
    SF_RETURN_IF_ERROR(session->Run({}, {g.ps.global_step.value().name()}, {}, &out));
    const int64_t step = out[0].scalar<int64_t>();
    const int64_t batches = sync ? step : step / c.num_workers;  // async: one per worker step
    *at = {batches / steps_per_epoch, batches % steps_per_epoch, batches};
  }
  if (sync)
    SF_RETURN_IF_ERROR(session->Run({}, {}, {g.ps.local_step_init_op.node()->name()}, &out));
  std::map<std::string, int> per_ps;
  for (const auto& [name, device] : g.ps.variable_devices) ++per_ps[device];
  std::vector<std::string> spread;
  for (const auto& [device, n] : per_ps) spread.push_back(absl::StrCat(n, " on ", device));
  absl::PrintF(
      "data parallel: %s parameter servers, %d workers, %d examples each per step; "
      "variables: %s\nworker %d starts at global step %d\n",
      sync ? "synchronous" : "asynchronous", c.num_workers, c.batch_size / c.num_workers,
      absl::StrJoin(spread, ", "), c.task, at->global_step);
  return absl::OkStatus();
}

absl::Status FinishParameterServerWorker(Session* session, const TrainGraph& g,
                                         const TrainConfig& c, PeerWatch* watch,
                                         SyncUpdateLoop* update_loop) {
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run({}, {}, {g.ps.done_op.node()->name()}, &out));
  SF_RETURN_IF_ERROR(WaitForCount(session, g.ps.num_done, c.num_workers, absl::Hours(1),
                                  "every worker to finish its steps", "the other workers"));
  watch->Stop();
  if (update_loop != nullptr) SF_RETURN_IF_ERROR(update_loop->Finish());
  if (c.strategy == "ps-sync" && c.task == 0) {
    SF_RETURN_IF_ERROR(session->Run({}, {g.ps.num_dropped.name()}, {}, &out));
    absl::PrintF("stale gradients dropped: %d\n", out[0].scalar<int64_t>());
  }
  return absl::OkStatus();
}

}  // namespace shardflow
