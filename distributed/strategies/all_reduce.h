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
// replica's ops, variables and optimizer slots are on its device. Gradients are all-reduced as
// means (the update is the one a single replica would make on the replicas' batches together).
//
// Note [Gradient buckets]. Small gradients are fused: taken from the last variable to the first
// (the order backpropagation produces them), gradients of one dtype are flattened and
// concatenated into buckets of at most bucket_bytes (a larger gradient is a bucket of its own),
// each bucket is one all-reduce (instance 1, 2, ... of group_key) and is split back. A bucket
// depends only on its own gradients, so the first buckets are on the wire while the rest of the
// backward pass still runs. Fewer, larger messages: the MLP's six gradients are two all-reduces
// at the default 4 MiB instead of six. The broadcast of variable k is instance 2^20 + k.
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
  std::vector<Output> losses;               // per replica
  std::vector<std::vector<Var>> variables;  // per replica, the trainable variables, one order
  Operation train_op;                       // every replica's update
  Operation sync_op;                        // replica 0's variables to the others
  Operation average_op;                     // average_parameters only: the mean to everyone
};

using ReplicaBuilder = std::function<absl::StatusOr<Output>(const Scope& scope, int replica)>;
using OptimizerFactory = std::function<std::unique_ptr<Optimizer>()>;
// Made per replica from its loss; the replica's updates run only after it (e.g. a check that
// the loss is finite, so a bad step updates nothing).
using UpdateGate = std::function<Output(const Scope& scope, const Output& loss)>;

struct AllReduceOptions {
  int64_t group_key = 1;
  // Note [Gradient buckets]; 0 = one all-reduce per gradient.
  int64_t bucket_bytes = 4 << 20;
  // Gradient compression (Horovod's Compression.fp16): each float32 bucket is cast to this dtype
  // (DT_HALF or DT_BFLOAT16) for its all-reduce and back to float32 after, so half the bytes
  // cross the network and the ring sums half the memory (in float, rounded to the dtype at each
  // hop). The variables and the optimizer stay float32. DT_INVALID: float32 on the wire.
  DataType compression = DT_INVALID;
  UpdateGate gate;  // may be empty
  // Parameter averaging (DL4J on Spark) instead of gradient averaging: train_op applies each
  // replica's own gradients to its own variables, with no communication; average_op (run every
  // k steps) replaces every replica's variables by their mean across replicas (instances
  // 2^21 + k), and also its optimizer's state (slots such as momentum or Adam's moments) when
  // average_optimizer_state is set.
  bool average_parameters = false;
  bool average_optimizer_state = true;
  // Between-graph replication (Note [Between-graph groups] in
  // runtime/collectives/group_resolution.h): this graph builds replica `between_graph_rank` of
  // the devices.size() replicas only, in `scope` itself on its device; the other tasks build
  // theirs in their own graphs with the same devices and options, and run the same ops in the
  // same order (train_op every step, sync_op once, average_op at the same steps). losses and
  // variables then hold that one replica. -1: every replica in this graph (in-graph).
  int between_graph_rank = -1;
};

// Errors: no device; a compression that is not DT_HALF or DT_BFLOAT16; a between_graph_rank not
// below the number of devices; a replica whose variables differ from replica 0's (names, shapes,
// dtypes); the builder's or the optimizer's errors.
absl::StatusOr<AllReduceTraining> BuildAllReduceTraining(const Scope& scope,
                                                         const std::vector<std::string>& devices,
                                                         const ReplicaBuilder& build,
                                                         const OptimizerFactory& make_optimizer,
                                                         const AllReduceOptions& options = {});

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_STRATEGIES_ALL_REDUCE_H_
