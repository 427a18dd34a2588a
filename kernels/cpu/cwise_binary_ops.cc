// CPU kernels for the element-wise binary ops with NumPy broadcasting: arithmetic, comparisons
// and logical and/or.
//
// Registered (T):
// - Add, Sub, Mul, Maximum, Minimum, Less, LessEqual, Greater, GreaterEqual: float, double,
//   half, bfloat16, int32, int64, int8, uint8.
// - Equal, NotEqual: the same plus bool.
// - Div, SquaredDifference: float, double, half, bfloat16, int32, int64.
// - Pow: float, double, half, bfloat16, int32, int64 (integers exact, wrapping; a negative
//   integer exponent is an error).
// - Atan2, Polygamma: float, double, half, bfloat16.
// - BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, RightShift: int8, uint8, int32, int64.
// - LogicalAnd, LogicalOr: bool (no type attr).
// Allowed by the op definitions but not registered:
// - Div for int8 and uint8: narrow integers get only the cheap ops; division would need its own
//   zero check and a scalar loop. Cast to int32 first.
//
// Half and bfloat16 are computed in float, in blocks of kNarrowBlock elements. The broadcast
// itself is described by cwise::BroadcastPlan (cwise_ops_common.h).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "kernels/cpu/cwise_ops_common.h"
#include "kernels/cpu/special_functions.h"

namespace shardflow {
namespace {

using cwise::ComputeType;
using cwise::RunKind;

// Functors: operator() takes two values of the compute type and returns the compute type, or
// bool for comparisons. kCostNs is a rough cost per element for sharding.

struct AddFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a + b);
  }
};
struct SubFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a - b);
  }
};
struct MulFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a * b);
  }
};
// Integer division truncates toward zero; the kernel rejects zero divisors before computing, and
// INT_MIN / -1 wraps to INT_MIN instead of trapping.
struct DivFn {
  static constexpr int kCostNs = 4;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, int32_t>) {
      // Exact for every int32 pair (the rounding error of the double quotient is below the
      // distance to the next integer) and, unlike integer division, vectorisable.
      return b == -1 ? cwise::WrappingNeg(a)
                     : static_cast<C>(static_cast<double>(a) / static_cast<double>(b));
    } else if constexpr (std::is_integral_v<C>) {
      return b == -1 ? cwise::WrappingNeg(a) : static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};
// FloorDiv and FloorMod round the quotient toward minus infinity (Python's // and %): the
// remainder has the divisor's sign. Integer division by zero is an error (checked below).
struct FloorDivFn {
  static constexpr int kCostNs = 6;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return cwise::WrappingNeg(a);
      }
      C q = static_cast<C>(a / b);
      if constexpr (std::is_signed_v<C>) {
        if (a % b != 0 && ((a < 0) != (b < 0))) q = static_cast<C>(q - 1);
      }
      return q;
    } else {
      return std::floor(a / b);
    }
  }
};
struct FloorModFn {
  static constexpr int kCostNs = 6;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;
      }
      C r = static_cast<C>(a % b);
      if constexpr (std::is_signed_v<C>) {
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    } else {
      C r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
};
// Maximum and Minimum propagate NaN from either side.
struct MaximumFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return (a > b || cwise::IsNan(a)) ? a : b;
  }
};
struct MinimumFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return (a < b || cwise::IsNan(a)) ? a : b;
  }
};
// Integer powers by repeated squaring, wrapping modulo 2^bits as TensorFlow's (the kernel
// refuses negative exponents first).
struct PowFn {
  static constexpr int kCostNs = 20;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      U result = 1, base = static_cast<U>(a);
      for (U e = static_cast<U>(b); e != 0; e >>= 1) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<C>(result);
    } else {
      return std::pow(a, b);
    }
  }
};
// Bitwise ops on the integer types. Shifts clamp the shift amount to [0, bits - 1] as
// TensorFlow's kernels do (a shift by the width or more is undefined in C++); LeftShift works on
// the unsigned representation (so shifting a negative value is defined), RightShift of a signed
// value is arithmetic.
struct BitwiseAndFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct BitwiseOrFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct BitwiseXorFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
template <typename C>
C ClampedShift(C b) {
  constexpr C kMax = static_cast<C>(sizeof(C) * 8 - 1);
  return b < C(0) ? C(0) : (b > kMax ? kMax : b);
}
struct LeftShiftFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) << ClampedShift(b)));
  }
};
struct RightShiftFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(a >> ClampedShift(b));
  }
};
// polygamma(a, x): the a-th derivative of digamma (a a non-negative integer, else NaN).
struct PolygammaFn {
  static constexpr int kCostNs = 100;
  template <typename C>
  C operator()(C a, C b) const {
    return static_cast<C>(special::Polygamma(static_cast<double>(a), static_cast<double>(b)));
  }
};
struct Atan2Fn {
  static constexpr int kCostNs = 20;
  template <typename C>
  C operator()(C a, C b) const {
    return std::atan2(a, b);
  }
};
struct SquaredDifferenceFn {
  static constexpr int kCostNs = 1;
  template <typename C>
  C operator()(C a, C b) const {
    const C d = static_cast<C>(a - b);
    return static_cast<C>(d * d);
  }
};

#define SF_COMPARE_FN(NAME, EXPR)     \
  struct NAME {                       \
    static constexpr int kCostNs = 1; \
    template <typename C>             \
    bool operator()(C a, C b) const { \
      return EXPR;                    \
    }                                 \
  }
SF_COMPARE_FN(EqualFn, a == b);
SF_COMPARE_FN(NotEqualFn, a != b);
SF_COMPARE_FN(LessFn, a < b);
SF_COMPARE_FN(LessEqualFn, a <= b);
SF_COMPARE_FN(GreaterFn, a > b);
SF_COMPARE_FN(GreaterEqualFn, a >= b);
SF_COMPARE_FN(LogicalAndFn, a&& b);
SF_COMPARE_FN(LogicalOrFn, a || b);
#undef SF_COMPARE_FN

// z[0..n) = f over one run of the broadcast, in the compute type C.
template <typename C, typename Out, typename F>
inline void ComputeRun(RunKind kind, const C* x, const C* y, Out* z, int64_t n) {
  const F f;
  switch (kind) {
    case RunKind::kVectorVector:
      SF_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<Out>(f(x[i], y[i]));
      break;
    case RunKind::kScalarVector: {
      const C a = x[0];
      SF_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<Out>(f(a, y[i]));
      break;
    }
    case RunKind::kVectorScalar: {
      const C b = y[0];
      SF_SIMD_LOOP
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<Out>(f(x[i], b));
      break;
    }
  }
}

// Like ComputeRun for storage type T; half and bfloat16 are widened to float block by block.
template <typename T, typename Out, typename F>
void StorageRun(RunKind kind, const T* x, const T* y, Out* z, int64_t n) {
  if constexpr (!cwise::kIsNarrowFloat<T>) {
    ComputeRun<T, Out, F>(kind, x, y, z, n);
  } else {
    constexpr bool kBoolOut = std::is_same_v<Out, bool>;
    float xb[cwise::kNarrowBlock], yb[cwise::kNarrowBlock];
    float zb[kBoolOut ? 1 : cwise::kNarrowBlock];
    const bool x_vec = kind != RunKind::kScalarVector, y_vec = kind != RunKind::kVectorScalar;
    if (!x_vec) xb[0] = static_cast<float>(x[0]);
    if (!y_vec) yb[0] = static_cast<float>(y[0]);
    for (int64_t s = 0; s < n; s += cwise::kNarrowBlock) {
      const int64_t m = std::min(cwise::kNarrowBlock, n - s);
      if (x_vec) cwise::WidenToFloat(x + s, m, xb);
      if (y_vec) cwise::WidenToFloat(y + s, m, yb);
      if constexpr (kBoolOut) {
        ComputeRun<float, bool, F>(kind, xb, yb, z + s, m);
      } else {
        ComputeRun<float, float, F>(kind, xb, yb, zb, m);
        cwise::NarrowFromFloat(zb, m, z + s);
      }
    }
  }
}

template <typename T>
bool ContainsZero(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] == T(0)) return true;
  }
  return false;
}

template <typename T>
bool ContainsNegative(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] < T(0)) return true;
  }
  return false;
}

// z = f(x, y) with broadcasting. The output is T, or bool when F compares.
template <typename T, typename F>
class BinaryOp : public OpKernel {
 public:
  using C = ComputeType<T>;
  using Out = std::conditional_t<std::is_same_v<std::invoke_result_t<F, C, C>, bool>, bool, T>;

  explicit BinaryOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x_in = ctx->input(0);
    const Tensor& y_in = ctx->input(1);
    cwise::BroadcastPlan plan;
    OP_REQUIRES_OK(ctx, plan.Init(x_in.shape(), y_in.shape()));
    // Forwarding an input clears it in the context, so take what we need first.
    const T* x = x_in.data<T>();
    const T* y = y_in.data<T>();
    const TensorShape x_shape = x_in.shape(), y_shape = y_in.shape();
    const int64_t y_count = y_in.NumElements();
    if constexpr ((std::is_same_v<F, DivFn> || std::is_same_v<F, FloorDivFn> ||
                   std::is_same_v<F, FloorModFn>)&&std::is_integral_v<T>) {
      OP_REQUIRES(ctx, !ContainsZero(y, y_count),
                  absl::InvalidArgumentError(absl::StrCat(
                      "integer division by zero: the divisor (input y, shape ",
                      y_shape.DebugString(), ", dtype ", DataTypeString(DataTypeToEnum<T>::value),
                      ") contains 0; mask the zeros or divide in a floating type")));
    }
    if constexpr (std::is_same_v<F, PowFn> && std::is_signed_v<T> && std::is_integral_v<T>) {
      OP_REQUIRES(ctx, !ContainsNegative(y, y_count),
                  absl::InvalidArgumentError(absl::StrCat(
                      "Integers to negative integer powers are not allowed: the exponent (input "
                      "y, shape ",
                      y_shape.DebugString(), ", dtype ", DataTypeString(DataTypeToEnum<T>::value),
                      ") has a negative value; cast to a floating type first")));
    }
    Tensor* z_out = nullptr;
    const TensorShape& out_shape = plan.out_shape();
    if (std::is_same_v<Out, T> && x_shape == out_shape) {
      OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, out_shape, &z_out));
    } else if (std::is_same_v<Out, T> && y_shape == out_shape) {
      OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(1, 0, out_shape, &z_out));
    } else {
      OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &z_out));
    }
    Out* z = z_out->data<Out>();
    const RunKind kind = plan.last_kind();
    if (plan.collapsed_rank() <= 1) {
      // Same shapes, or a scalar with a tensor: one flat run.
      const bool x_vec = kind != RunKind::kScalarVector, y_vec = kind != RunKind::kVectorScalar;
      cwise::RunSharded(ctx, plan.num_elements(), F::kCostNs, [&](int64_t b, int64_t e) {
        StorageRun<T, Out, F>(kind, x_vec ? x + b : x, y_vec ? y + b : y, z + b, e - b);
      });
      return;
    }
    // Row, column or general N-d broadcast: runs along the last merged dimension.
    cwise::RunSharded(ctx, plan.num_elements(), F::kCostNs, [&](int64_t b, int64_t e) {
      plan.ForEachRun(b, e, [&](int64_t ox, int64_t oy, int64_t oz, int64_t n) {
        StorageRun<T, Out, F>(kind, x + ox, y + oy, z + oz, n);
      });
    });
  }
};

#define SF_REGISTER_BINARY(NAME, FN, T) \
  REGISTER_KERNEL(KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<T>("T"), BinaryOp<T, FN>)

#define SF_REGISTER_BINARY_FLOAT(NAME, FN) \
  SF_REGISTER_BINARY(NAME, FN, float);     \
  SF_REGISTER_BINARY(NAME, FN, double);    \
  SF_REGISTER_BINARY(NAME, FN, half);      \
  SF_REGISTER_BINARY(NAME, FN, bfloat16)

#define SF_REGISTER_BINARY_SIGNED(NAME, FN) \
  SF_REGISTER_BINARY_FLOAT(NAME, FN);       \
  SF_REGISTER_BINARY(NAME, FN, int32_t);    \
  SF_REGISTER_BINARY(NAME, FN, int64_t)

#define SF_REGISTER_BINARY_REAL(NAME, FN) \
  SF_REGISTER_BINARY_SIGNED(NAME, FN);    \
  SF_REGISTER_BINARY(NAME, FN, int8_t);   \
  SF_REGISTER_BINARY(NAME, FN, uint8_t)

// int32 arithmetic on a GPU device is shape arithmetic: TensorFlow's convention keeps it in host
// memory, computed by these CPU kernels (no copy to the device and back, no wait for the stream).
#define SF_REGISTER_HOST_INT32_ON_GPU(NAME, FN)     \
  REGISTER_KERNEL(KernelDef(NAME)                   \
                      .Device(kDeviceGpu)           \
                      .TypeConstraint<int32_t>("T") \
                      .HostMemory("x")              \
                      .HostMemory("y")              \
                      .HostMemory("z"),             \
                  BinaryOp<int32_t, FN>)
SF_REGISTER_HOST_INT32_ON_GPU("Add", AddFn);
SF_REGISTER_HOST_INT32_ON_GPU("Sub", SubFn);
SF_REGISTER_HOST_INT32_ON_GPU("Mul", MulFn);
SF_REGISTER_HOST_INT32_ON_GPU("Div", DivFn);
SF_REGISTER_HOST_INT32_ON_GPU("FloorDiv", FloorDivFn);
SF_REGISTER_HOST_INT32_ON_GPU("FloorMod", FloorModFn);
SF_REGISTER_HOST_INT32_ON_GPU("Maximum", MaximumFn);
SF_REGISTER_HOST_INT32_ON_GPU("Minimum", MinimumFn);
#undef SF_REGISTER_HOST_INT32_ON_GPU

SF_REGISTER_BINARY_REAL("Add", AddFn);
SF_REGISTER_BINARY_REAL("Sub", SubFn);
SF_REGISTER_BINARY_REAL("Mul", MulFn);
SF_REGISTER_BINARY_SIGNED("Div", DivFn);
SF_REGISTER_BINARY_REAL("FloorDiv", FloorDivFn);
SF_REGISTER_BINARY_REAL("FloorMod", FloorModFn);
SF_REGISTER_BINARY_REAL("Maximum", MaximumFn);
SF_REGISTER_BINARY_REAL("Minimum", MinimumFn);
SF_REGISTER_BINARY_SIGNED("Pow", PowFn);
SF_REGISTER_BINARY_FLOAT("Atan2", Atan2Fn);
SF_REGISTER_BINARY_FLOAT("Polygamma", PolygammaFn);
SF_REGISTER_BINARY_SIGNED("SquaredDifference", SquaredDifferenceFn);

SF_REGISTER_BINARY_REAL("Equal", EqualFn);
SF_REGISTER_BINARY("Equal", EqualFn, bool);
SF_REGISTER_BINARY_REAL("NotEqual", NotEqualFn);
SF_REGISTER_BINARY("NotEqual", NotEqualFn, bool);
SF_REGISTER_BINARY_REAL("Less", LessFn);
SF_REGISTER_BINARY_REAL("LessEqual", LessEqualFn);
SF_REGISTER_BINARY_REAL("Greater", GreaterFn);
SF_REGISTER_BINARY_REAL("GreaterEqual", GreaterEqualFn);

#define SF_REGISTER_BINARY_INT(NAME, FN) \
  SF_REGISTER_BINARY(NAME, FN, int8_t);  \
  SF_REGISTER_BINARY(NAME, FN, uint8_t); \
  SF_REGISTER_BINARY(NAME, FN, int32_t); \
  SF_REGISTER_BINARY(NAME, FN, int64_t)
SF_REGISTER_BINARY_INT("BitwiseAnd", BitwiseAndFn);
SF_REGISTER_BINARY_INT("BitwiseOr", BitwiseOrFn);
SF_REGISTER_BINARY_INT("BitwiseXor", BitwiseXorFn);
SF_REGISTER_BINARY_INT("LeftShift", LeftShiftFn);
SF_REGISTER_BINARY_INT("RightShift", RightShiftFn);
#undef SF_REGISTER_BINARY_INT

REGISTER_KERNEL(KernelDef("LogicalAnd").Device(kDeviceCpu), BinaryOp<bool, LogicalAndFn>);
REGISTER_KERNEL(KernelDef("LogicalOr").Device(kDeviceCpu), BinaryOp<bool, LogicalOrFn>);

}  // namespace
}  // namespace shardflow
