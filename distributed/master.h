// Master: runs sessions whose graphs span the tasks of a cluster.
//
//   MasterOptions options;
//   options.cluster = spec;                                   // every task's address
//   SF_ASSIGN_OR_RETURN(std::shared_ptr<Master> master, Master::Create(options));
//   SF_ASSIGN_OR_RETURN(std::string handle, master->CreateSession(graph_def, config));
//   SF_RETURN_IF_ERROR(master->RunStep(handle, run_options, feeds, fetches, targets, &out, &md));
//   master->RunStepAsync(handle, run_options, feeds, fetches, targets, &out, &md, &call, done);
//
// A session asks every task for its devices and incarnation (all at once, each within
// options.connect_timeout; a task that does not answer is left out, and only a graph that asks
// for one of its devices fails, naming it), places the whole graph once over the devices (the
// session's placement policy; tasks are joined by options.inter_task_link in the cost model), and
// for each Run signature prunes the graph, partitions it by device (rendezvous keys carry each
// task's incarnation) and registers each task's partitions with it once. A step runs every task's
// partitions in parallel (RunGraph); the first error aborts the step on every other task, and the
// step fails with the error that names its cause — a task that died or became unreachable is
// noticed within the worker clients' keepalive bound (about 6 s by default). Run metadata of all
// tasks is merged, with each task's clock shifted into the master's when its step stats fall
// outside the RunGraph call as the master saw it.
//
// Limits (docs/distributed.md, "Security and limits"): graphs with internal ops (_Send, _Recv,
// _Arg, ...) are refused; at most options.max_sessions sessions are open at once; a step waits
// on no thread of the master (RunStepAsync finishes from the workers' replies), honours the
// caller's cancellation and deadline, and never runs longer than options.max_step_time; a
// session no call has used for options.session_idle_timeout is closed and its graphs cleaned
// up on the workers. Session handles are 128-bit random strings.
//
// The master runs in a task's server (ServerOptions::host_master) or in the client's process
// (NewInProcessMasterSession). It reaches the tasks through a WorkerCacheInterface: the one given
// in the options, else one of options.protocol (distributed/protocol.h).
//
// Thread safety: every method may be called concurrently.
#ifndef SHARDFLOW_DISTRIBUTED_MASTER_H_
#define SHARDFLOW_DISTRIBUTED_MASTER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/protos/config.pb.h"
#include "core/protos/cost.pb.h"
#include "distributed/cluster_spec.h"
#include "distributed/peer_watch.h"
#include "distributed/protocol.h"
#include "distributed/transport.h"
#include "distributed/worker_interface.h"
#include "runtime/session.h"

namespace shardflow {

struct MasterOptions {
  ClusterSpec cluster;
  // How the tasks are reached: a cache to share (a server's), else a new one of `protocol` with
  // `client` options.
  std::shared_ptr<WorkerCacheInterface> worker_cache;
  std::string protocol = kDefaultProtocol;
  WorkerClientOptions client;
  // The link between devices of different tasks, for the cost policy.
  LinkDescription inter_task_link;
  // How long CreateSession waits for a task to say what devices it has (a task that is
  // starting, or restarting, is waited for; one that is down costs this long once).
  absl::Duration connect_timeout = absl::Seconds(3);
  // A session no call has used for this long is closed. Zero = never.
  absl::Duration session_idle_timeout = absl::Hours(1);
  // CreateSession beyond this many open sessions is RESOURCE_EXHAUSTED.
  int max_sessions = 1024;
  // No step runs longer than this (RunOptions.timeout_in_ms and the caller's deadline may make
  // it shorter). Zero = no limit of the master's own.
  absl::Duration max_step_time = absl::ZeroDuration();
  // Tasks whose loss fails every step the master runs, even steps that do not run on them
  // (between-graph replication: the other workers); see distributed/peer_watch.h. May be null;
  // Master::SetPeerWatch replaces it.
  std::shared_ptr<PeerWatch> peer_watch;
  // The worker of a task in this process (Server::local_worker()), called directly for that
  // task instead of through the cache. May be null.
  std::shared_ptr<WorkerInterface> local_worker;
  MasterOptions() {
    inter_task_link.set_gbps(1.25);
    inter_task_link.set_latency_us(100);
  }
};

class MasterSession;
struct BetweenGraphSteps;

// What a caller may say about one RunStepAsync while it runs: when it must be done by, and that
// it no longer wants the result (Cancel; the step is aborted on every task and `done` gets
// CANCELLED).
struct StepCall {
  absl::Time deadline = absl::InfiniteFuture();
  CallCancellation cancellation;
};

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
  // Starts a step and returns once it runs on the tasks (placement, partitioning and
  // registration happen on the calling thread the first time a signature runs); `done` is
  // called exactly once, possibly on another thread, with the step's status. `outputs`,
  // `metadata` (may be null) and `call` (may be null) are borrowed until then.
  void RunStepAsync(const std::string& handle, const RunOptions& options,
                    std::vector<std::pair<std::string, Tensor>> feeds,
                    const std::vector<std::string>& fetches,
                    const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                    RunMetadata* metadata, StepCall* call, std::function<void(absl::Status)> done);
  absl::Status CloseSession(const std::string& handle);
  // Closes the sessions idle for longer than options.session_idle_timeout as of `now` (a
  // thread of the master calls this every few seconds when the timeout is set).
  void CollectGarbage(absl::Time now);
  int num_sessions();
  // Every device of every task that answers (an error only when none does).
  absl::StatusOr<std::vector<DeviceAttributes>> ListDevices();
  // TF1's Session.reset (master.proto's ResetRequest): every task (those `device_filters`
  // match) clears its resources in `containers`; the error names the tasks that did not.
  absl::Status Reset(const std::vector<std::string>& containers,
                     const std::vector<std::string>& device_filters);

  const ClusterSpec& cluster() const { return options_.cluster; }
  // From now on, steps that start are cancelled when `watch` loses a task (null: none are).
  void SetPeerWatch(std::shared_ptr<PeerWatch> watch);

 private:
  Master(MasterOptions options, std::shared_ptr<WorkerCacheInterface> cache);
  absl::StatusOr<std::shared_ptr<MasterSession>> Find(const std::string& handle);

  const MasterOptions options_;
  std::shared_ptr<WorkerCacheInterface> cache_;
  // Note [Between-graph step ids] in master_session.h: shared by every session of this master.
  std::shared_ptr<BetweenGraphSteps> between_graph_steps_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<MasterSession>> sessions_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<PeerWatch> peer_watch_ ABSL_GUARDED_BY(mu_);
  // The collector thread (when session_idle_timeout is set) stops when this is notified.
  absl::Notification stop_;
  std::thread collector_;
};

// A Session run by a master in this process (the client is the master).
absl::StatusOr<std::unique_ptr<Session>> NewInProcessMasterSession(std::shared_ptr<Master> master,
                                                                   const SessionOptions& options);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_MASTER_H_
