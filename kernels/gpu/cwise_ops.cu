// CUDA kernels for the element-wise ops (launchers declared in cwise_ops.cu.h).
//
// Float math uses the accurate CUDA library functions (expf, logf, ...; never the __expf
// intrinsics) and IEEE division and square root, so results agree with the CPU kernels to a few
// ulp. Integer arithmetic wraps on overflow (computed in unsigned types, where it is defined).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/gpu/cwise_ops.cu.h"
#include "kernels/gpu/gpu_launchers.h"

namespace shardflow {
namespace gpu {
namespace {

template <typename T>
__device__ __forceinline__ bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// Two's-complement wrapping arithmetic for int32 (signed overflow is undefined in C++).
__device__ __forceinline__ int32_t WrapAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
__device__ __forceinline__ int32_t WrapSub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
__device__ __forceinline__ int32_t WrapMul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

// ---- unary functors --------------------------------------------------------------------------

struct NegFn {
  __device__ float operator()(float a) const { return -a; }
  __device__ int32_t operator()(int32_t a) const { return WrapSub(0, a); }
};
struct AbsFn {
  __device__ float operator()(float a) const { return fabsf(a); }
  __device__ int32_t operator()(int32_t a) const { return a < 0 ? WrapSub(0, a) : a; }
};
struct SquareFn {
  __device__ float operator()(float a) const { return a * a; }
  __device__ int32_t operator()(int32_t a) const { return WrapMul(a, a); }
};
// -1, 0 or 1; NaN stays NaN (as on the CPU).
struct SignFn {
  template <typename T>
  __device__ T operator()(T a) const {
    return a > T(0) ? T(1) : (a < T(0) ? T(-1) : a);
  }
};
// max(x, 0); NaN stays NaN.
struct ReluFn {
  template <typename T>
  __device__ T operator()(T a) const {
    return a < T(0) ? T(0) : a;
  }
};

#define SF_FLOAT_UNARY_FN(NAME, EXPR)                           \
  struct NAME {                                                 \
    __device__ float operator()(float a) const { return EXPR; } \
  }
SF_FLOAT_UNARY_FN(SqrtFn, sqrtf(a));
// 1 / sqrt(x) with IEEE division, not rsqrtf (an approximation), to match the CPU.
SF_FLOAT_UNARY_FN(RsqrtFn, 1.0f / sqrtf(a));
SF_FLOAT_UNARY_FN(ExpFn, expf(a));
SF_FLOAT_UNARY_FN(LogFn, logf(a));
SF_FLOAT_UNARY_FN(TanhFn, tanhf(a));
SF_FLOAT_UNARY_FN(SigmoidFn, 1.0f / (1.0f + expf(-a)));
SF_FLOAT_UNARY_FN(ReciprocalFn, 1.0f / a);
SF_FLOAT_UNARY_FN(FloorFn, floorf(a));
SF_FLOAT_UNARY_FN(CeilFn, ceilf(a));
// Halves to even, as the CPU's nearbyint in the default rounding mode.
SF_FLOAT_UNARY_FN(RoundFn, rintf(a));
SF_FLOAT_UNARY_FN(SinFn, sinf(a));
SF_FLOAT_UNARY_FN(CosFn, cosf(a));
SF_FLOAT_UNARY_FN(Log1pFn, log1pf(a));
SF_FLOAT_UNARY_FN(Expm1Fn, expm1f(a));
SF_FLOAT_UNARY_FN(ErfFn, erff(a));
#undef SF_FLOAT_UNARY_FN

template <typename T, typename F>
__global__ void UnaryKernel(const T* x, T* y, int64_t n) {
  const F f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = f(x[i]);
  }
}

template <typename T, typename F>
cudaError_t Unary(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  UnaryKernel<T, F><<<BlocksFor(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

template <FloatClass K>
__global__ void FloatPredicateKernel(const float* x, bool* y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float v = x[i];
    if constexpr (K == FloatClass::kNan) {
      y[i] = isnan(v);
    } else if constexpr (K == FloatClass::kInf) {
      y[i] = isinf(v);
    } else {
      y[i] = isfinite(v);
    }
  }
}

__global__ void LogicalNotKernel(const bool* x, bool* y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = !x[i];
  }
}

// ---- binary functors -------------------------------------------------------------------------

struct AddFn {
  __device__ float operator()(float a, float b) const { return a + b; }
  __device__ int32_t operator()(int32_t a, int32_t b) const { return WrapAdd(a, b); }
};
struct SubFn {
  __device__ float operator()(float a, float b) const { return a - b; }
  __device__ int32_t operator()(int32_t a, int32_t b) const { return WrapSub(a, b); }
};
struct MulFn {
  __device__ float operator()(float a, float b) const { return a * b; }
  __device__ int32_t operator()(int32_t a, int32_t b) const { return WrapMul(a, b); }
};
struct DivFn {
  __device__ float operator()(float a, float b) const { return a / b; }
};
struct FloorDivFn {
  __device__ float operator()(float a, float b) const { return floorf(a / b); }
};
// The remainder with the divisor's sign, as Python's % (and the CPU kernel).
struct FloorModFn {
  __device__ float operator()(float a, float b) const {
    float r = fmodf(a, b);
    if (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) r += b;
    return r;
  }
};
// Maximum and Minimum propagate NaN from either side.
struct MaximumFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return (a > b || IsNan(a)) ? a : b;
  }
};
struct MinimumFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return (a < b || IsNan(a)) ? a : b;
  }
};
struct PowFn {
  __device__ float operator()(float a, float b) const { return powf(a, b); }
};
struct SquaredDifferenceFn {
  __device__ float operator()(float a, float b) const {
    const float d = a - b;
    return d * d;
  }
  __device__ int32_t operator()(int32_t a, int32_t b) const {
    const int32_t d = WrapSub(a, b);
    return WrapMul(d, d);
  }
};

#define SF_COMPARE_FN(NAME, EXPR)                \
  struct NAME {                                  \
    template <typename T>                        \
    __device__ bool operator()(T a, T b) const { \
      return EXPR;                               \
    }                                            \
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

// Offset of output element i in operand k under a BroadcastIndex.
__device__ __forceinline__ void BroadcastOffsets(const BroadcastIndex& ix, int num_operands,
                                                 int64_t i, int64_t* offsets) {
  for (int k = 0; k < num_operands; ++k) offsets[k] = 0;
  int64_t rem = i;
  for (int d = ix.rank - 1; d >= 0; --d) {
    const int64_t dim = ix.dims[d];
    const int64_t coord = rem % dim;
    rem /= dim;
    for (int k = 0; k < num_operands; ++k) offsets[k] += coord * ix.strides[k][d];
  }
}

// Flat operands: x stride xs and y stride ys are 0 (a repeated scalar) or 1.
template <typename T, typename Out, typename F>
__global__ void BinaryFlatKernel(const T* x, const T* y, Out* z, int64_t n, int64_t xs,
                                 int64_t ys) {
  const F f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    z[i] = static_cast<Out>(f(x[i * xs], y[i * ys]));
  }
}

template <typename T, typename Out, typename F>
__global__ void BinaryIndexedKernel(const T* x, const T* y, Out* z, int64_t n,
                                    const BroadcastIndex ix) {
  const F f;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int64_t off[2];
    BroadcastOffsets(ix, 2, i, off);
    z[i] = static_cast<Out>(f(x[off[0]], y[off[1]]));
  }
}

template <typename T, typename Out, typename F>
cudaError_t Binary(const T* x, const T* y, Out* z, int64_t n, const OperandLayout& layout,
                   cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (layout.indexed) {
    if (layout.index.rank < 1 || layout.index.rank > kMaxBroadcastRank) {
      return cudaErrorInvalidValue;
    }
    BinaryIndexedKernel<T, Out, F><<<BlocksFor(n), kThreads, 0, stream>>>(x, y, z, n, layout.index);
  } else {
    BinaryFlatKernel<T, Out, F><<<BlocksFor(n), kThreads, 0, stream>>>(
        x, y, z, n, layout.flat[0] ? 1 : 0, layout.flat[1] ? 1 : 0);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t Compare(BinaryFn fn, const T* x, const T* y, bool* z, int64_t n,
                    const OperandLayout& layout, cudaStream_t stream) {
  switch (fn) {
    case BinaryFn::kEqual:
      return Binary<T, bool, EqualFn>(x, y, z, n, layout, stream);
    case BinaryFn::kNotEqual:
      return Binary<T, bool, NotEqualFn>(x, y, z, n, layout, stream);
    case BinaryFn::kLess:
      return Binary<T, bool, LessFn>(x, y, z, n, layout, stream);
    case BinaryFn::kLessEqual:
      return Binary<T, bool, LessEqualFn>(x, y, z, n, layout, stream);
    case BinaryFn::kGreater:
      return Binary<T, bool, GreaterFn>(x, y, z, n, layout, stream);
    case BinaryFn::kGreaterEqual:
      return Binary<T, bool, GreaterEqualFn>(x, y, z, n, layout, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

// ---- AddN ------------------------------------------------------------------------------------

// Inputs added per launch; more inputs take further launches that add onto the output.
constexpr int kAddNPerLaunch = 8;
template <typename T>
struct AddNArgs {
  const T* in[kAddNPerLaunch];
  int count;        // inputs in `in`, >= 1
  bool accumulate;  // add onto out's current values first
};

template <typename T>
__device__ __forceinline__ T AddValues(T a, T b) {
  if constexpr (std::is_same_v<T, int32_t>) {
    return WrapAdd(a, b);
  } else {
    return a + b;
  }
}

template <typename T>
__global__ void AddNKernel(const AddNArgs<T> args, T* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    // Same order as the CPU: ((in0 + in1) + in2) + ...
    T acc = args.accumulate ? AddValues(out[i], args.in[0][i]) : args.in[0][i];
    for (int k = 1; k < args.count; ++k) acc = AddValues(acc, args.in[k][i]);
    out[i] = acc;
  }
}

template <typename T>
cudaError_t AddN(const T* const* inputs, int num_inputs, T* out, int64_t n, cudaStream_t stream) {
  if (num_inputs < 1) return cudaErrorInvalidValue;
  if (n <= 0) return cudaSuccess;
  for (int first = 0; first < num_inputs; first += kAddNPerLaunch) {
    AddNArgs<T> args;
    args.count = num_inputs - first < kAddNPerLaunch ? num_inputs - first : kAddNPerLaunch;
    args.accumulate = first > 0;
    for (int k = 0; k < kAddNPerLaunch; ++k) {
      args.in[k] = k < args.count ? inputs[first + k] : nullptr;
    }
    AddNKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(args, out, n);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// ---- Select ----------------------------------------------------------------------------------

template <typename E>
__global__ void SelectKernel(const bool* cond, const E* t, const E* e, E* out, int64_t n,
                             const OperandLayout layout) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    int64_t off[3];
    if (layout.indexed) {
      BroadcastOffsets(layout.index, 3, i, off);
    } else {
      for (int k = 0; k < 3; ++k) off[k] = layout.flat[k] ? i : 0;
    }
    out[i] = cond[off[0]] ? t[off[1]] : e[off[2]];
  }
}

template <typename E>
cudaError_t Select(const bool* cond, const void* t, const void* e, void* out, int64_t n,
                   const OperandLayout& layout, cudaStream_t stream) {
  SelectKernel<E><<<BlocksFor(n), kThreads, 0, stream>>>(
      cond, static_cast<const E*>(t), static_cast<const E*>(e), static_cast<E*>(out), n, layout);
  return cudaGetLastError();
}

__global__ void ReluGradKernel(const float* g, const float* f, float* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = f[i] > 0.0f ? g[i] : 0.0f;
  }
}

}  // namespace

cudaError_t LaunchUnary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream) {
  switch (fn) {
    case UnaryFn::kNeg:
      return Unary<float, NegFn>(x, y, n, stream);
    case UnaryFn::kAbs:
      return Unary<float, AbsFn>(x, y, n, stream);
    case UnaryFn::kSquare:
      return Unary<float, SquareFn>(x, y, n, stream);
    case UnaryFn::kSign:
      return Unary<float, SignFn>(x, y, n, stream);
    case UnaryFn::kRelu:
      return Unary<float, ReluFn>(x, y, n, stream);
    case UnaryFn::kSqrt:
      return Unary<float, SqrtFn>(x, y, n, stream);
    case UnaryFn::kRsqrt:
      return Unary<float, RsqrtFn>(x, y, n, stream);
    case UnaryFn::kExp:
      return Unary<float, ExpFn>(x, y, n, stream);
    case UnaryFn::kLog:
      return Unary<float, LogFn>(x, y, n, stream);
    case UnaryFn::kTanh:
      return Unary<float, TanhFn>(x, y, n, stream);
    case UnaryFn::kSigmoid:
      return Unary<float, SigmoidFn>(x, y, n, stream);
    case UnaryFn::kReciprocal:
      return Unary<float, ReciprocalFn>(x, y, n, stream);
    case UnaryFn::kFloor:
      return Unary<float, FloorFn>(x, y, n, stream);
    case UnaryFn::kCeil:
      return Unary<float, CeilFn>(x, y, n, stream);
    case UnaryFn::kRound:
      return Unary<float, RoundFn>(x, y, n, stream);
    case UnaryFn::kSin:
      return Unary<float, SinFn>(x, y, n, stream);
    case UnaryFn::kCos:
      return Unary<float, CosFn>(x, y, n, stream);
    case UnaryFn::kLog1p:
      return Unary<float, Log1pFn>(x, y, n, stream);
    case UnaryFn::kExpm1:
      return Unary<float, Expm1Fn>(x, y, n, stream);
    case UnaryFn::kErf:
      return Unary<float, ErfFn>(x, y, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchUnary(UnaryFn fn, const int32_t* x, int32_t* y, int64_t n, cudaStream_t stream) {
  switch (fn) {
    case UnaryFn::kNeg:
      return Unary<int32_t, NegFn>(x, y, n, stream);
    case UnaryFn::kAbs:
      return Unary<int32_t, AbsFn>(x, y, n, stream);
    case UnaryFn::kSquare:
      return Unary<int32_t, SquareFn>(x, y, n, stream);
    case UnaryFn::kSign:
      return Unary<int32_t, SignFn>(x, y, n, stream);
    case UnaryFn::kRelu:
      return Unary<int32_t, ReluFn>(x, y, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchFloatPredicate(FloatClass cls, const float* x, bool* y, int64_t n,
                                 cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (cls) {
    case FloatClass::kNan:
      FloatPredicateKernel<FloatClass::kNan><<<BlocksFor(n), kThreads, 0, stream>>>(x, y, n);
      break;
    case FloatClass::kInf:
      FloatPredicateKernel<FloatClass::kInf><<<BlocksFor(n), kThreads, 0, stream>>>(x, y, n);
      break;
    case FloatClass::kFinite:
      FloatPredicateKernel<FloatClass::kFinite><<<BlocksFor(n), kThreads, 0, stream>>>(x, y, n);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t LaunchLogicalNot(const bool* x, bool* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  LogicalNotKernel<<<BlocksFor(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchBinary(BinaryFn fn, const float* x, const float* y, float* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream) {
  switch (fn) {
    case BinaryFn::kAdd:
      return Binary<float, float, AddFn>(x, y, z, n, layout, stream);
    case BinaryFn::kSub:
      return Binary<float, float, SubFn>(x, y, z, n, layout, stream);
    case BinaryFn::kMul:
      return Binary<float, float, MulFn>(x, y, z, n, layout, stream);
    case BinaryFn::kDiv:
      return Binary<float, float, DivFn>(x, y, z, n, layout, stream);
    case BinaryFn::kFloorDiv:
      return Binary<float, float, FloorDivFn>(x, y, z, n, layout, stream);
    case BinaryFn::kFloorMod:
      return Binary<float, float, FloorModFn>(x, y, z, n, layout, stream);
    case BinaryFn::kMaximum:
      return Binary<float, float, MaximumFn>(x, y, z, n, layout, stream);
    case BinaryFn::kMinimum:
      return Binary<float, float, MinimumFn>(x, y, z, n, layout, stream);
    case BinaryFn::kPow:
      return Binary<float, float, PowFn>(x, y, z, n, layout, stream);
    case BinaryFn::kSquaredDifference:
      return Binary<float, float, SquaredDifferenceFn>(x, y, z, n, layout, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchBinary(BinaryFn fn, const int32_t* x, const int32_t* y, int32_t* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream) {
  switch (fn) {
    case BinaryFn::kAdd:
      return Binary<int32_t, int32_t, AddFn>(x, y, z, n, layout, stream);
    case BinaryFn::kSub:
      return Binary<int32_t, int32_t, SubFn>(x, y, z, n, layout, stream);
    case BinaryFn::kMul:
      return Binary<int32_t, int32_t, MulFn>(x, y, z, n, layout, stream);
    case BinaryFn::kMaximum:
      return Binary<int32_t, int32_t, MaximumFn>(x, y, z, n, layout, stream);
    case BinaryFn::kMinimum:
      return Binary<int32_t, int32_t, MinimumFn>(x, y, z, n, layout, stream);
    case BinaryFn::kSquaredDifference:
      return Binary<int32_t, int32_t, SquaredDifferenceFn>(x, y, z, n, layout, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchBinary(BinaryFn fn, const float* x, const float* y, bool* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream) {
  return Compare<float>(fn, x, y, z, n, layout, stream);
}

cudaError_t LaunchBinary(BinaryFn fn, const int32_t* x, const int32_t* y, bool* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream) {
  return Compare<int32_t>(fn, x, y, z, n, layout, stream);
}

cudaError_t LaunchBinary(BinaryFn fn, const bool* x, const bool* y, bool* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream) {
  switch (fn) {
    case BinaryFn::kEqual:
      return Binary<bool, bool, EqualFn>(x, y, z, n, layout, stream);
    case BinaryFn::kNotEqual:
      return Binary<bool, bool, NotEqualFn>(x, y, z, n, layout, stream);
    case BinaryFn::kLogicalAnd:
      return Binary<bool, bool, LogicalAndFn>(x, y, z, n, layout, stream);
    case BinaryFn::kLogicalOr:
      return Binary<bool, bool, LogicalOrFn>(x, y, z, n, layout, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchAddN(const float* const* inputs, int num_inputs, float* out, int64_t n,
                       cudaStream_t stream) {
  return AddN<float>(inputs, num_inputs, out, n, stream);
}

cudaError_t LaunchAddN(const int32_t* const* inputs, int num_inputs, int32_t* out, int64_t n,
                       cudaStream_t stream) {
  return AddN<int32_t>(inputs, num_inputs, out, n, stream);
}

cudaError_t LaunchSelect(const bool* cond, const void* t, const void* e, void* out, int elem_size,
                         int64_t n, const OperandLayout& layout, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (layout.indexed && (layout.index.rank < 1 || layout.index.rank > kMaxBroadcastRank)) {
    return cudaErrorInvalidValue;
  }
  switch (elem_size) {
    case 1:
      return Select<uint8_t>(cond, t, e, out, n, layout, stream);
    case 2:
      return Select<uint16_t>(cond, t, e, out, n, layout, stream);
    case 4:
      return Select<uint32_t>(cond, t, e, out, n, layout, stream);
    case 8:
      return Select<uint64_t>(cond, t, e, out, n, layout, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchReluGrad(const float* gradients, const float* features, float* out, int64_t n,
                           cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ReluGradKernel<<<BlocksFor(n), kThreads, 0, stream>>>(gradients, features, out, n);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace shardflow
