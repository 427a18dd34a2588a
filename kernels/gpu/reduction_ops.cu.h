// Launchers of the reduction CUDA kernels (kernels/gpu/reduction_ops.cu): Sum, Prod, Max and Min
// over the middle dimension of an [outer, reduced, inner] view, ArgMax, and the small fills that
// the reduction kernels need. Conventions as in gpu_launchers.h: plain pointers, int64 counts, a
// stream; each launcher enqueues its work and returns cudaGetLastError().
//
// Under nvcc this header also defines the block-wide reduction helpers that reduction_ops.cu and
// nn_ops.cu share.
//
// Thread safety: every launcher may be called from any thread.
#ifndef SHARDFLOW_KERNELS_GPU_REDUCTION_OPS_CU_H_
#define SHARDFLOW_KERNELS_GPU_REDUCTION_OPS_CU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace shardflow {
namespace gpu {

enum class ReduceFn : int { kSum, kProd, kMax, kMin };

// Elements of scratch memory (of the reduced type) that LaunchReduce needs for this view; 0 when
// it needs none. Long reductions with few outputs are split into chunks whose partial results
// are reduced again.
int64_t ReduceScratchElems(int64_t outer, int64_t reduced, int64_t inner);

// out[o * inner + j] = fn over r in [0, reduced) of in[(o * reduced + r) * inner + j], for
// outer, inner >= 0 and reduced >= 1 (cudaErrorInvalidValue otherwise). `scratch` holds
// ReduceScratchElems(outer, reduced, inner) elements (may be null when that is 0) and must not
// overlap `in` or `out`. Max and Min propagate NaN. int32 sums and products wrap on overflow.
cudaError_t LaunchReduce(ReduceFn fn, const float* in, int64_t outer, int64_t reduced,
                         int64_t inner, float* out, float* scratch, cudaStream_t stream);
cudaError_t LaunchReduce(ReduceFn fn, const int32_t* in, int64_t outer, int64_t reduced,
                         int64_t inner, int32_t* out, int32_t* scratch, cudaStream_t stream);

// data[i] = data[i] / divisor for i in [0, n): float division, or truncating int32 division
// (divisor != 0). Mean's last step.
cudaError_t LaunchDivide(float* data, int64_t n, float divisor, cudaStream_t stream);
cudaError_t LaunchDivide(int32_t* data, int64_t n, int32_t divisor, cudaStream_t stream);

// out[i] = value for i in [0, n).
cudaError_t LaunchFillConstant(float* out, int64_t n, float value, cudaStream_t stream);
cudaError_t LaunchFillConstant(int32_t* out, int64_t n, int32_t value, cudaStream_t stream);

// out[o * inner + j] = the r in [0, reduced) maximising in[(o * reduced + r) * inner + j]: the
// first one on ties, the first NaN if there is one (as the CPU kernel). reduced >= 1; for an
// int32 `out`, reduced <= INT32_MAX (the caller checks both).
cudaError_t LaunchArgMax(const float* in, int64_t outer, int64_t reduced, int64_t inner,
                         int32_t* out, cudaStream_t stream);
cudaError_t LaunchArgMax(const float* in, int64_t outer, int64_t reduced, int64_t inner,
                         int64_t* out, cudaStream_t stream);
cudaError_t LaunchArgMax(const int32_t* in, int64_t outer, int64_t reduced, int64_t inner,
                         int32_t* out, cudaStream_t stream);
cudaError_t LaunchArgMax(const int32_t* in, int64_t outer, int64_t reduced, int64_t inner,
                         int64_t* out, cudaStream_t stream);

#if defined(__CUDACC__)

// Combines v over the 32 lanes of a warp whose lanes are all active; the result is in lane 0.
template <typename T, typename Combine>
__device__ __forceinline__ T WarpReduce(T v, Combine combine) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    v = combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Combines v over a one-dimensional block whose size is a multiple of 32 (at most 1024); the
// result is valid in thread 0. `shared` points at 32 elements of shared memory. Every thread of
// the block must call it, with the same arguments but v (it synchronises the block).
template <typename T, typename Combine>
__device__ T BlockReduce(T v, Combine combine, T identity, T* shared) {
  v = WarpReduce(v, combine);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // earlier readers of `shared` are done
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? shared[lane] : identity;
    v = WarpReduce(v, combine);
  }
  return v;
}

// BlockReduce with the result in every thread.
template <typename T, typename Combine>
__device__ T BlockAllReduce(T v, Combine combine, T identity, T* shared) {
  v = BlockReduce(v, combine, identity, shared);
  // Only thread 0 read shared[0] in BlockReduce, so it may overwrite it now.
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  return shared[0];
}

#endif  // defined(__CUDACC__)

}  // namespace gpu
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_GPU_REDUCTION_OPS_CU_H_
