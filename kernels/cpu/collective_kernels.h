// The kernels of the collective ops (ops/collective_ops.cc), shared by the CPU registrations
// (kernels/cpu/collective_ops.cc) and the GPU ones (kernels/gpu/collective_ops.cc): each reads
// its group from the attrs group resolution filled in (runtime/collectives/group_resolution.h)
// and hands the exchange to the step's CollectiveExecutor (core/framework/collective.h),
// asynchronously: no thread waits for the other members. A device kernel overrides Exchange.
#ifndef SHARDFLOW_KERNELS_CPU_COLLECTIVE_KERNELS_H_
#define SHARDFLOW_KERNELS_CPU_COLLECTIVE_KERNELS_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/framework/collective.h"
#include "core/framework/op_kernel.h"

namespace shardflow {

enum class CollectiveKind { kAllReduce, kBroadcast, kAllGather };

// Hands one collective of `kind` to `collectives` (AllReduceAsync, BroadcastAsync or
// AllGatherAsync).
inline void RunCollective(CollectiveExecutor* collectives, CollectiveKind kind,
                          const CollectiveParams& params, const Tensor& input, Tensor* output,
                          CollectiveExecutor::DoneCallback done) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      collectives->AllReduceAsync(params, input, output, std::move(done));
      return;
    case CollectiveKind::kBroadcast:
      collectives->BroadcastAsync(params, input, output, std::move(done));
      return;
    case CollectiveKind::kAllGather:
      collectives->AllGatherAsync(params, input, output, std::move(done));
      return;
  }
}

class CollectiveOpKernel : public AsyncOpKernel {
 public:
  explicit CollectiveOpKernel(OpKernelConstruction* c) : AsyncOpKernel(c) {
    int64_t group_size = 0;
    std::string devices;
    std::vector<int64_t> incarnations;
    absl::Status s = c->GetAttr("group_size", &group_size);
    if (s.ok()) s = c->GetAttr("group_key", &params_.group_key);
    if (s.ok()) s = c->GetAttr("instance_key", &params_.instance_key);
    if (s.ok()) s = c->GetAttr("_group_devices", &devices);
    if (s.ok()) s = c->GetAttr("_group_incarnations", &incarnations);
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    params_.group_size = static_cast<int>(group_size);
    params_.device = c->device()->name();
    if (!devices.empty()) params_.devices = absl::StrSplit(devices, ',');
    for (int64_t i : incarnations) params_.incarnations.push_back(static_cast<uint64_t>(i));
    auto it = std::find(params_.devices.begin(), params_.devices.end(), params_.device);
    if (static_cast<int64_t>(params_.devices.size()) != group_size ||
        params_.incarnations.size() != params_.devices.size() || it == params_.devices.end()) {
      c->SetStatus(absl::FailedPreconditionError(absl::StrCat(
          type_string(), " '", name(), "' (group ", params_.group_key, ") on ", params_.device,
          " has no resolved group (members: '", devices,
          "'): collective ops run in a session, which finds every member of the group in the "
          "graph; they cannot run one at a time (eager RunOp)")));
      return;
    }
    params_.rank = static_cast<int>(it - params_.devices.begin());
  }
  bool IsExpensive() const override { return false; }

 protected:
  // Hands the exchange to the step's CollectiveExecutor. Kernels of devices with memory of their
  // own override it (kernels/gpu/collective_ops.cc: NCCL between GPUs, or staging through host
  // memory). `output` is the op's output 0 (for a broadcast's receiver, a placeholder of the
  // expected dtype and shape that the exchange replaces).
  virtual void Exchange(OpKernelContext* ctx, CollectiveExecutor* collectives, CollectiveKind kind,
                        const Tensor& input, Tensor* output,
                        CollectiveExecutor::DoneCallback done) {
    RunCollective(collectives, kind, params_, input, output, std::move(done));
  }
  // Checks that the step has collectives; calls `done` and returns null otherwise.
  CollectiveExecutor* Executor(OpKernelContext* ctx, const DoneCallback& done) {
    CollectiveExecutor* collectives = ctx->collective_executor();
    if (collectives == nullptr) {
      ctx->SetStatus(absl::FailedPreconditionError(
          absl::StrCat(type_string(), " '", name(),
                       "' runs in a step without a "
                       "CollectiveExecutor (Executor::Args::collective_executor)")));
      done();
    }
    return collectives;
  }
  // For the trace: the group, this member's place in it, its ring neighbours and the bytes.
  // The all-reduce's ring: from the member before, to the one after. A broadcast names its
  // source, an all-gather every member.
  void Label(OpKernelContext* ctx, int64_t bytes) const {
    const int n = params_.group_size, r = params_.rank;
    std::string peers;
    if (type_string() == "CollectiveReduce" && n > 1) {
      peers = absl::StrCat(", ring from ", params_.devices[(r + n - 1) % n], " to ",
                           params_.devices[(r + 1) % n]);
    } else if (type_string() == "CollectiveGather") {
      peers = absl::StrCat(", members ", absl::StrJoin(params_.devices, " "));
    } else if (n > 1) {
      peers = absl::StrCat(", source ", params_.devices[params_.source_rank]);
    }
    ctx->set_timeline_label(absl::StrCat("group ", params_.group_key, " instance ",
                                         params_.instance_key, ": rank ", r, " of ", n, peers, ", ",
                                         bytes, " bytes"));
  }
  static CollectiveExecutor::DoneCallback Finish(OpKernelContext* ctx, DoneCallback done) {
    return [ctx, done = std::move(done)](const absl::Status& s) {
      if (!s.ok()) ctx->SetStatus(s);
      done();
    };
  }

  CollectiveParams params_;
};

class CollectiveReduceOp : public CollectiveOpKernel {
 public:
  explicit CollectiveReduceOp(OpKernelConstruction* c) : CollectiveOpKernel(c) {
    std::string merge, final_op;
    absl::Status s = c->GetAttr("merge_op", &merge);
    if (s.ok()) s = c->GetAttr("final_op", &final_op);
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    if (final_op != "Id" && final_op != "Div") {
      c->SetStatus(absl::InvalidArgumentError(absl::StrCat(
          "CollectiveReduce '", name(), "': final_op '", final_op, "' is not Id or Div")));
    } else if (merge == "Add") {
      params_.reduction = final_op == "Div" ? ReductionOp::kMean : ReductionOp::kSum;
    } else if (final_op == "Div") {
      c->SetStatus(absl::InvalidArgumentError(absl::StrCat(
          "CollectiveReduce '", name(), "': final_op Div goes with merge_op Add (a mean)")));
    } else if (merge == "Mul") {
      params_.reduction = ReductionOp::kProd;
    } else if (merge == "Min") {
      params_.reduction = ReductionOp::kMin;
    } else if (merge == "Max") {
      params_.reduction = ReductionOp::kMax;
    } else {
      c->SetStatus(
          absl::InvalidArgumentError(absl::StrCat("CollectiveReduce '", name(), "': merge_op '",
                                                  merge, "' is not one of Add, Mul, Min, Max")));
    }
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CollectiveExecutor* collectives = Executor(ctx, done);
    if (collectives == nullptr) return;
    Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(
        ctx, ctx->forward_input_or_allocate_output(0, 0, ctx->input(0).shape(), &output), done);
    // A forwarded input now lives in the output (reduced in place).
    const Tensor& input = ctx->input(0).IsInitialized() ? ctx->input(0) : *output;
    Label(ctx, static_cast<int64_t>(input.TotalBytes()));
    Exchange(ctx, collectives, CollectiveKind::kAllReduce, input, output,
             Finish(ctx, std::move(done)));
  }
};

class CollectiveBcastOp : public CollectiveOpKernel {
 public:
  explicit CollectiveBcastOp(OpKernelConstruction* c) : CollectiveOpKernel(c) {
    is_source_ = type_string() == "CollectiveBcastSend";
    // Group resolution names the source (the member whose op is CollectiveBcastSend).
    int64_t source = -1;
    absl::Status s = c->GetAttr("_source_rank", &source);
    if (s.ok()) s = c->GetAttr("shape", &shape_);
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    if (source < 0 || source >= params_.group_size || (is_source_ && source != params_.rank)) {
      c->SetStatus(absl::FailedPreconditionError(
          absl::StrCat(type_string(), " '", name(), "' has no resolved source (", source,
                       "): broadcasts run in a session, which finds every member in the graph")));
      return;
    }
    params_.source_rank = static_cast<int>(source);
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CollectiveExecutor* collectives = Executor(ctx, done);
    if (collectives == nullptr) return;
    Tensor* output = nullptr;
    if (is_source_) {
      const Tensor& input = ctx->input(0);
      OP_REQUIRES_ASYNC(
          ctx, !shape_.IsFullyDefined() || shape_ == input.shape(),
          absl::InvalidArgumentError(absl::StrCat(
              "CollectiveBcastSend '", name(), "': the input is ", input.shape().DebugString(),
              " but the shape attr says ", shape_.DebugString())),
          done);
      output = ctx->mutable_output(0);
      Label(ctx, static_cast<int64_t>(input.TotalBytes()));
      Exchange(ctx, collectives, CollectiveKind::kBroadcast, input, output,
               Finish(ctx, std::move(done)));
      return;
    }
    OP_REQUIRES_ASYNC(ctx, shape_.IsFullyDefined(),
                      absl::InvalidArgumentError(absl::StrCat(
                          "CollectiveBcastRecv '", name(),
                          "' needs a fully defined shape attr (it is ", shape_.DebugString(), ")")),
                      done);
    // Says what is expected; the executor replaces it with the source's tensor.
    output = ctx->mutable_output(0);
    *output = Tensor(output_type(0), shape_);
    Label(ctx, static_cast<int64_t>(output->TotalBytes()));
    Exchange(ctx, collectives, CollectiveKind::kBroadcast, Tensor(), output,
             Finish(ctx, std::move(done)));
  }

 private:
  bool is_source_ = false;
  TensorShape shape_;
};

class CollectiveGatherOp : public CollectiveOpKernel {
 public:
  using CollectiveOpKernel::CollectiveOpKernel;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CollectiveExecutor* collectives = Executor(ctx, done);
    if (collectives == nullptr) return;
    const Tensor& input = ctx->input(0);
    OP_REQUIRES_ASYNC(ctx, input.dims() >= 1,
                      absl::InvalidArgumentError(
                          absl::StrCat("CollectiveGather '", name(),
                                       "': the input is a scalar; it "
                                       "needs rank >= 1 (concatenated along dimension 0)")),
                      done);
    TensorShape shape = input.shape();
    OP_REQUIRES_ASYNC(ctx, shape.dim(0) <= std::numeric_limits<int64_t>::max() / params_.group_size,
                      absl::InvalidArgumentError("CollectiveGather: the output's dimension 0 "
                                                 "does not fit in 64 bits"),
                      done);
    shape.set_dim(0, shape.dim(0) * params_.group_size);
    Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, shape, &output), done);
    Label(ctx, static_cast<int64_t>(input.TotalBytes()));
    Exchange(ctx, collectives, CollectiveKind::kAllGather, input, output,
             Finish(ctx, std::move(done)));
  }
};

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_COLLECTIVE_KERNELS_H_
