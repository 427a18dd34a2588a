// FusedBatchNorm and FusedBatchNormGrad on a GPU (float, channels last): the shapes are checked on
// the host as the CPU kernels check them (kernels/cpu/kernel_checks.h); the work is in
// batch_norm.cu, with the CPU kernel's arithmetic (statistics in double).
#include <cstdint>
#include <vector>

#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/platform/status.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/gpu_util.h"

namespace shardflow {
namespace {

// Scratch of the launchers: 2c doubles and 4c floats.
absl::Status Scratch(OpKernelContext* ctx, int64_t c, Tensor* sums, Tensor* coef) {
  SF_RETURN_IF_ERROR(ctx->allocate_temp(DT_DOUBLE, TensorShape({2 * c}), sums));
  return ctx->allocate_temp(DT_FLOAT, TensorShape({4 * c}), coef);
}

class GpuFusedBatchNormOp : public OpKernel {
 public:
  explicit GpuFusedBatchNormOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("epsilon", &epsilon_);
    if (s.ok()) s = c->GetAttr("is_training", &is_training_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    int64_t rows = 0, c = 0;
    std::vector<const Tensor*> vectors = {&ctx->input(1), &ctx->input(2)};
    std::vector<const char*> names = {"scale", "offset"};
    if (!is_training_) {
      vectors.insert(vectors.end(), {&ctx->input(3), &ctx->input(4)});
      names.insert(names.end(), {"mean", "variance"});
    }
    OP_REQUIRES_OK(ctx, CheckBatchNormInputs(x, vectors, names, &rows, &c));
    Tensor *y, *batch_mean, *batch_var, *saved_mean, *saved_inv_std;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({c}), &batch_mean));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({c}), &batch_var));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, TensorShape({c}), &saved_mean));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, TensorShape({c}), &saved_inv_std));
    Tensor sums, coef;
    OP_REQUIRES_OK(ctx, Scratch(ctx, c, &sums, &coef));
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchBatchNorm(
                 x.data<float>(), ctx->input(1).data<float>(), ctx->input(2).data<float>(),
                 is_training_ ? nullptr : ctx->input(3).data<float>(),
                 is_training_ ? nullptr : ctx->input(4).data<float>(), y->data<float>(),
                 batch_mean->data<float>(), batch_var->data<float>(), saved_mean->data<float>(),
                 saved_inv_std->data<float>(), rows, c, epsilon_, is_training_, sums.data<double>(),
                 coef.data<float>(), gpu::StreamOf(ctx)));
  }

 private:
  float epsilon_ = 0.001f;
  bool is_training_ = true;
};

class GpuFusedBatchNormGradOp : public OpKernel {
 public:
  explicit GpuFusedBatchNormGradOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("is_training", &is_training_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    int64_t rows = 0, c = 0;
    OP_REQUIRES_OK(
        ctx, CheckBatchNormGradInputs(dy, x, {&ctx->input(2), &ctx->input(3), &ctx->input(4)},
                                      {"scale", "reserve_space_1", "reserve_space_2"}, &rows, &c));
    Tensor *dx, *dscale, *doffset, *r3, *r4;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &dx));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({c}), &dscale));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({c}), &doffset));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, TensorShape({0}), &r3));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, TensorShape({0}), &r4));
    Tensor sums, coef;
    OP_REQUIRES_OK(ctx, Scratch(ctx, c, &sums, &coef));
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchBatchNormGrad(
                 dy.data<float>(), x.data<float>(), ctx->input(2).data<float>(),
                 ctx->input(3).data<float>(), ctx->input(4).data<float>(), dx->data<float>(),
                 dscale->data<float>(), doffset->data<float>(), rows, c, is_training_,
                 sums.data<double>(), coef.data<float>(), gpu::StreamOf(ctx)));
  }

 private:
  bool is_training_ = true;
};

REGISTER_KERNEL(KernelDef("FusedBatchNorm").Device(kDeviceGpu).TypeConstraint<float>("T"),
                GpuFusedBatchNormOp);
REGISTER_KERNEL(KernelDef("FusedBatchNormGrad").Device(kDeviceGpu).TypeConstraint<float>("T"),
                GpuFusedBatchNormGradOp);

}  // namespace
}  // namespace shardflow
