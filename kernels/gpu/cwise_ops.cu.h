// Launchers of the element-wise CUDA kernels (kernels/gpu/cwise_ops.cu): unary functions, binary
// functions with NumPy broadcasting, comparisons, logical ops, AddN, Select and ReluGrad. Plain
// pointers, element counts and a stream, as in gpu_launchers.h: each enqueues its kernel on
// `stream` and returns cudaGetLastError(); nothing is launched when the element count is 0.
//
// Thread safety: every launcher may be called from any thread.
#ifndef SHARDFLOW_KERNELS_GPU_CWISE_OPS_CU_H_
#define SHARDFLOW_KERNELS_GPU_CWISE_OPS_CU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace shardflow {
namespace gpu {

// ---- broadcasting ----------------------------------------------------------------------------

// How up to three operands are read to produce a contiguous output of `dims` (row-major,
// outermost first): operand k's element for output coordinates (i_0, ..., i_{rank-1}) is at
// sum_d i_d * strides[k][d], with stride 0 along the dimensions it repeats. Built on the host by
// the kernels in cwise_ops.cc, with adjacent dimensions that broadcast alike merged.
inline constexpr int kMaxBroadcastRank = 8;
inline constexpr int kMaxBroadcastOperands = 3;
struct BroadcastIndex {
  int rank = 0;
  int64_t dims[kMaxBroadcastRank] = {};
  int64_t strides[kMaxBroadcastOperands][kMaxBroadcastRank] = {};
};

// How a kernel reads its operands. kFlat: operand k is element i * flat[k] (flat[k] is 1 for an
// operand with the output's element count, 0 for a single repeated value); kIndexed: through a
// BroadcastIndex.
struct OperandLayout {
  bool indexed = false;
  int flat[kMaxBroadcastOperands] = {1, 1, 1};
  BroadcastIndex index;
};

// ---- unary -----------------------------------------------------------------------------------

enum class UnaryFn : int {
  kNeg,
  kAbs,
  kSquare,
  kSign,
  kRelu,
  kSqrt,
  kRsqrt,
  kExp,
  kLog,
  kTanh,
  kSigmoid,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,
  kSin,
  kCos,
  kLog1p,
  kExpm1,
  kErf,
};
// True for the functions that have an int32 kernel (Neg, Abs, Square, Sign, Relu).
inline bool UnaryFnHasInt32(UnaryFn fn) {
  return fn == UnaryFn::kNeg || fn == UnaryFn::kAbs || fn == UnaryFn::kSquare ||
         fn == UnaryFn::kSign || fn == UnaryFn::kRelu;
}

// y[i] = fn(x[i]) for i in [0, n); y may equal x. The int32 overload returns
// cudaErrorInvalidValue for a function without an int32 kernel.
cudaError_t LaunchUnary(UnaryFn fn, const float* x, float* y, int64_t n, cudaStream_t stream);
cudaError_t LaunchUnary(UnaryFn fn, const int32_t* x, int32_t* y, int64_t n, cudaStream_t stream);

enum class FloatClass : int { kNan, kInf, kFinite };
// y[i] = whether x[i] is NaN / infinite / finite.
cudaError_t LaunchFloatPredicate(FloatClass cls, const float* x, bool* y, int64_t n,
                                 cudaStream_t stream);
// y[i] = !x[i].
cudaError_t LaunchLogicalNot(const bool* x, bool* y, int64_t n, cudaStream_t stream);

// ---- binary ----------------------------------------------------------------------------------

enum class BinaryFn : int {
  // Arithmetic: the output has the operands' type.
  kAdd,
  kSub,
  kMul,
  kDiv,
  kFloorDiv,
  kFloorMod,
  kMaximum,
  kMinimum,
  kPow,
  kSquaredDifference,
  // Comparisons and logical ops: the output is bool.
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kLogicalAnd,
  kLogicalOr,
};

// z[i] = fn(x, y) for the n output elements, the operands read as `layout` says (operands 0 and
// 1). z may equal x or y when that operand is read flat with stride 1. Combinations without a
// kernel return cudaErrorInvalidValue:
// - float -> float: Add, Sub, Mul, Div, FloorDiv, FloorMod, Maximum, Minimum, Pow,
//   SquaredDifference.
// - int32 -> int32: Add, Sub, Mul, Maximum, Minimum, SquaredDifference (wrapping on overflow).
// - float or int32 -> bool: Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual.
// - bool -> bool: Equal, NotEqual, LogicalAnd, LogicalOr.
cudaError_t LaunchBinary(BinaryFn fn, const float* x, const float* y, float* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream);
cudaError_t LaunchBinary(BinaryFn fn, const int32_t* x, const int32_t* y, int32_t* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream);
cudaError_t LaunchBinary(BinaryFn fn, const float* x, const float* y, bool* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream);
cudaError_t LaunchBinary(BinaryFn fn, const int32_t* x, const int32_t* y, bool* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream);
cudaError_t LaunchBinary(BinaryFn fn, const bool* x, const bool* y, bool* z, int64_t n,
                         const OperandLayout& layout, cudaStream_t stream);

// ---- AddN, Select, ReluGrad ------------------------------------------------------------------

// out[i] = inputs[0][i] + inputs[1][i] + ... (added in that order), for `num_inputs` >= 1 device
// arrays of n elements; `inputs` is a host array of device pointers. out may equal inputs[0].
cudaError_t LaunchAddN(const float* const* inputs, int num_inputs, float* out, int64_t n,
                       cudaStream_t stream);
cudaError_t LaunchAddN(const int32_t* const* inputs, int num_inputs, int32_t* out, int64_t n,
                       cudaStream_t stream);

// out[i] = cond ? t : e, operands 0 (cond), 1 (t) and 2 (e) read as `layout` says; elements of
// t, e and out are `elem_size` bytes (1, 2, 4 or 8), copied bit for bit. Only the chosen operand
// is read.
cudaError_t LaunchSelect(const bool* cond, const void* t, const void* e, void* out, int elem_size,
                         int64_t n, const OperandLayout& layout, cudaStream_t stream);

// out[i] = features[i] > 0 ? gradients[i] : 0. out may equal gradients.
cudaError_t LaunchReluGrad(const float* gradients, const float* features, float* out, int64_t n,
                           cudaStream_t stream);

}  // namespace gpu
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_GPU_CWISE_OPS_CU_H_
