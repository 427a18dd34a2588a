// CPU kernels of TopKV2 and its gradient TopKV2Grad (ops/topk_ops.cc). Each row of the last
// dimension is ranked through an index array: a linear scan for k = 1, a partial sort for k < n,
// a full sort for k = n; the order is "larger first, then the lower index", with NaN above
// every number, so equal entries keep their order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/framework/types.h"

namespace shardflow {
namespace {

template <typename T>
using Compare = std::conditional_t<std::is_integral_v<T>, T, float>;

// Whether entry a ranks before entry b (values va, vb at positions a, b).
template <typename C>
inline bool RanksBefore(C va, C vb, int32_t a, int32_t b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool na = std::isnan(va), nb = std::isnan(vb);
    if (na || nb) return na && (!nb || a < b);
  }
  if (va != vb) return va > vb;
  return a < b;
}

template <typename T>
class TopKOp : public OpKernel {
 public:
  explicit TopKOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("sorted", &sorted_);
    if (!s.ok()) c->SetStatus(s);
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& k_in = ctx->input(1);
    OP_REQUIRES(ctx, k_in.NumElements() == 1,
                absl::InvalidArgumentError(absl::StrCat("TopKV2: k must be a scalar, got shape ",
                                                        k_in.shape().DebugString())));
    const int64_t k = k_in.data<int32_t>()[0];
    OP_REQUIRES(ctx, x.dims() >= 1,
                absl::InvalidArgumentError(
                    "TopKV2: input must have at least one dimension (top_k picks along the last)"));
    const int64_t n = x.shape().dim(x.dims() - 1);
    OP_REQUIRES(ctx, k >= 0 && k <= n,
                absl::InvalidArgumentError(absl::StrCat("TopKV2: k=", k, " is not in [0, ", n,
                                                        "] (the size of the last dimension)")));
    OP_REQUIRES(ctx, n <= INT32_MAX,
                absl::InvalidArgumentError(absl::StrCat("TopKV2: the last dimension (", n,
                                                        ") is larger than int32 indices hold")));
    TensorShape out_shape;
    for (int d = 0; d + 1 < x.dims(); ++d) out_shape.AddDim(x.shape().dim(d));
    out_shape.AddDim(k);
    Tensor* values = nullptr;
    Tensor* indices = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &values));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, out_shape, &indices));
    if (k == 0 || n == 0) return;
    const int64_t rows = x.NumElements() / n;
    const T* in = x.data<T>();
    T* v = values->data<T>();
    int32_t* idx = indices->data<int32_t>();
    using C = Compare<T>;
    std::vector<C> row(static_cast<size_t>(n));
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const T* src = in + r * n;
      for (int64_t j = 0; j < n; ++j) row[j] = static_cast<C>(src[j]);
      auto before = [&row](int32_t a, int32_t b) { return RanksBefore<C>(row[a], row[b], a, b); };
      if (k == 1) {
        int32_t best = 0;
        for (int32_t j = 1; j < n; ++j) {
          if (before(j, best)) best = j;
        }
        order[0] = best;
      } else {
        std::iota(order.begin(), order.end(), 0);
        if (k < n) {
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        } else {
          std::sort(order.begin(), order.end(), before);
        }
      }
      for (int64_t j = 0; j < k; ++j) {
        idx[r * k + j] = order[j];
        v[r * k + j] = src[order[j]];
      }
    }
  }

 private:
  bool sorted_ = true;  // the result is sorted either way
};

template <typename T>
class TopKGradOp : public OpKernel {
 public:
  explicit TopKGradOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& indices = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    OP_REQUIRES(ctx, x.dims() >= 1 && indices.shape() == grad.shape() && indices.dims() == x.dims(),
                absl::InvalidArgumentError(
                    absl::StrCat("TopKV2Grad: input ", x.shape().DebugString(), ", indices ",
                                 indices.shape().DebugString(), " and grad ",
                                 grad.shape().DebugString(), " do not fit together")));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    T* y = out->data<T>();
    std::fill(y, y + x.NumElements(), static_cast<T>(0));
    const int64_t n = x.shape().dim(x.dims() - 1);
    const int64_t k = indices.dims() ? indices.shape().dim(indices.dims() - 1) : 0;
    if (n == 0 || k == 0) return;
    const int64_t rows = x.NumElements() / n;
    OP_REQUIRES(ctx, indices.NumElements() == rows * k,
                absl::InvalidArgumentError("TopKV2Grad: indices have another number of rows"));
    const int32_t* idx = indices.data<int32_t>();
    const T* g = grad.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < k; ++j) {
        const int32_t at = idx[r * k + j];
        OP_REQUIRES(ctx, at >= 0 && at < n,
                    absl::InvalidArgumentError(
                        absl::StrCat("TopKV2Grad: index ", at, " is not in [0, ", n, ")")));
        y[r * n + at] = g[r * k + j];
      }
    }
  }
};

#define SF_REGISTER_TOPK(T)                                                                      \
  REGISTER_KERNEL(KernelDef("TopKV2").Device(kDeviceCpu).TypeConstraint<T>("T").HostMemory("k"), \
                  TopKOp<T>)
SF_REGISTER_TOPK(float);
SF_REGISTER_TOPK(double);
SF_REGISTER_TOPK(half);
SF_REGISTER_TOPK(bfloat16);
SF_REGISTER_TOPK(int8_t);
SF_REGISTER_TOPK(uint8_t);
SF_REGISTER_TOPK(int32_t);
SF_REGISTER_TOPK(int64_t);
#undef SF_REGISTER_TOPK

#define SF_REGISTER_TOPK_GRAD(T) \
  REGISTER_KERNEL(KernelDef("TopKV2Grad").Device(kDeviceCpu).TypeConstraint<T>("T"), TopKGradOp<T>)
SF_REGISTER_TOPK_GRAD(float);
SF_REGISTER_TOPK_GRAD(double);
SF_REGISTER_TOPK_GRAD(half);
SF_REGISTER_TOPK_GRAD(bfloat16);
#undef SF_REGISTER_TOPK_GRAD

}  // namespace
}  // namespace shardflow
