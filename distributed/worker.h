// Worker: what one task does for a master and for its peers, independent of the wire.
//
// The gRPC service (distributed/grpc/grpc_worker_service.h) turns WorkerService calls into
// calls of these methods; a master in the same process may call them directly.
//
//   Worker worker("/job:worker/replica:0/task:0", devices, transport, incarnation);
//   worker.RegisterGraph(request, &response);        // partitions -> executors, once per graph
//   worker.RunGraphAsync(&run_request, &run_response, done);   // one step of this task's part
//   worker.RecvTensorAsync(step_id, key, done);      // a peer pulls a tensor of a local _Send
//   worker.AbortStep(step_id, status);               // every pending recv of the step fails
//   worker.CollectGarbage(absl::Now());              // the server calls this every second
//
// Steps. Each step id has one RemoteRendezvous on this worker, created by whichever comes
// first: RunGraph, a peer's RecvTensor (a peer may ask before this task has started the step)
// or AbortStep. A step is retired (its rendezvous dropped) once no RunGraph of it is running and
// nothing is left in its rendezvous (every sent tensor taken, no receiver waiting), or at once
// when it was aborted and nothing runs. The last kRetiredStepsKept retired step ids are
// remembered with their final status, so that a late RecvTensor or RunGraph for one gets that
// status instead of waiting forever; memory per worker is bounded by the steps in flight.
//
// Isolation (Note [Worker isolation] in worker.cc). Each registered graph keeps the task
// addresses of its own RegisterGraphRequest, and a step resolves peers only through the graph
// that runs it, so one session's request can never redirect another session's transfers. When
// the server knows the cluster (WorkerOptions::known_cluster), a request must agree with it. A
// step id is bound to the session of the first graph that runs it. Graph handles are random.
//
// A transport that pulls a tensor in parts (gRPC's ranged RecvTensor) keeps it itself once
// RecvTensorAsync has handed it over; it learns of aborted steps through the abort listener.
//
// Collection. CollectGarbage drops registered graphs that no step has run for
// graph_idle_timeout, and aborts steps that nothing runs here and nothing has touched for
// abandoned_step_timeout (tensors sent for a receiver that never came). Each collection is
// logged.
//
// Thread safety: every method may be called from any thread.
#ifndef SHARDFLOW_DISTRIBUTED_WORKER_H_
#define SHARDFLOW_DISTRIBUTED_WORKER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/platform/timer.h"
#include "core/protos/worker.pb.h"
#include "distributed/remote_rendezvous.h"
#include "distributed/transport.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/function_runtime.h"
#include "runtime/shared_kernels.h"

namespace shardflow {

inline constexpr size_t kRetiredStepsKept = 4096;

// Limits and timeouts of a worker (docs/distributed.md, "Security and limits").
struct WorkerOptions {
  // Task name -> "host:port", as this task's server knows the cluster. When not empty, every
  // address a RegisterGraphRequest gives must be this map's address for that task.
  std::map<std::string, std::string> known_cluster;
  // Published by GetStatus (GetStatusResponse.labels).
  std::map<std::string, std::string> labels;
  // RegisterGraph beyond this many registered graphs is RESOURCE_EXHAUSTED.
  int max_registered_graphs = 4096;
  // A new step beyond this many steps in flight is RESOURCE_EXHAUSTED.
  int max_active_steps = 4096;
  // A graph no step has run for this long is dropped (its master gets NOT_FOUND and
  // registers it again). Zero = never.
  absl::Duration graph_idle_timeout = absl::Hours(2);
  // A step nothing runs here and nothing has touched for this long (a sent tensor whose
  // receiver never came) is aborted. Zero = never.
  absl::Duration abandoned_step_timeout = absl::Minutes(10);
  // Shutdown first serves, for up to this long, the tensors of steps that finished here and
  // that peers have not taken yet (Note [Draining] in worker.cc). Zero = abort at once.
  absl::Duration shutdown_drain = absl::Seconds(5);
};

class Worker {
 public:
  using StatusCallback = std::function<void(const absl::Status&)>;
  using TensorCallback = std::function<void(const absl::Status&, const Tensor&)>;
  // Told of every step aborted here (AbortStep, a deadline, collection), with the status.
  using AbortListener = std::function<void(int64_t step_id, const absl::Status& status)>;

  // `task`: "/job:J/replica:0/task:T". `devices` and `transport` are borrowed and must outlive
  // the worker. `incarnation` must be nonzero and differ between runs of the process (the
  // server draws it at random).
  Worker(std::string task, std::vector<Device*> devices, TensorTransport* transport,
         uint64_t incarnation, WorkerOptions options = WorkerOptions());
  // Aborts every step and waits for running executors (see Shutdown).
  ~Worker();

  const std::string& task() const { return task_; }
  uint64_t incarnation() const { return incarnation_; }
  const std::vector<Device*>& devices() const { return devices_; }

  void GetStatus(GetStatusResponse* response) const;

  // Builds one executor per partition. Errors: a partition for a device this task does not
  // have, an invalid graph, a _Send/_Recv from a device of this task whose incarnation is not
  // this worker's (a graph partitioned for a previous run of the task), a _Recv from a task
  // `cluster` does not list, an address that disagrees with known_cluster, too many graphs.
  absl::Status RegisterGraph(const RegisterGraphRequest& request, RegisterGraphResponse* response);

  // Runs one step of a registered graph on every partition; `done` is called exactly once,
  // possibly on another thread, after every executor has finished. `request` and `response`
  // are borrowed until then. The step's status is its first error (which aborted it).
  // INVALID_ARGUMENT for args that are not the graph's _Arg indices (or repeat one), or whose
  // value is not a valid tensor; FAILED_PRECONDITION for a step id another session is using.
  void RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                     StatusCallback done);

  // Serves a peer: the tensor a local _Send left under `key` in step `step_id`, once it is
  // there. Errors: a malformed key, a key whose source device is not on this task, a key made
  // for another incarnation, the step's abort status, a step that already finished here.
  void RecvTensorAsync(int64_t step_id, const std::string& key, TensorCallback done);

  // OK while step `step_id` runs or is unknown here; the status it was aborted with, or ended
  // with when it failed.
  absl::Status StepStatus(int64_t step_id) const;

  // Sets the one listener told of aborted steps (before serving; replaces an earlier one).
  void SetAbortListener(AbortListener listener);

  // Drops a registered graph; running steps keep their executors until they end.
  absl::Status CleanupGraph(const std::string& graph_handle);

  // TF1's Session.reset: clears the resources (variables, queues, accumulators) of every device
  // when `containers` is empty or holds "" (the default container, where all of them live);
  // other names match nothing. Steps running keep what they hold until they end. At most
  // kMaxResetContainers names (INVALID_ARGUMENT otherwise: they come from the network).
  static constexpr int kMaxResetContainers = 64;
  absl::Status ResetResources(const std::vector<std::string>& containers);

  // Aborts step `step_id` here with `status` (not OK; OK becomes CANCELLED). Pending recvs
  // return it, and a RunGraph or RecvTensor of that step arriving later fails with it.
  void AbortStep(int64_t step_id, const absl::Status& status);

  // Serves what finished steps still hold for peers (up to shutdown_drain), then refuses new
  // work (UNAVAILABLE), aborts every step, and waits until no executor runs and no callback of
  // RunGraphAsync/RecvTensorAsync is still to come. Idempotent.
  void Shutdown();

  // Drops idle graphs and aborts abandoned steps as of `now` (see "Collection" above).
  void CollectGarbage(absl::Time now);

  // For tests and monitoring.
  int num_active_steps() const;
  int num_registered_graphs() const;

 private:
  // Task name -> address, as one RegisterGraphRequest gave them.
  using TaskAddresses = std::map<std::string, std::string>;
  struct RegisteredGraph {
    std::string handle;
    std::string session_handle;
    std::shared_ptr<const TaskAddresses> cluster;
    // The random ops' kernels of the session's graphs (runtime/shared_kernels.h); before the
    // executors, which use it. Freed with the session's last graph.
    std::shared_ptr<SharedKernels> shared_kernels;
    std::vector<std::unique_ptr<Executor>> executors;
    std::vector<Executor*> executor_ptrs;
    std::vector<int> arg_indices;  // _Arg indices the partitions read
    int num_retvals = 0;           // one past the largest _Retval index
    // Guarded by the worker's mu_.
    absl::Time last_used;
    int running = 0;
  };
  struct Step {
    std::shared_ptr<RemoteRendezvous> rendezvous;
    int running = 0;  // RunGraph calls of this step still running here
    int serving = 0;  // peers' RecvTensor calls waiting on this step
    // Set by the first RunGraph of the step: whose step it is and where its peers are.
    std::string session_handle;
    std::shared_ptr<const TaskAddresses> cluster;
    absl::Time last_activity;
    // Set when the step is aborted: the executors running it start no further kernel.
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  };

  // The step's state, created when absent; error when retired, shutting down, at the limit of
  // steps, or (for a RunGraph of `graph`) bound to another session.
  absl::StatusOr<std::shared_ptr<RemoteRendezvous>> AcquireStep(
      int64_t step_id, bool run, const RegisteredGraph* graph = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<RemoteRendezvous> NewRendezvous(int64_t step_id);
  // Called after a RunGraph (run) or a serve ends; retires the step when it is done.
  void ReleaseStep(int64_t step_id, bool run);
  void MaybeRetireLocked(int64_t step_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The address of `task` for step `step_id`, from the graph that runs the step.
  absl::StatusOr<std::string> ResolveTask(int64_t step_id, const std::string& task) const;
  // Checks a request's task addresses against known_cluster.
  absl::Status CheckClusterAddresses(const RegisterGraphRequest& request) const;
  // OK when `key` may be served by this task (well formed, sent here, this incarnation).
  absl::Status CheckServedKey(const std::string& key) const;
  void NotifyAbort(int64_t step_id, const absl::Status& status);
  Device* FindDevice(const std::string& name) const;
  // The kernels the graphs of `session_handle` share (a new set for a new session).
  std::shared_ptr<SharedKernels> SessionKernels(const std::string& session_handle)
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::string task_;
  const std::vector<Device*> devices_;
  TensorTransport* const transport_;
  const uint64_t incarnation_;
  const WorkerOptions options_;
  // Runs the graph functions of this task's steps (While) on its devices; declared before the
  // registered graphs, whose executors use it.
  FunctionRuntime functions_;

  mutable absl::Mutex mu_;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<RegisteredGraph>> graphs_ ABSL_GUARDED_BY(mu_);
  // Session handle -> the kernels its graphs share; expired entries are dropped as graphs
  // register.
  std::map<std::string, std::weak_ptr<SharedKernels>> session_kernels_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, Step> steps_ ABSL_GUARDED_BY(mu_);
  // Those of steps_ a RunGraph started (cluster set); the others only peers asked for so far.
  int started_steps_ ABSL_GUARDED_BY(mu_) = 0;
  // Retired steps, oldest first, with their final status.
  std::deque<int64_t> retired_order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int64_t, absl::Status> retired_ ABSL_GUARDED_BY(mu_);
  // RunGraph and serve callbacks still to come (Shutdown waits for 0).
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  AbortListener abort_listener_ ABSL_GUARDED_BY(mu_);
  // Ends steps at RunGraphRequest.timeout_ms. Last member: destroyed (joined) first, while the
  // state its callbacks touch is still there.
  Timer deadlines_{"step deadlines"};
};

// A random, nonzero 64-bit incarnation.
uint64_t NewIncarnation();

// A fresh handle that cannot be guessed: `prefix` and 128 random bits in hex.
std::string NewRandomHandle(const std::string& prefix);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_WORKER_H_
