// One process per task for `shardflow train --cluster FILE --job J --task N` (as TensorFlow's
// between-graph scripts and launchers start them): the process serves its own task of the
// cluster; task 0 of the job (the chief) also runs the training loop, the others serve until the
// chief has finished.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_TASK_SERVER_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_TASK_SERVER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "distributed/cluster_spec.h"
#include "distributed/server.h"
#include "tools/shardflow/cluster_flags.h"

namespace shardflow {

// This process's task (job, task) of the --cluster file, with `devices` CPU devices and
// `threads` per device (0 = the cores) and the cluster flags' token and plaintext setting;
// `labels` are published to peers (GetStatusResponse.labels). Errors: no such task in the
// file, its address cannot be bound, a non-loopback address without --plaintext.
absl::StatusOr<std::unique_ptr<Server>> StartTaskServer(
    const ClusterFlags& cluster, const std::string& job, int task, int threads, int devices = 1,
    const std::map<std::string, std::string>& labels = {});

// Checks that every other task of this task's job that answers within `wait` published the
// same `labels` as this task, and the tasks of other jobs the same `across_jobs` labels (a
// peer that publishes none, or never answers, is not compared: the steps fail on their own
// then). Errors: FAILED_PRECONDITION naming the task, the label and both values.
absl::Status CheckPeersAgree(const ClusterFlags& cluster, const ClusterSpec& spec,
                             const TaskId& self, const std::map<std::string, std::string>& labels,
                             const std::vector<std::string>& across_jobs, absl::Duration wait);

// Tells `tasks` (serving in ServeUntilTasksLeave) that training is done, so they exit 0 (a
// variable "shardflow_job_done" on each task's CPU:0). Errors: a task that cannot be reached.
absl::Status MarkJobDone(const ClusterFlags& cluster, const std::vector<TaskId>& tasks);

// Serves until the chief marks the job done (MarkJobDone: exit 0), or until SIGTERM / SIGINT.
// Errors: the tasks it waits for (the chief; for a ps task, every worker) answered and then
// none of them did for `gone_after` without marking the job done (they failed or were killed:
// the error exit lets a cluster manager restart this task with the job); none of them answered
// within `first_wait` (naming them and their addresses).
absl::Status ServeUntilTasksLeave(Server* server, const ClusterSpec& spec,
                                  const std::vector<TaskId>& tasks, const SecurityOptions& security,
                                  absl::Duration first_wait, absl::Duration gone_after);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_TASK_SERVER_H_
