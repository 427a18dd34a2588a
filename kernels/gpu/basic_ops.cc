// GPU kernels that move or relabel data: Const (uploaded once, then shared) and Transpose.
// Identity, Reshape, _Arg, _Retval, _Send, _Recv and the variable kernels are the CPU's, registered
// for the GPU beside them (kernels/cpu/), since they never read values.
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/kernel_registry.h"
#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/gpu_util.h"

namespace shardflow {
namespace {

// The value goes to device memory at the first step and every later step shares that tensor
// (kernels never write their inputs in place unless they hold the only reference, and the
// kernel keeps one).
class GpuConstOp : public OpKernel {
 public:
  explicit GpuConstOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("value", &host_);
    if (!s.ok()) c->SetStatus(s);
  }
  bool IsExpensive() const override { return false; }
  void Compute(OpKernelContext* ctx) override {
    absl::MutexLock lock(&mu_);
    if (!device_.IsInitialized()) {
      auto t = Tensor::Create(ctx->allocator(), host_.dtype(), host_.shape());
      OP_REQUIRES_OK(ctx, t.status());
      OP_REQUIRES_OK(ctx, ctx->device()->CopyTensor(host_, &*t));
      device_ = std::move(*t);
    }
    ctx->set_output(0, device_);
  }

 private:
  Tensor host_;
  absl::Mutex mu_;
  Tensor device_ ABSL_GUARDED_BY(mu_);
};

class GpuTransposeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& perm_t = ctx->input(1);
    OP_REQUIRES(ctx, perm_t.dims() == 1 && perm_t.NumElements() == x.dims(),
                absl::InvalidArgumentError(absl::StrCat(
                    "Transpose: perm must be a vector of ", x.dims(), " entries (the rank of x ",
                    x.shape().DebugString(), "), got shape ", perm_t.shape().DebugString())));
    OP_REQUIRES(ctx, x.dims() <= 8,
                absl::UnimplementedError(absl::StrCat(
                    "Transpose on a GPU takes tensors of rank 8 or less; x has rank ", x.dims())));
    int perm[8];
    bool seen[8] = {false};
    std::vector<int64_t> out_dims(x.dims());
    for (int i = 0; i < x.dims(); ++i) {
      int64_t p =
          perm_t.dtype() == DT_INT64 ? perm_t.data<int64_t>()[i] : perm_t.data<int32_t>()[i];
      OP_REQUIRES(
          ctx, p >= 0 && p < x.dims() && !seen[p],
          absl::InvalidArgumentError(absl::StrCat("Transpose: perm must be a permutation of 0..",
                                                  x.dims() - 1, ", entry ", i, " is ", p)));
      seen[p] = true;
      perm[i] = static_cast<int>(p);
      out_dims[i] = x.dim_size(static_cast<int>(p));
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(out_dims), &y));
    if (x.NumElements() == 0) return;
    std::vector<int64_t> in_dims(x.shape().dims().begin(), x.shape().dims().end());
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchTranspose(x.raw_data(), y->raw_data(), x.dims(), in_dims.data(), perm,
                                  static_cast<int>(DataTypeSize(x.dtype())), gpu::StreamOf(ctx)));
  }
};

#define SF_REGISTER_GPU_CONST(T) \
  REGISTER_KERNEL(KernelDef("Const").Device(kDeviceGpu).TypeConstraint<T>("dtype"), GpuConstOp)
SF_REGISTER_GPU_CONST(float);
SF_REGISTER_GPU_CONST(double);
SF_REGISTER_GPU_CONST(half);
SF_REGISTER_GPU_CONST(bfloat16);
SF_REGISTER_GPU_CONST(int64_t);
SF_REGISTER_GPU_CONST(bool);
#undef SF_REGISTER_GPU_CONST

#define SF_REGISTER_GPU_TRANSPOSE(T)                                                       \
  REGISTER_KERNEL(                                                                         \
      KernelDef("Transpose").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("perm"), \
      GpuTransposeOp)
SF_REGISTER_GPU_TRANSPOSE(float);
SF_REGISTER_GPU_TRANSPOSE(double);
SF_REGISTER_GPU_TRANSPOSE(half);
SF_REGISTER_GPU_TRANSPOSE(bfloat16);
SF_REGISTER_GPU_TRANSPOSE(int32_t);
SF_REGISTER_GPU_TRANSPOSE(int64_t);
SF_REGISTER_GPU_TRANSPOSE(bool);
#undef SF_REGISTER_GPU_TRANSPOSE

}  // namespace
}  // namespace shardflow
