// The epilogue of _FusedMatMul and _FusedConv2D on a GPU: bias and activation in one pass over
// the product, in place.
#include "kernels/gpu/gpu_launchers.h"

namespace shardflow {
namespace gpu {
namespace {

template <int kActivation>
__global__ void BiasActivationKernel(float* __restrict__ y, const float* __restrict__ bias,
                                     int64_t n, int64_t channels) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = y[i] + bias[i % channels];
    if (kActivation == 1) v = v > 0.f ? v : 0.f;
    if (kActivation == 2) v = tanhf(v);
    if (kActivation == 3) v = 1.f / (1.f + expf(-v));
    y[i] = v;
  }
}

}  // namespace

cudaError_t LaunchBiasActivation(float* y, const float* bias, int64_t n, int64_t channels,
                                 int activation, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (channels <= 0) return cudaErrorInvalidValue;
  const int blocks = BlocksFor(n);
  switch (activation) {
    case 0:
      BiasActivationKernel<0><<<blocks, kThreads, 0, stream>>>(y, bias, n, channels);
      break;
    case 1:
      BiasActivationKernel<1><<<blocks, kThreads, 0, stream>>>(y, bias, n, channels);
      break;
    case 2:
      BiasActivationKernel<2><<<blocks, kThreads, 0, stream>>>(y, bias, n, channels);
      break;
    case 3:
      BiasActivationKernel<3><<<blocks, kThreads, 0, stream>>>(y, bias, n, channels);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace shardflow
