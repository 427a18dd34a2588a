// GPU kernels for the optimizer updates (ResourceApplyGradientDescent, ResourceApplyMomentum,
// ResourceApplyAdam), AssignAddVariableOp and CheckNumerics. They mirror the CPU kernels
// (kernels/cpu/training_ops.cc, variable_ops.cc): the same variable lookups, lock order (the
// variable first, then its slots in input order), distinctness and shape checks, and messages.
//
// The resource handles are host-memory string scalars. The hyper-parameters (alpha, lr,
// momentum, beta1_power, ...) stay in device memory, where the kernels read them: the host never
// waits for the GPU. So ResourceApplyAdam cannot reject beta1_power or beta2_power >= 1 as the
// CPU does; its kernel leaves the variables unchanged instead (training_ops.cu.h).
// CheckNumerics must report on the host, so it waits for its search to finish.
//
// Registered (T): the updates for float; AssignAddVariableOp for float, int32 and int64;
// CheckNumerics for float.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/framework/resource_mgr.h"
#include "core/platform/status.h"
#include "kernels/cpu/variable_util.h"
#include "kernels/gpu/gpu_util.h"
#include "kernels/gpu/training_ops.cu.h"

namespace shardflow {
namespace {

// The value of a variable on this device must be device memory for the kernels to write it.
absl::Status CheckDeviceValue(const std::string& name, const Tensor& value) {
  if (value.NumElements() > 0 && IsHostTensor(value)) {
    return absl::InternalError(absl::StrCat("variable '", name,
                                            "' holds host memory on a GPU device; its value must "
                                            "be assigned by a kernel of that device"));
  }
  return absl::OkStatus();
}

// The value an update writes (WritableVariable), which must be in this device's memory.
absl::StatusOr<Tensor*> Writable(OpKernelContext* ctx, int input, Variable* var,
                                 const Tensor& grad) {
  SF_ASSIGN_OR_RETURN(Tensor * v, WritableVariable(ctx, input, var, grad));
  SF_RETURN_IF_ERROR(CheckDeviceValue(ctx->input(input).data<std::string>()[0], *v));
  return v;
}

// A hyper-parameter input (device memory): the kernel reads its first element, so it must have
// one. (The CPU kernels read element 0 of whatever arrives.)
absl::Status CheckScalarInput(OpKernelContext* ctx, int input) {
  const Tensor& t = ctx->input(input);
  if (t.NumElements() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input ", input, " of ", ctx->op_kernel().type_string(),
        " is a hyper-parameter and must hold one value, got shape ", t.shape().DebugString()));
  }
  return absl::OkStatus();
}

class ApplyGradientDescentOp : public OpKernel {
 public:
  explicit ApplyGradientDescentOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    const Tensor& delta = ctx->input(2);
    OP_REQUIRES_OK(ctx, CheckScalarInput(ctx, 1));
    const float* alpha = ctx->input(1).data<float>();
    absl::MutexLock lock((*var)->mu());
    auto v = Writable(ctx, 0, var->get(), delta);
    OP_REQUIRES_OK(ctx, v.status());
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchApplyGradientDescent((*v)->data<float>(), alpha, delta.data<float>(),
                                             delta.NumElements(), gpu::StreamOf(ctx)));
  }
};

class ApplyMomentumOp : public OpKernel {
 public:
  explicit ApplyMomentumOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("use_nesterov", &nesterov_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    auto accum = LookupVariable(ctx, 1);
    OP_REQUIRES_OK(ctx, accum.status());
    OP_REQUIRES_OK(ctx, CheckScalarInput(ctx, 2));
    OP_REQUIRES_OK(ctx, CheckScalarInput(ctx, 4));
    const float* lr = ctx->input(2).data<float>();
    const Tensor& grad = ctx->input(3);
    const float* momentum = ctx->input(4).data<float>();
    OP_REQUIRES_OK(ctx, CheckDistinctVariables(ctx, {{0, var->get()}, {1, accum->get()}}));
    absl::MutexLock lock_var((*var)->mu());
    absl::MutexLock lock_accum((*accum)->mu());
    auto v = Writable(ctx, 0, var->get(), grad);
    OP_REQUIRES_OK(ctx, v.status());
    auto a = Writable(ctx, 1, accum->get(), grad);
    OP_REQUIRES_OK(ctx, a.status());
    OP_REQUIRES_CUDA(ctx, gpu::LaunchApplyMomentum((*v)->data<float>(), (*a)->data<float>(), lr,
                                                   grad.data<float>(), momentum, nesterov_,
                                                   grad.NumElements(), gpu::StreamOf(ctx)));
  }

 private:
  bool nesterov_ = false;
};

class ApplyAdamOp : public OpKernel {
 public:
  explicit ApplyAdamOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    auto m = LookupVariable(ctx, 1);
    OP_REQUIRES_OK(ctx, m.status());
    auto v = LookupVariable(ctx, 2);
    OP_REQUIRES_OK(ctx, v.status());
    // Inputs 3..8: beta1_power, beta2_power, lr, beta1, beta2, epsilon (device memory).
    for (int i = 3; i <= 8; ++i) OP_REQUIRES_OK(ctx, CheckScalarInput(ctx, i));
    const Tensor& grad = ctx->input(9);
    OP_REQUIRES_OK(ctx,
                   CheckDistinctVariables(ctx, {{0, var->get()}, {1, m->get()}, {2, v->get()}}));
    absl::MutexLock lock_var((*var)->mu());
    absl::MutexLock lock_m((*m)->mu());
    absl::MutexLock lock_v((*v)->mu());
    auto wv = Writable(ctx, 0, var->get(), grad);
    OP_REQUIRES_OK(ctx, wv.status());
    auto mv = Writable(ctx, 1, m->get(), grad);
    OP_REQUIRES_OK(ctx, mv.status());
    auto vv = Writable(ctx, 2, v->get(), grad);
    OP_REQUIRES_OK(ctx, vv.status());
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchApplyAdam((*wv)->data<float>(), (*mv)->data<float>(), (*vv)->data<float>(),
                                  ctx->input(3).data<float>(), ctx->input(4).data<float>(),
                                  ctx->input(5).data<float>(), ctx->input(6).data<float>(),
                                  ctx->input(7).data<float>(), ctx->input(8).data<float>(),
                                  grad.data<float>(), grad.NumElements(), gpu::StreamOf(ctx)));
  }
};

// var += value, for AssignAddVariableOp (AssignVariableOp<true> of kernels/cpu/variable_ops.cc).
template <typename T>
class AssignAddVariableOp : public OpKernel {
 public:
  explicit AssignAddVariableOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    const Tensor& value = ctx->input(1);
    const std::string& name = ctx->input(0).data<std::string>()[0];
    absl::MutexLock lock((*var)->mu());
    auto target = AssignAddTarget(name, var->get(), value);
    OP_REQUIRES_OK(ctx, target.status());
    Tensor* v = *target;
    OP_REQUIRES_OK(ctx, CheckDeviceValue(name, *v));
    OP_REQUIRES_CUDA(ctx, gpu::LaunchAssignAdd(v->data<T>(), value.data<T>(), value.NumElements(),
                                               gpu::StreamOf(ctx)));
  }
};

// Passes its input through, or fails naming the first NaN or infinite element. It waits for the
// GPU: the answer decides this kernel's status.
class CheckNumericsOp : public OpKernel {
 public:
  explicit CheckNumericsOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("message", &message_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    const int64_t n = t.NumElements();
    if (n > 0) {
      Tensor first_t;
      OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_INT64, TensorShape({1}), &first_t));
      auto* first_dev = reinterpret_cast<unsigned long long*>(first_t.data<int64_t>());
      cudaStream_t stream = gpu::StreamOf(ctx);
      const float* x = t.data<float>();
      OP_REQUIRES_CUDA(ctx, gpu::LaunchFindNonFinite(x, n, first_dev, stream));
      unsigned long long first = 0;
      OP_REQUIRES_CUDA(
          ctx, cudaMemcpyAsync(&first, first_dev, sizeof(first), cudaMemcpyDeviceToHost, stream));
      OP_REQUIRES_CUDA(ctx, cudaStreamSynchronize(stream));
      if (first < static_cast<unsigned long long>(n)) {
        const int64_t i = static_cast<int64_t>(first);
        float value = 0.0f;
        OP_REQUIRES_CUDA(
            ctx, cudaMemcpyAsync(&value, x + i, sizeof(value), cudaMemcpyDeviceToHost, stream));
        OP_REQUIRES_CUDA(ctx, cudaStreamSynchronize(stream));
        ctx->SetStatus(absl::InvalidArgumentError(absl::StrCat(
            message_.empty() ? "" : message_ + ": ", "tensor of shape ", t.shape().DebugString(),
            " holds ", std::isnan(value) ? "NaN" : "Inf", " at element ", i)));
        return;
      }
    }
    ctx->set_output(0, t);
  }

 private:
  std::string message_;
};

REGISTER_KERNEL(KernelDef("ResourceApplyGradientDescent")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("var"),
                ApplyGradientDescentOp);
REGISTER_KERNEL(KernelDef("ResourceApplyMomentum")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("var")
                    .HostMemory("accum"),
                ApplyMomentumOp);
REGISTER_KERNEL(KernelDef("ResourceApplyAdam")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("var")
                    .HostMemory("m")
                    .HostMemory("v"),
                ApplyAdamOp);

#define SF_GPU_ASSIGN_ADD(T)                       \
  REGISTER_KERNEL(KernelDef("AssignAddVariableOp") \
                      .Device(kDeviceGpu)          \
                      .TypeConstraint<T>("dtype")  \
                      .HostMemory("resource"),     \
                  AssignAddVariableOp<T>)
SF_GPU_ASSIGN_ADD(float);
SF_GPU_ASSIGN_ADD(int32_t);
SF_GPU_ASSIGN_ADD(int64_t);
#undef SF_GPU_ASSIGN_ADD

REGISTER_KERNEL(KernelDef("CheckNumerics").Device(kDeviceGpu).TypeConstraint<float>("T"),
                CheckNumericsOp);

}  // namespace
}  // namespace shardflow
