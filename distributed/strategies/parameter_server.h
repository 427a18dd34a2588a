// Data parallelism with parameter servers (TensorFlow 1.x between-graph replication), built into
// one worker's graph: each worker process builds the model on its own device, the variables
// (with the optimizer's slots and the global step) live on the ps tasks, and
//
//   - asynchronously (sync = false): every worker applies its own gradients to the variables on
//     the ps as soon as it has them and advances the global step; nothing waits for anyone.
//     `staleness` tells, per step, how many updates of other workers landed between this
//     step's read of the variables and its own update (0 for a worker alone).
//   - synchronously (sync = true, TF1's SyncReplicasOptimizer): a worker's step adds its
//     gradients to accumulators on the ps (ResourceConditionalAccumulator, one per variable)
//     and then waits for a token from a queue on the global step's task. The chief runs
//     update_op in a loop: it takes the mean of the first replicas_to_aggregate fresh gradients
//     of each variable, applies them with the optimizer, advances the global step and hands out
//     total_num_replicas tokens carrying it. A gradient computed for an older step (a
//     straggler's) is counted and dropped. With plain SGD, N workers on batches b_1..b_N take the
//     step one worker takes on their concatenation.
//
//   ParameterServerOptions o;
//   o.ps_devices = {"/job:ps/replica:0/task:0/device:CPU:0"};
//   o.worker_device = "/job:worker/replica:0/task:1/device:CPU:0";
//   o.sync = true; o.replicas_to_aggregate = o.total_num_replicas = 2;
//   SF_ASSIGN_OR_RETURN(ParameterServerTraining ps, BuildParameterServerTraining(
//       scope, o, [&](const Scope& s) -> absl::StatusOr<Output> { ...; return loss; },
//       [] { return std::make_unique<GradientDescentOptimizer>(0.1); }));
//
// The chief initialises (or restores) the variables, runs chief_init_op, then ready_op; the
// other workers wait until is_ready says 1 before their first step. Every worker runs
// local_step_init_op before its first step (sync).
//
// Note [Variables on parameter servers]. Trainable variables go to the ps tasks in creation
// order, each to the one with the fewest bytes so far (GreedyLoadBalancingStrategy of TF1; with
// equal sizes that is round-robin); an optimizer slot "<var>/<slot>" goes where its variable is
// (its update reads both), other variables (the global step, Adam's step count) to the least
// loaded ps. A variable's reads, assignments and updates run where it lives (the placer
// colocates users of a resource handle); the forward and backward passes run on the worker, so
// the parameters travel ps -> worker and the gradients worker -> ps every step.
#ifndef SHARDFLOW_DISTRIBUTED_STRATEGIES_PARAMETER_SERVER_H_
#define SHARDFLOW_DISTRIBUTED_STRATEGIES_PARAMETER_SERVER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "distributed/strategies/all_reduce.h"
#include "ops/training.h"

namespace shardflow {

struct ParameterServerOptions {
  std::vector<std::string> ps_devices;  // one per ps task
  std::string worker_device;            // this worker's
  bool sync = false;
  int replicas_to_aggregate = 1;  // sync: gradients averaged per step
  int total_num_replicas = 1;     // sync: workers (more than replicas_to_aggregate: backups)
  UpdateGate gate;                // may be empty: updates run after gate(scope, loss)
};

struct ParameterServerTraining {
  Output loss;
  Var global_step;     // int64, on the first ps task
  Operation train_op;  // this worker's step
  Output staleness;    // async: int64 scalar (see above); fetch it with train_op
  // Readiness: the chief runs ready_op once the variables hold their values; is_ready (int32
  // scalar, > 0 when ready) is what the others poll. Not a variable, so never checkpointed.
  Operation ready_op;
  Output is_ready;
  // The end: each worker runs done_op after its last step and waits until num_done (int32)
  // counts every worker before it leaves, so a worker that finished is never mistaken for one
  // that died (a PeerWatch would fail the others' steps).
  Operation done_op;
  Output num_done;
  // Sync only.
  Operation chief_init_op;       // the accumulators to the global step (after init or restore)
  Operation local_step_init_op;  // this worker's local step := the global step
  Operation update_op;           // the chief's loop body
  Operation close_op;            // closes the accumulators and the token queue (ends waits)
  Output num_dropped;            // int64: stale gradients dropped so far, all variables
  // Where each variable lives (shared name -> device).
  std::map<std::string, std::string> variable_devices;
};

// Errors: no ps device or worker device; replicas_to_aggregate < 1 or larger than
// total_num_replicas; the builder's or the optimizer's errors.
absl::StatusOr<ParameterServerTraining> BuildParameterServerTraining(
    const Scope& scope, const ParameterServerOptions& options,
    const std::function<absl::StatusOr<Output>(const Scope& scope)>& build,
    const OptimizerFactory& make_optimizer);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_STRATEGIES_PARAMETER_SERVER_H_
