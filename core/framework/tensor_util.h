// Tensor utilities shared by the graph builder and kernels.
#ifndef SHARDFLOW_CORE_FRAMEWORK_TENSOR_UTIL_H_
#define SHARDFLOW_CORE_FRAMEWORK_TENSOR_UTIL_H_

#include "absl/status/statusor.h"
#include "core/framework/tensor.h"

namespace shardflow {

// Converts every element of `in` to `to` (C++ static_cast semantics; float to bool is x != 0;
// float to integer is defined for every value: NaN -> 0, out-of-range values saturate to the
// integer type's min or max, see Note [Float to integer casts] in tensor_util.cc).
// Error for string tensors unless both are strings. `out` must have `in`'s shape and dtype `to`.
absl::Status CastInto(const Tensor& in, Tensor* out);

// Whole arrays between float and the 16-bit floats, rounding to nearest even exactly as
// half(float) and bfloat16(float) do (NaN stays NaN), but 8 elements per instruction where the
// build has F16C (half) and in integer arithmetic the compiler vectorizes (bfloat16): the
// element-by-element conversions ran at ~200 M elements/s, too slow for casts of whole gradient
// buckets (all-reduce compression) and for the ring's half-precision reductions.
void FloatToHalf(const float* in, half* out, int64_t n);
void HalfToFloat(const half* in, float* out, int64_t n);
void FloatToBfloat16(const float* in, bfloat16* out, int64_t n);
void Bfloat16ToFloat(const bfloat16* in, float* out, int64_t n);
absl::StatusOr<Tensor> CastTensor(const Tensor& in, DataType to);

// Element-wise equality of dtype, shape and values (bitwise for floats, so NaN == NaN).
bool TensorsEqual(const Tensor& a, const Tensor& b);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_TENSOR_UTIL_H_
