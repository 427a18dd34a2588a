// CollectiveExecutor: how kernels reach collective operations (all-reduce, broadcast,
// all-gather) among the members of a group, the way _Send/_Recv reach the rendezvous.
//
//   // in an AsyncOpKernel:
//   CollectiveExecutor* collectives = ctx->collective_executor();   // null: none this step
//   collectives->AllReduceAsync(params, ctx->input(0), output, [done](absl::Status s) { ... });
//
// A group is a set of devices (possibly in several tasks) that run collectives together; every
// member names it with the same group_key and knows the group's size and its own rank. One
// collective op instance is named by its instance_key: the members' ops with the same
// (group_key, instance_key) in a step meet and exchange data. An implementation (a ring over
// the engine's transports, NCCL between GPUs, an in-process one for devices of one process)
// lives above the runtime and is handed to the executor per step (Executor::Args); the
// executor and the sessions know only this interface.
//
// Contracts: each call's `done` is called exactly once, possibly on another thread, after
// `output` is written (or with an error). After StartAbort every pending and later call fails
// with the abort status, so a member that died never leaves the others waiting.
#ifndef SHARDFLOW_CORE_FRAMEWORK_COLLECTIVE_H_
#define SHARDFLOW_CORE_FRAMEWORK_COLLECTIVE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/framework/tensor.h"

namespace shardflow {

enum class ReductionOp { kSum, kMean, kMin, kMax, kProd };

struct CollectiveParams {
  int64_t group_key = 0;     // the group, as every member names it
  int group_size = 0;        // members in the group
  int rank = 0;              // this member, in [0, group_size)
  int64_t instance_key = 0;  // the collective op instance, as every member names it
  std::string device;        // this member's device, for errors
  // Every member's device and its process's incarnation, in rank order (devices[rank] ==
  // device). Resolved before the step runs (runtime/collectives/group_resolution.h).
  std::vector<std::string> devices;
  std::vector<uint64_t> incarnations;
  ReductionOp reduction = ReductionOp::kSum;  // for AllReduce
  int source_rank = 0;                        // for Broadcast
};

class CollectiveExecutor {
 public:
  using DoneCallback = std::function<void(const absl::Status&)>;
  virtual ~CollectiveExecutor() = default;

  // `output` (same dtype and shape as `input`, borrowed until `done`) receives the reduction of
  // every member's `input`.
  virtual void AllReduceAsync(const CollectiveParams& params, const Tensor& input, Tensor* output,
                              DoneCallback done) = 0;
  // Every member's `output` receives the `input` of member params.source_rank (the others'
  // inputs are ignored).
  virtual void BroadcastAsync(const CollectiveParams& params, const Tensor& input, Tensor* output,
                              DoneCallback done) = 0;
  // `output` receives the members' inputs concatenated along dimension 0, in rank order.
  virtual void AllGatherAsync(const CollectiveParams& params, const Tensor& input, Tensor* output,
                              DoneCallback done) = 0;
  // Fails every pending and later call of this step with `status`.
  virtual void StartAbort(const absl::Status& status) = 0;
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_COLLECTIVE_H_
