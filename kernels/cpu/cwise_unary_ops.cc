// CPU kernels for the element-wise unary ops: Neg, Abs, Square, Sign, Relu, Sqrt, Rsqrt, Exp,
// Log, Tanh, Sigmoid, Reciprocal, Floor, Ceil, Round, Sin, Cos, Log1p, Expm1, Erf, Tan, Asin,
// Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Lgamma, Digamma and LogicalNot;
// and the predicates IsNan, IsInf and IsFinite (bool outputs).
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
#include "kernels/cpu/special_functions.h"

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
// Rounds halves to even (the default rounding mode), as TF's Round and NumPy's round.
struct RoundFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a) const {
    return std::nearbyint(a);
  }
};
struct ErfFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 10;
  template <typename C>
  C operator()(C a) const {
    return std::erf(a);
  }
};
// log|gamma(x)| (lgamma_r: glibc's lgamma writes the global signgam, a race between threads).
struct LgammaFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 40;
  template <typename C>
  C operator()(C a) const {
    int sign = 0;
    return static_cast<C>(::lgamma_r(static_cast<double>(a), &sign));
  }
};
struct DigammaFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 60;
  template <typename C>
  C operator()(C a) const {
    return static_cast<C>(special::Digamma(static_cast<double>(a)));
  }
};
// The trigonometric and hyperbolic functions of <cmath>, element by element.
#define SF_STD_UNARY_FN(NAME, FUNCTION)   \
  struct NAME {                           \
    static constexpr bool kEigen = false; \
    static constexpr int kCostNs = 10;    \
    template <typename C>                 \
    C operator()(C a) const {             \
      return std::FUNCTION(a);            \
    }                                     \
  }
SF_STD_UNARY_FN(TanFn, tan);
SF_STD_UNARY_FN(AsinFn, asin);
SF_STD_UNARY_FN(AcosFn, acos);
SF_STD_UNARY_FN(AtanFn, atan);
SF_STD_UNARY_FN(SinhFn, sinh);
SF_STD_UNARY_FN(CoshFn, cosh);
SF_STD_UNARY_FN(AsinhFn, asinh);
SF_STD_UNARY_FN(AcoshFn, acosh);
SF_STD_UNARY_FN(AtanhFn, atanh);
#undef SF_STD_UNARY_FN
struct InvertFn {
  static constexpr bool kEigen = false;
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a) const {
    return static_cast<C>(~a);
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
SF_EIGEN_UNARY_FN(FloorFn, 1, std::floor(a), floor);
SF_EIGEN_UNARY_FN(CeilFn, 1, std::ceil(a), ceil);
SF_EIGEN_UNARY_FN(SinFn, 5, std::sin(a), sin);
SF_EIGEN_UNARY_FN(CosFn, 5, std::cos(a), cos);
SF_EIGEN_UNARY_FN(Log1pFn, 5, std::log1p(a), log1p);
SF_EIGEN_UNARY_FN(Expm1Fn, 5, std::expm1(a), expm1);
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

// The number of set bits of each value, as uint8 (tf.bitwise.population_count).
template <typename T>
class PopulationCountOp : public OpKernel {
 public:
  explicit PopulationCountOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x_in = ctx->input(0);
    Tensor* y_out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x_in.shape(), &y_out));
    const T* x = x_in.data<T>();
    uint8_t* y = y_out->data<uint8_t>();
    using U = std::make_unsigned_t<T>;
    cwise::RunSharded(ctx, y_out->NumElements(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        y[i] = static_cast<uint8_t>(__builtin_popcountll(static_cast<U>(x[i])));
      }
    });
  }
};

// y = pred(x) as bool, for the floating types (half and bfloat16 widened: exact for these tests).
enum class FloatClass { kNan, kInf, kFinite };
template <typename T, FloatClass K>
class FloatPredicateOp : public OpKernel {
 public:
  explicit FloatPredicateOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x_in = ctx->input(0);
    Tensor* y_out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x_in.shape(), &y_out));
    const T* x = x_in.data<T>();
    bool* y = y_out->data<bool>();
    cwise::RunSharded(ctx, y_out->NumElements(), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float v = static_cast<float>(x[i]);
        if constexpr (K == FloatClass::kNan) {
          y[i] = std::isnan(v);
        } else if constexpr (K == FloatClass::kInf) {
          y[i] = std::isinf(v);
        } else {
          y[i] = std::isfinite(v);
        }
      }
    });
  }
};

#define SF_REGISTER_PREDICATE(NAME, KIND)                                           \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<float>("T"),    \
                  (FloatPredicateOp<float, KIND>));                                 \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<double>("T"),   \
                  (FloatPredicateOp<double, KIND>));                                \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<half>("T"),     \
                  (FloatPredicateOp<half, KIND>));                                  \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<bfloat16>("T"), \
                  (FloatPredicateOp<bfloat16, KIND>))

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
SF_REGISTER_UNARY_FLOAT("Floor", FloorFn);
SF_REGISTER_UNARY_FLOAT("Ceil", CeilFn);
SF_REGISTER_UNARY_FLOAT("Round", RoundFn);
SF_REGISTER_UNARY_FLOAT("Sin", SinFn);
SF_REGISTER_UNARY_FLOAT("Cos", CosFn);
SF_REGISTER_UNARY_FLOAT("Log1p", Log1pFn);
SF_REGISTER_UNARY_FLOAT("Expm1", Expm1Fn);
SF_REGISTER_UNARY_FLOAT("Erf", ErfFn);
SF_REGISTER_UNARY_FLOAT("Lgamma", LgammaFn);
SF_REGISTER_UNARY_FLOAT("Digamma", DigammaFn);
SF_REGISTER_UNARY_FLOAT("Tan", TanFn);
SF_REGISTER_UNARY_FLOAT("Asin", AsinFn);
SF_REGISTER_UNARY_FLOAT("Acos", AcosFn);
SF_REGISTER_UNARY_FLOAT("Atan", AtanFn);
SF_REGISTER_UNARY_FLOAT("Sinh", SinhFn);
SF_REGISTER_UNARY_FLOAT("Cosh", CoshFn);
SF_REGISTER_UNARY_FLOAT("Asinh", AsinhFn);
SF_REGISTER_UNARY_FLOAT("Acosh", AcoshFn);
SF_REGISTER_UNARY_FLOAT("Atanh", AtanhFn);
SF_REGISTER_PREDICATE("IsNan", FloatClass::kNan);
SF_REGISTER_PREDICATE("IsInf", FloatClass::kInf);
SF_REGISTER_PREDICATE("IsFinite", FloatClass::kFinite);
REGISTER_KERNEL(KernelDef("LogicalNot").Device(kDeviceCpu), UnaryOp<bool, LogicalNotFn>);
SF_REGISTER_UNARY("Invert", InvertFn, int8_t);
SF_REGISTER_UNARY("Invert", InvertFn, uint8_t);
SF_REGISTER_UNARY("Invert", InvertFn, int32_t);
SF_REGISTER_UNARY("Invert", InvertFn, int64_t);
#define SF_REGISTER_POPCOUNT(T)                                                           \
  REGISTER_KERNEL(KernelDef("PopulationCount").Device(kDeviceCpu).TypeConstraint<T>("T"), \
                  PopulationCountOp<T>)
SF_REGISTER_POPCOUNT(int8_t);
SF_REGISTER_POPCOUNT(uint8_t);
SF_REGISTER_POPCOUNT(int32_t);
SF_REGISTER_POPCOUNT(int64_t);
#undef SF_REGISTER_POPCOUNT

}  // namespace
}  // namespace shardflow
