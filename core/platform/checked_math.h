// Checked integer arithmetic for sizes computed from untrusted input.
//
// Every element count, byte count and offset that shardflow derives from bytes it did not make
// itself (a GraphDef, a TensorProto, a checkpoint, an RPC) is computed with these, so that an
// overflow becomes an error instead of a small number that a kernel then writes past:
//
//   int64_t bytes;
//   if (!CheckedMul(num_elements, DataTypeSize(dtype), &bytes)) return TooLarge(...);
//
// Both operands must be non-negative; the functions return false on overflow (and for a
// negative operand) and leave *out unspecified then.
//
// Thread safety: pure functions.
#ifndef SHARDFLOW_CORE_PLATFORM_CHECKED_MATH_H_
#define SHARDFLOW_CORE_PLATFORM_CHECKED_MATH_H_

#include <cstdint>

namespace shardflow {

// a * b for a, b >= 0; false when the product does not fit in int64.
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_mul_overflow(a, b, out);
}

// a + b for a, b >= 0; false when the sum does not fit in int64.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_add_overflow(a, b, out);
}

// True when [offset, offset + length) lies inside [0, size), with no overflow on the way.
// length 0 is inside when offset <= size.
inline bool RangeInside(int64_t offset, int64_t length, int64_t size) {
  if (offset < 0 || length < 0 || size < 0 || offset > size) return false;
  return length <= size - offset;
}

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_PLATFORM_CHECKED_MATH_H_
