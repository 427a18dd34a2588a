// Launchers of the CUDA kernels behind Cast, Fill, ZerosLike and OnesLike
// (kernels/gpu/array_ops.cu). Conventions as in gpu_launchers.h: plain pointers, int64 counts, a
// stream; element types as shardflow::DataType numbers; each launcher enqueues its work and
// returns cudaGetLastError() (or the error of the copy it enqueued).
//
// Thread safety: every launcher may be called from any thread.
#ifndef SHARDFLOW_KERNELS_GPU_ARRAY_OPS_CU_H_
#define SHARDFLOW_KERNELS_GPU_ARRAY_OPS_CU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace shardflow {
namespace gpu {

// DataType numbers of core/protos/types.proto (array_ops.cc checks them against the enum).
inline constexpr int kDtFloat = 1;
inline constexpr int kDtInt32 = 3;
inline constexpr int kDtInt64 = 9;
inline constexpr int kDtBool = 10;
inline constexpr int kDtBfloat16 = 14;
inline constexpr int kDtHalf = 19;

// Whether LaunchCast converts from and to `dtype`: float, int32, int64, bool, half, bfloat16.
inline bool CastSupported(int dtype) {
  return dtype == kDtFloat || dtype == kDtInt32 || dtype == kDtInt64 || dtype == kDtBool ||
         dtype == kDtBfloat16 || dtype == kDtHalf;
}

// out[i] = in[i] converted from `in_dtype` to `out_dtype` for i in [0, n), with the CPU's
// rules (core/framework/tensor_util.cc): to bool, x != 0; to half and bfloat16, through float,
// rounding to nearest even; floating to integer truncates toward zero, saturating at the
// integer type's limits, NaN giving 0; integer to integer wraps. Equal dtypes copy. in and out
// must not overlap. cudaErrorInvalidValue for a dtype CastSupported rejects.
cudaError_t LaunchCast(const void* in, int in_dtype, void* out, int out_dtype, int64_t n,
                       cudaStream_t stream);

// out[i] = *value for i in [0, n), elements of `elem_size` bytes (1, 2, 4 or 8); `value` is one
// element in device memory, read by the kernel.
cudaError_t LaunchFillFromDevice(const void* value, void* out, int elem_size, int64_t n,
                                 cudaStream_t stream);

// out[i] = the low `elem_size` bytes of `bits` (1, 2, 4 or 8; little-endian, as the host and the
// GPU are) for i in [0, n).
cudaError_t LaunchFillBits(void* out, int elem_size, uint64_t bits, int64_t n, cudaStream_t stream);

}  // namespace gpu
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_GPU_ARRAY_OPS_CU_H_
