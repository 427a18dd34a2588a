// CPU kernels for the element-wise unary ops: Neg, Abs, Square, Sign, Relu, Sqrt, Rsqrt, Exp,
// Log, Tanh, Sigmoid, Reciprocal and LogicalNot.
//
// Every (op, type) the op definitions allow is registered. Half and bfloat16 are computed in
// float, in blocks of kNarrowBlock elements. The transcendental functions of float and double go
// through Eigen's vectorised array functions.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "Eigen/Core"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "kernels/cpu/cwise_ops_common.h"

namespace shardflow {
namespace {

using cwise::ComputeType;

// Functors: operator() maps one value of the compute type. Those with kEigen = true also have
// Eval(x, y), which assigns the Eigen array expression for y = f(x) (float and double only).
// kCostNs is a rough cost per element for sharding.

struct NegFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a) const {
    return cwise::WrappingNeg(a);
  }
};
// Abs of the minimum integer wraps to itself, as in two's complement.
struct AbsFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a) const {
    if constexpr (std::is_integral_v<C>) {
      return a < 0 ? cwise::WrappingNeg(a) : a;
    } else {
      return std::abs(a);
    }
  }
};
struct SquareFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a) const {
    return static_cast<C>(a * a);
  }
};
// -1, 0 or 1; NaN stays NaN.
struct SignFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a) const {
    return a > C(0) ? C(1) : (a < C(0) ? C(-1) : a);
  }
};
// max(x, 0); NaN stays NaN.
struct ReluFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a) const {
    return a < C(0) ? C(0) : a;
  }
};
struct LogicalNotFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  bool operator()(bool a) const { return !a; }
};

#define SF_EIGEN_UNARY_FN(NAME, COST, SCALAR_EXPR, ARRAY_METHOD) \
  struct NAME {                                                  \
    static constexpr bool kEigen = true;                         \
    static constexpr int kCostNs = COST;                         \
    template <typename C>                                        \
    C operator()(C a) const {                                    \
      return SCALAR_EXPR;                                        \
    }                                                            \
    template <typename In, typename Out>                         \
    static void Eval(const In& x, Out& y) {                      \
      y = x.ARRAY_METHOD();                                      \
    }                                                            \
  }
SF_EIGEN_UNARY_FN(SqrtFn, 2, std::sqrt(a), sqrt);
SF_EIGEN_UNARY_FN(RsqrtFn, 2, C(1) / std::sqrt(a), rsqrt);
SF_EIGEN_UNARY_FN(ExpFn, 5, std::exp(a), exp);
SF_EIGEN_UNARY_FN(LogFn, 5, std::log(a), log);
SF_EIGEN_UNARY_FN(TanhFn, 5, std::tanh(a), tanh);
SF_EIGEN_UNARY_FN(SigmoidFn, 5, C(1) / (C(1) + std::exp(-a)), logistic);
SF_EIGEN_UNARY_FN(ReciprocalFn, 1, C(1) / a, inverse);
#undef SF_EIGEN_UNARY_FN

// y[0..n) = f(x[0..n)) for storage type T. y may equal x.
template <typename T, typename F>
void ComputeUnary(const T* x, T* y, int64_t n) {
  if constexpr (cwise::kIsNarrowFloat<T>) {
    float buf[cwise::kNarrowBlock];
    for (int64_t s = 0; s < n; s += cwise::kNarrowBlock) {
      const int64_t m = std::min(cwise::kNarrowBlock, n - s);
      cwise::WidenToFloat(x + s, m, buf);
      ComputeUnary<float, F>(buf, buf, m);
      cwise::NarrowFromFloat(buf, m, y + s);
    }
  } else if constexpr (F::kEigen) {
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<const Array> xa(x, n);
    Eigen::Map<Array> ya(y, n);
    F::Eval(xa, ya);
  } else {
    const F f;
    SF_SIMD_LOOP
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  }
}

template <typename T, typename F>
class UnaryOp : public OpKernel {
 public:
  explicit UnaryOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    // Forwarding clears the input in the context, so take its data pointer first.
    const T* x = ctx->input(0).data<T>();
    const TensorShape shape = ctx->input(0).shape();
    Tensor* y_out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &y_out));
    T* y = y_out->data<T>();
    cwise::RunSharded(ctx, y_out->NumElements(), F::kCostNs,
                      [&](int64_t b, int64_t e) { ComputeUnary<T, F>(x + b, y + b, e - b); });
  }
};

#define SF_REGISTER_UNARY(NAME, FN, T) \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<T>("T"), UnaryOp<T, FN>)

#define SF_REGISTER_UNARY_FLOAT(NAME, FN) \
  SF_REGISTER_UNARY(NAME, FN, float);     \
  SF_REGISTER_UNARY(NAME, FN, double);    \
  SF_REGISTER_UNARY(NAME, FN, half);      \
  SF_REGISTER_UNARY(NAME, FN, bfloat16)

#define SF_REGISTER_UNARY_SIGNED(NAME, FN) \
  SF_REGISTER_UNARY_FLOAT(NAME, FN);       \
  SF_REGISTER_UNARY(NAME, FN, int32_t);    \
  SF_REGISTER_UNARY(NAME, FN, int64_t)

SF_REGISTER_UNARY_SIGNED("Neg", NegFn);
SF_REGISTER_UNARY_SIGNED("Abs", AbsFn);
SF_REGISTER_UNARY_SIGNED("Square", SquareFn);
SF_REGISTER_UNARY_SIGNED("Sign", SignFn);
SF_REGISTER_UNARY_SIGNED("Relu", ReluFn);
SF_REGISTER_UNARY_FLOAT("Sqrt", SqrtFn);
SF_REGISTER_UNARY_FLOAT("Rsqrt", RsqrtFn);
SF_REGISTER_UNARY_FLOAT("Exp", ExpFn);
SF_REGISTER_UNARY_FLOAT("Log", LogFn);
SF_REGISTER_UNARY_FLOAT("Tanh", TanhFn);
SF_REGISTER_UNARY_FLOAT("Sigmoid", SigmoidFn);
SF_REGISTER_UNARY_FLOAT("Reciprocal", ReciprocalFn);
REGISTER_KERNEL(KernelDef("LogicalNot").Device(kDeviceCpu), UnaryOp<bool, LogicalNotFn>);

}  // namespace
}  // namespace shardflow
