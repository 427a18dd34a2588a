// What the CPU and GPU kernels of FusedBatchNorm and FusedBatchNormGrad share: their attrs, the
// checks of their inputs (kernels/cpu/kernel_checks.h) and the allocation of their outputs.
#ifndef SHARDFLOW_KERNELS_CPU_BATCH_NORM_KERNEL_H_
#define SHARDFLOW_KERNELS_CPU_BATCH_NORM_KERNEL_H_

#include <cstdint>
#include <vector>

#include "core/framework/op_kernel.h"
#include "core/platform/status.h"
#include "kernels/cpu/kernel_checks.h"

namespace shardflow {

class BatchNormKernel : public OpKernel {
 public:
  explicit BatchNormKernel(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("is_training", &is_training_);
    if (s.ok() && c->def().op() == "FusedBatchNorm") s = c->GetAttr("epsilon", &epsilon_);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  // FusedBatchNorm: checks x, scale, offset (and in inference mean, variance), allocates y,
  // batch_mean, batch_variance, reserve_space_1, reserve_space_2 into out[0..4].
  absl::Status PrepareForward(OpKernelContext* ctx, int64_t* rows, int64_t* c,
                              Tensor* out[5]) const {
    const Tensor& x = ctx->input(0);
    std::vector<const Tensor*> vectors = {&ctx->input(1), &ctx->input(2)};
    std::vector<const char*> names = {"scale", "offset"};
    if (!is_training_) {
      vectors.insert(vectors.end(), {&ctx->input(3), &ctx->input(4)});
      names.insert(names.end(), {"mean", "variance"});
    }
    SF_RETURN_IF_ERROR(CheckBatchNormInputs(x, vectors, names, rows, c));
    SF_RETURN_IF_ERROR(ctx->allocate_output(0, x.shape(), &out[0]));
    for (int i = 1; i < 5; ++i) {
      SF_RETURN_IF_ERROR(ctx->allocate_output(i, TensorShape({*c}), &out[i]));
    }
    return absl::OkStatus();
  }
  // FusedBatchNormGrad: checks y_backprop, x, scale and the reserve spaces, allocates
  // x_backprop, scale_backprop, offset_backprop into out[0..2] and the empty reserve_space_3/4.
  absl::Status PrepareGrad(OpKernelContext* ctx, int64_t* rows, int64_t* c, Tensor* out[3]) const {
    const Tensor& x = ctx->input(1);
    SF_RETURN_IF_ERROR(
        CheckBatchNormGradInputs(ctx->input(0), x, {&ctx->input(2), &ctx->input(3), &ctx->input(4)},
                                 {"scale", "reserve_space_1", "reserve_space_2"}, rows, c));
    SF_RETURN_IF_ERROR(ctx->allocate_output(0, x.shape(), &out[0]));
    SF_RETURN_IF_ERROR(ctx->allocate_output(1, TensorShape({*c}), &out[1]));
    SF_RETURN_IF_ERROR(ctx->allocate_output(2, TensorShape({*c}), &out[2]));
    Tensor* empty;
    SF_RETURN_IF_ERROR(ctx->allocate_output(3, TensorShape({0}), &empty));
    return ctx->allocate_output(4, TensorShape({0}), &empty);
  }

  float epsilon_ = 0.001f;
  bool is_training_ = true;
};

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_BATCH_NORM_KERNEL_H_
