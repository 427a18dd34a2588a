// Data parallelism by all-reduce (Horovod, PyTorch DDP style), built into one graph: one replica
// of the model per device (a device of one task, or one task each), every replica's gradients
// averaged across replicas with CollectiveReduce before each replica applies them to its own
// copy of the variables, so all copies stay equal; replica 0's variables are broadcast to the
// others once at the start (SyncOp).
//
//   SF_ASSIGN_OR_RETURN(AllReduceTraining dp, BuildAllReduceTraining(
//       scope, {"/job:worker/replica:0/task:0/device:CPU:0", ".../task:1/device:CPU:0"},
//       [&](const Scope& s, int replica) -> absl::StatusOr<Output> { ...; return loss; },
//       [] { return std::make_unique<GradientDescentOptimizer>(0.1); }));
//   session->Run({}, {}, {dp.init_op.node()->name()}, &out);   // then dp.sync_op
//   session->Run(feeds_of_every_replica, {...}, {dp.train_op.node()->name()}, &out);
//
// Replica 0 is built in `scope` itself (its variables keep the names a single-replica model
// has, so checkpoints are interchangeable); replica r > 0 in the sub-scope "replica_r". Each
// replica's ops, variables and optimizer slots are on its device. The gradient of variable k
// is all-reduced as instance k + 1 of `group_key` (its mean: the update is the one a single
// replica would make on the replicas' batches together); the broadcast of variable k is
// instance k + 1 + (number of variables).
#ifndef SHARDFLOW_DISTRIBUTED_STRATEGIES_ALL_REDUCE_H_
#define SHARDFLOW_DISTRIBUTED_STRATEGIES_ALL_REDUCE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/training.h"

namespace shardflow {

struct AllReduceTraining {
  std::vector<Output> losses;              // per replica
  std::vector<std::vector<Var>> variables;  // per replica, the trainable variables, one order
  Operation train_op;                       // every replica's update
  Operation sync_op;                        // replica 0's variables to the others
};

using ReplicaBuilder = std::function<absl::StatusOr<Output>(const Scope& scope, int replica)>;
using OptimizerFactory = std::function<std::unique_ptr<Optimizer>()>;
// Made per replica from its loss; the replica's updates run only after it (e.g. a check that
// the loss is finite, so a bad step updates nothing).
using UpdateGate = std::function<Output(const Scope& scope, const Output& loss)>;

// Errors: no device; a replica whose variables differ from replica 0's (names, shapes, dtypes);
// the builder's or the optimizer's errors.
absl::StatusOr<AllReduceTraining> BuildAllReduceTraining(const Scope& scope,
                                                         const std::vector<std::string>& devices,
                                                         const ReplicaBuilder& build,
                                                         const OptimizerFactory& make_optimizer,
                                                         int64_t group_key = 1,
                                                         const UpdateGate& gate = nullptr);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_STRATEGIES_ALL_REDUCE_H_
