// Transpose of a tensor of rank <= 8 with elements of 1, 2, 4 or 8 bytes: one thread per output
// element, which decomposes its index over the output dims and gathers from the input through
// the permuted strides.
#include "kernels/gpu/gpu_launchers.h"

namespace shardflow {
namespace gpu {
namespace {

struct TransposeParams {
  int rank;
  int64_t out_dims[8];
  int64_t in_strides[8];  // stride in the input of output dim i
};

template <typename T>
__global__ void TransposeKernel(const T* __restrict__ in, T* __restrict__ out, int64_t n,
                                TransposeParams p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, src = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      src += c * p.in_strides[d];
    }
    out[i] = in[src];
  }
}

}  // namespace

cudaError_t LaunchTranspose(const void* in, void* out, int rank, const int64_t* in_dims,
                            const int* perm, int elem_size, cudaStream_t stream) {
  if (rank < 0 || rank > 8) return cudaErrorInvalidValue;
  TransposeParams p;
  p.rank = rank;
  int64_t strides[8];
  int64_t n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = n;
    n *= in_dims[d];
  }
  for (int i = 0; i < rank; ++i) {
    p.out_dims[i] = in_dims[perm[i]];
    p.in_strides[i] = strides[perm[i]];
  }
  if (n == 0) return cudaSuccess;
  const int blocks = BlocksFor(n);
  switch (elem_size) {
    case 1:
      TransposeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint8_t*>(in),
                                                       static_cast<uint8_t*>(out), n, p);
      break;
    case 2:
      TransposeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint16_t*>(in),
                                                       static_cast<uint16_t*>(out), n, p);
      break;
    case 4:
      TransposeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint32_t*>(in),
                                                       static_cast<uint32_t*>(out), n, p);
      break;
    case 8:
      TransposeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const uint64_t*>(in),
                                                       static_cast<uint64_t*>(out), n, p);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace shardflow
