// Master: runs sessions whose graphs span the tasks of a cluster.
//
//   MasterOptions options;
//   options.cluster = spec;                                   // every task's address
//   SF_ASSIGN_OR_RETURN(std::shared_ptr<Master> master, Master::Create(options));
//   SF_ASSIGN_OR_RETURN(std::string handle, master->CreateSession(graph_def, config));
//   SF_RETURN_IF_ERROR(master->RunStep(handle, run_options, feeds, fetches, targets, &out, &md));
//
// A session asks every task for its devices and incarnation, places the whole graph once over
// all their devices (the session's placement policy; tasks are joined by
// options.inter_task_link in the cost model), and for each Run signature prunes the graph,
// partitions it by device (rendezvous keys carry each task's incarnation) and registers each
// task's partitions with it once. A step runs every task's partitions in parallel (RunGraph);
// the first error aborts the step on every other task, and the step fails with the error that
// names its cause — a task that died or became unreachable is noticed within the worker
// clients' keepalive bound (about 6 s by default). Run metadata of all tasks is merged, with
// each task's clock shifted into the master's when its step stats fall outside the RunGraph
// call as the master saw it.
//
// The master runs in a task's server (GrpcMasterService) or in the client's process
// (NewClusterSession).
//
// Thread safety: every method may be called concurrently.
#ifndef SHARDFLOW_DISTRIBUTED_MASTER_H_
#define SHARDFLOW_DISTRIBUTED_MASTER_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/protos/config.pb.h"
#include "core/protos/cost.pb.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "runtime/session.h"

namespace shardflow {

struct MasterOptions {
  ClusterSpec cluster;
  GrpcClientOptions client;
  // The link between devices of different tasks, for the cost policy.
  LinkDescription inter_task_link;
  MasterOptions() {
    inter_task_link.set_gbps(1.25);
    inter_task_link.set_latency_us(100);
  }
};

class MasterSession;

class Master {
 public:
  static absl::StatusOr<std::shared_ptr<Master>> Create(MasterOptions options);
  ~Master();

  // Errors: an unreachable task (naming it and its address), an invalid graph.
  absl::StatusOr<std::string> CreateSession(const GraphDef& graph,
                                            const SessionOptionsProto& config);
  absl::Status ExtendSession(const std::string& handle, const GraphDef& graph);
  absl::Status RunStep(const std::string& handle, const RunOptions& options,
                       const std::vector<std::pair<std::string, Tensor>>& feeds,
                       const std::vector<std::string>& fetches,
                       const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                       RunMetadata* metadata);
  absl::Status CloseSession(const std::string& handle);
  // Every device of every task.
  absl::StatusOr<std::vector<DeviceAttributes>> ListDevices();

  const ClusterSpec& cluster() const { return options_.cluster; }

 private:
  explicit Master(MasterOptions options);
  absl::StatusOr<std::shared_ptr<MasterSession>> Find(const std::string& handle);

  const MasterOptions options_;
  std::shared_ptr<GrpcWorkerCache> cache_;
  absl::Mutex mu_;
  int64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<MasterSession>> sessions_ ABSL_GUARDED_BY(mu_);
};

// A Session run by a master in this process (the client is the master).
absl::StatusOr<std::unique_ptr<Session>> NewClusterSession(std::shared_ptr<Master> master,
                                                           const SessionOptions& options);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_MASTER_H_
