// ClusterSpec: which tasks make up a cluster and where each one listens.
//
//   {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"], "ps": ["10.0.0.3:2222"]}
//
//   SF_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::FromJsonFile("cluster.json"));
//   SF_ASSIGN_OR_RETURN(std::string address, spec.TaskAddress("worker", 1));  // "10.0.0.2:2222"
//   spec.TaskName("worker", 1)                          // "/job:worker/replica:0/task:1"
//
// Task T of job J is the T-th address of J's list; its devices are named
// "/job:J/replica:0/task:T/device:TYPE:ID".
//
// Thread safety: a const ClusterSpec may be read from any thread.
#ifndef SHARDFLOW_DISTRIBUTED_CLUSTER_SPEC_H_
#define SHARDFLOW_DISTRIBUTED_CLUSTER_SPEC_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shardflow {

struct TaskId {
  std::string job;
  int task = 0;
  // "/job:J/replica:0/task:T"
  std::string Name() const;
  bool operator==(const TaskId& o) const { return job == o.job && task == o.task; }
  bool operator<(const TaskId& o) const { return job != o.job ? job < o.job : task < o.task; }
};

class ClusterSpec {
 public:
  ClusterSpec() = default;

  // Parses the JSON form. `source` names the text in errors (a file name or "--cluster").
  // Errors: not JSON, not an object, a job whose value is not a list of "host:port" strings,
  // an address without a port, a job name that is not a letter followed by [a-zA-Z0-9_]*, no job at
  // all.
  static absl::StatusOr<ClusterSpec> FromJson(const std::string& json,
                                              const std::string& source = "cluster spec");
  static absl::StatusOr<ClusterSpec> FromJsonFile(const std::string& path);
  // Builds one from job -> addresses, with the same checks as FromJson.
  static absl::StatusOr<ClusterSpec> FromMap(std::map<std::string, std::vector<std::string>> jobs,
                                             const std::string& source = "cluster spec");

  // "host:port" of task `task` of `job`; error naming the job's size when out of range.
  absl::StatusOr<std::string> TaskAddress(const std::string& job, int task) const;
  // The address of a task given by name ("/job:J/replica:0/task:T", or any device name in it).
  absl::StatusOr<std::string> TaskAddress(const std::string& task_or_device_name) const;
  // "/job:J/replica:0/task:T" (no check that the task exists).
  static std::string TaskName(const std::string& job, int task);

  std::vector<std::string> jobs() const;
  int num_tasks(const std::string& job) const;
  // Every task, jobs in name order, tasks in index order.
  std::vector<TaskId> tasks() const;
  bool HasTask(const std::string& job, int task) const;
  const std::map<std::string, std::vector<std::string>>& job_addresses() const { return jobs_; }
  // Task name -> address for every task (the form RegisterGraphRequest.cluster takes).
  std::map<std::string, std::string> TaskAddresses() const;
  // How `other` (task name -> address, as TaskAddresses) differs from this spec, in words
  // ("it has no task /job:ps/replica:0/task:1 (h:2 here)"): the first difference; "" when none.
  std::string DifferenceFrom(const std::map<std::string, std::string>& other) const;

  std::string ToJson() const;

 private:
  std::map<std::string, std::vector<std::string>> jobs_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_CLUSTER_SPEC_H_
