// FusedBatchNorm and FusedBatchNormGrad on a GPU (float, channels last): the shapes are checked on
// the host as the CPU kernels check them (kernels/cpu/kernel_checks.h); the work is in
// batch_norm.cu, with the CPU kernel's arithmetic (statistics in double).
#include <cstdint>
#include <vector>

#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/platform/status.h"
#include "kernels/cpu/batch_norm_kernel.h"
#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/gpu_util.h"

namespace shardflow {
namespace {

// Scratch of the launchers: 2c doubles and 4c floats.
absl::Status Scratch(OpKernelContext* ctx, int64_t c, Tensor* sums, Tensor* coef) {
  SF_RETURN_IF_ERROR(ctx->allocate_temp(DT_DOUBLE, TensorShape({2 * c}), sums));
  return ctx->allocate_temp(DT_FLOAT, TensorShape({4 * c}), coef);
}

class GpuFusedBatchNormOp : public BatchNormKernel {
 public:
  using BatchNormKernel::BatchNormKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    int64_t rows = 0, c = 0;
    Tensor* out[5];
    OP_REQUIRES_OK(ctx, PrepareForward(ctx, &rows, &c, out));
    Tensor *y = out[0], *batch_mean = out[1], *batch_var = out[2], *saved_mean = out[3],
           *saved_inv_std = out[4];
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
};

class GpuFusedBatchNormGradOp : public BatchNormKernel {
 public:
  using BatchNormKernel::BatchNormKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    int64_t rows = 0, c = 0;
    Tensor* out[3];
    OP_REQUIRES_OK(ctx, PrepareGrad(ctx, &rows, &c, out));
    Tensor *dx = out[0], *dscale = out[1], *doffset = out[2];
    Tensor sums, coef;
    OP_REQUIRES_OK(ctx, Scratch(ctx, c, &sums, &coef));
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchBatchNormGrad(
                 dy.data<float>(), x.data<float>(), ctx->input(2).data<float>(),
                 ctx->input(3).data<float>(), ctx->input(4).data<float>(), dx->data<float>(),
                 dscale->data<float>(), doffset->data<float>(), rows, c, is_training_,
                 sums.data<double>(), coef.data<float>(), gpu::StreamOf(ctx)));
  }
};

REGISTER_KERNEL(KernelDef("FusedBatchNorm").Device(kDeviceGpu).TypeConstraint<float>("T"),
                GpuFusedBatchNormOp);
REGISTER_KERNEL(KernelDef("FusedBatchNormGrad").Device(kDeviceGpu).TypeConstraint<float>("T"),
                GpuFusedBatchNormGradOp);

}  // namespace
}  // namespace shardflow
