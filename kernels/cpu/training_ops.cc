// Optimizer updates, in place on the variables (copy-on-write, see ResourceMgr).
//
// Lock order: the variable first, then its slots in input order; every kernel here follows it.
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "kernels/cpu/cwise_ops_common.h"
#include "kernels/cpu/variable_util.h"

namespace shardflow {
namespace {

template <typename T>
T ScalarInput(OpKernelContext* ctx, int i) {
  return ctx->input(i).data<T>()[0];
}

void Parallel(OpKernelContext* ctx, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  cwise::RunSharded(ctx, n, 4, fn);
}

template <typename T>
class ApplyGradientDescentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    const Tensor& delta = ctx->input(2);
    const T alpha = ScalarInput<T>(ctx, 1);
    absl::MutexLock lock((*var)->mu());
    auto v = WritableVariable(ctx, 0, var->get(), delta);
    OP_REQUIRES_OK(ctx, v.status());
    T* __restrict w = (*v)->template data<T>();
    const T* __restrict d = delta.data<T>();
    Parallel(ctx, delta.NumElements(), [&](int64_t b, int64_t e) {
      SF_SIMD_LOOP
      for (int64_t i = b; i < e; ++i) w[i] -= alpha * d[i];
    });
  }
};

template <typename T>
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
    const T lr = ScalarInput<T>(ctx, 2);
    const Tensor& grad = ctx->input(3);
    const T momentum = ScalarInput<T>(ctx, 4);
    OP_REQUIRES_OK(ctx, CheckDistinctVariables(ctx, {{0, var->get()}, {1, accum->get()}}));
    absl::MutexLock lock_var((*var)->mu());
    absl::MutexLock lock_accum((*accum)->mu());
    auto v = WritableVariable(ctx, 0, var->get(), grad);
    OP_REQUIRES_OK(ctx, v.status());
    auto a = WritableVariable(ctx, 1, accum->get(), grad);
    OP_REQUIRES_OK(ctx, a.status());
    T* __restrict w = (*v)->template data<T>();
    T* __restrict acc = (*a)->template data<T>();
    const T* __restrict g = grad.data<T>();
    Parallel(ctx, grad.NumElements(), [&](int64_t b, int64_t e) {
      if (nesterov_) {
        SF_SIMD_LOOP
        for (int64_t i = b; i < e; ++i) {
          acc[i] = momentum * acc[i] + g[i];
          w[i] -= lr * (g[i] + momentum * acc[i]);
        }
      } else {
        SF_SIMD_LOOP
        for (int64_t i = b; i < e; ++i) {
          acc[i] = momentum * acc[i] + g[i];
          w[i] -= lr * acc[i];
        }
      }
    });
  }

 private:
  bool nesterov_ = false;
};

template <typename T>
class ApplyAdamOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    auto var = LookupVariable(ctx, 0);
    OP_REQUIRES_OK(ctx, var.status());
    auto m = LookupVariable(ctx, 1);
    OP_REQUIRES_OK(ctx, m.status());
    auto v = LookupVariable(ctx, 2);
    OP_REQUIRES_OK(ctx, v.status());
    const double beta1_power = static_cast<double>(ScalarInput<T>(ctx, 3));
    const double beta2_power = static_cast<double>(ScalarInput<T>(ctx, 4));
    const T lr = ScalarInput<T>(ctx, 5), beta1 = ScalarInput<T>(ctx, 6),
            beta2 = ScalarInput<T>(ctx, 7), eps = ScalarInput<T>(ctx, 8);
    const Tensor& grad = ctx->input(9);
    OP_REQUIRES(ctx, beta1_power < 1.0 && beta2_power < 1.0,
                absl::InvalidArgumentError("beta1_power and beta2_power must be below 1"));
    OP_REQUIRES_OK(ctx,
                   CheckDistinctVariables(ctx, {{0, var->get()}, {1, m->get()}, {2, v->get()}}));
    absl::MutexLock lock_var((*var)->mu());
    absl::MutexLock lock_m((*m)->mu());
    absl::MutexLock lock_v((*v)->mu());
    auto wv = WritableVariable(ctx, 0, var->get(), grad);
    OP_REQUIRES_OK(ctx, wv.status());
    auto mv = WritableVariable(ctx, 1, m->get(), grad);
    OP_REQUIRES_OK(ctx, mv.status());
    auto vv = WritableVariable(ctx, 2, v->get(), grad);
    OP_REQUIRES_OK(ctx, vv.status());
    const double bias = std::sqrt(1.0 - beta2_power) / (1.0 - beta1_power);
    const T lr_t = static_cast<T>(lr * bias);
    // Distinct variables (checked above) and the gradient, a separate tensor (mutable_value()
    // copies a buffer the gradient shares): the loop vectorises (sqrt and division stay IEEE,
    // so the results are the scalar loop's, bit for bit).
    T* __restrict w = (*wv)->template data<T>();
    T* __restrict mm = (*mv)->template data<T>();
    T* __restrict vvp = (*vv)->template data<T>();
    const T* __restrict g = grad.data<T>();
    Parallel(ctx, grad.NumElements(), [&](int64_t b, int64_t e) {
      SF_SIMD_LOOP
      for (int64_t i = b; i < e; ++i) {
        mm[i] = beta1 * mm[i] + (1 - beta1) * g[i];
        vvp[i] = beta2 * vvp[i] + (1 - beta2) * g[i] * g[i];
        w[i] -= lr_t * mm[i] / (std::sqrt(vvp[i]) + eps);
      }
    });
  }
};

#define SF_REGISTER_APPLY(T)                                                                    \
  REGISTER_KERNEL(                                                                              \
      KernelDef("ResourceApplyGradientDescent").Device(kDeviceCpu).TypeConstraint<T>("T"),      \
      ApplyGradientDescentOp<T>);                                                               \
  REGISTER_KERNEL(KernelDef("ResourceApplyMomentum").Device(kDeviceCpu).TypeConstraint<T>("T"), \
                  ApplyMomentumOp<T>);                                                          \
  REGISTER_KERNEL(KernelDef("ResourceApplyAdam").Device(kDeviceCpu).TypeConstraint<T>("T"),     \
                  ApplyAdamOp<T>)
SF_REGISTER_APPLY(float);
SF_REGISTER_APPLY(double);

// SumToShape: sums `input` down to `shape` (the reverse of broadcasting).
template <typename T>
class SumToShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const Tensor& shape_t = ctx->input(1);
    OP_REQUIRES(ctx, shape_t.dims() == 1, absl::InvalidArgumentError("shape must be a vector"));
    TensorShape target;
    for (int64_t i = 0; i < shape_t.NumElements(); ++i) target.AddDim(shape_t.data<int32_t>()[i]);
    int rank = in.dims();
    int offset = rank - target.rank();
    OP_REQUIRES(
        ctx, offset >= 0,
        absl::InvalidArgumentError(absl::StrCat("cannot sum ", in.shape().DebugString(),
                                                " to the larger rank of ", target.DebugString())));
    // Output stride per input dim (0 where the dim is summed away).
    std::vector<int64_t> out_stride(rank, 0);
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      int td = d - offset;
      if (td < 0) continue;
      OP_REQUIRES(ctx, target.dim(td) == in.dim_size(d) || target.dim(td) == 1,
                  absl::InvalidArgumentError(absl::StrCat(
                      "cannot sum ", in.shape().DebugString(), " to ", target.DebugString(),
                      ": dimension ", d, " is neither equal nor 1")));
      if (target.dim(td) != 1) out_stride[d] = stride;
      stride *= target.dim(td);
    }
    // Nothing to sum (the gradient of an Add of equal shapes, as in a residual block): the
    // input is the output.
    if (offset == 0 && target == in.shape()) {
      ctx->set_output(0, in);
      return;
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, target, &out));
    T* o = out->data<T>();
    for (int64_t i = 0; i < out->NumElements(); ++i) o[i] = T(0);
    const T* x = in.data<T>();
    // Summing whole leading dimensions away (a bias's gradient): rows added into the output.
    int lead = 0;
    while (lead < rank && out_stride[lead] == 0) ++lead;
    bool rows_only = true;
    for (int d = lead; d < rank; ++d) rows_only &= out_stride[d] != 0;
    if (rows_only && out->NumElements() > 0) {
      const int64_t width = out->NumElements();
      const int64_t rows = in.NumElements() / width;
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * width;
        for (int64_t k = 0; k < width; ++k) o[k] = o[k] + xr[k];
      }
      return;
    }
    std::vector<int64_t> idx(rank, 0);
    int64_t pos = 0;
    for (int64_t i = 0; i < in.NumElements(); ++i) {
      o[pos] = o[pos] + x[i];
      for (int d = rank - 1; d >= 0; --d) {
        pos += out_stride[d];
        if (++idx[d] < in.dim_size(d)) break;
        pos -= out_stride[d] * in.dim_size(d);
        idx[d] = 0;
      }
    }
  }
};

#define SF_REGISTER_SUM_TO_SHAPE(T)                                                          \
  REGISTER_KERNEL(                                                                           \
      KernelDef("SumToShape").Device(kDeviceCpu).TypeConstraint<T>("T").HostMemory("shape"), \
      SumToShapeOp<T>)
SF_REGISTER_SUM_TO_SHAPE(float);
SF_REGISTER_SUM_TO_SHAPE(double);
SF_REGISTER_SUM_TO_SHAPE(half);
SF_REGISTER_SUM_TO_SHAPE(bfloat16);
SF_REGISTER_SUM_TO_SHAPE(int32_t);
SF_REGISTER_SUM_TO_SHAPE(int64_t);

template <typename T>
class CheckNumericsOp : public OpKernel {
 public:
  explicit CheckNumericsOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("message", &message_);
    if (!s.ok()) c->SetStatus(s);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& t = ctx->input(0);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      double v = static_cast<double>(p[i]);
      if (!std::isfinite(v)) {
        ctx->SetStatus(absl::InvalidArgumentError(absl::StrCat(
            message_.empty() ? "" : message_ + ": ", "tensor of shape ", t.shape().DebugString(),
            " holds ", std::isnan(v) ? "NaN" : "Inf", " at element ", i)));
        return;
      }
    }
    ctx->set_output(0, t);
  }

 private:
  std::string message_;
};
REGISTER_KERNEL(KernelDef("CheckNumerics").Device(kDeviceCpu).TypeConstraint<float>("T"),
                CheckNumericsOp<float>);
REGISTER_KERNEL(KernelDef("CheckNumerics").Device(kDeviceCpu).TypeConstraint<double>("T"),
                CheckNumericsOp<double>);
REGISTER_KERNEL(KernelDef("CheckNumerics").Device(kDeviceCpu).TypeConstraint<half>("T"),
                CheckNumericsOp<half>);
REGISTER_KERNEL(KernelDef("CheckNumerics").Device(kDeviceCpu).TypeConstraint<bfloat16>("T"),
                CheckNumericsOp<bfloat16>);

}  // namespace
}  // namespace shardflow
