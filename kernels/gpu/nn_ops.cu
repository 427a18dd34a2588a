// CUDA kernels for Softmax, LogSoftmax, the softmax cross-entropies and BiasAdd (launchers
// declared in nn_ops.cu.h).
//
// The row kernels give each row one block (grid-striding over rows): the block finds the row's
// maximum, then the sum of exp(x - max), then writes the outputs, as the CPU kernels compute
// them (kernels/cpu/nn_ops.cc), so large logits (1e4) stay finite. Blocks are as wide as the row
// rounded up to a warp, at most 256 threads.
#include <cmath>
#include <cstdint>

#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/nn_ops.cu.h"
#include "kernels/gpu/reduction_ops.cu.h"

namespace shardflow {
namespace gpu {
namespace {

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
// NaN-propagating maximum: a NaN in the row makes the whole row NaN, as on the CPU.
struct MaxOp {
  __device__ float operator()(float a, float b) const { return (a > b || a != a) ? a : b; }
};

// Grid and block for one block per row.
constexpr int64_t kMaxRowBlocks = 65535;
int RowBlocks(int64_t rows) {
  return static_cast<int>(rows < kMaxRowBlocks ? rows : kMaxRowBlocks);
}
int RowThreads(int64_t classes) {
  return classes >= kThreads ? kThreads : static_cast<int>((classes + 31) / 32 * 32);
}

// The row's maximum and sum of exp(x - max), in every thread of the block.
__device__ void RowMaxAndSum(const float* xr, int64_t c, float* shared, float* max, float* sum) {
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) m = MaxOp()(m, xr[k]);
  m = BlockAllReduce(m, MaxOp(), -INFINITY, shared);
  float s = 0.0f;
  for (int64_t k = threadIdx.x; k < c; k += blockDim.x) s += expf(xr[k] - m);
  s = BlockAllReduce(s, AddOp(), 0.0f, shared);
  *max = m;
  *sum = s;
}

template <bool kLog>
__global__ void SoftmaxKernel(const float* x, float* y, int64_t rows, int64_t c) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * c;
    float* yr = y + r * c;
    float m, s;
    RowMaxAndSum(xr, c, shared, &m, &s);
    if constexpr (kLog) {
      const float log_sum = logf(s);
      for (int64_t k = threadIdx.x; k < c; k += blockDim.x) yr[k] = (xr[k] - m) - log_sum;
    } else {
      const float inv = 1.0f / s;
      for (int64_t k = threadIdx.x; k < c; k += blockDim.x) yr[k] = expf(xr[k] - m) * inv;
    }
  }
}

__global__ void SoftmaxXentKernel(const float* x, const float* labels, float* loss, float* bp,
                                  int64_t rows, int64_t c) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * c;
    const float* lr = labels + r * c;
    float* br = bp + r * c;
    float m, s;
    RowMaxAndSum(xr, c, shared, &m, &s);
    const float log_sum = logf(s), inv = 1.0f / s;
    float part = 0.0f;
    for (int64_t k = threadIdx.x; k < c; k += blockDim.x) {
      const float xk = xr[k], lk = lr[k];
      part += lk * (log_sum - (xk - m));
      br[k] = expf(xk - m) * inv - lk;
    }
    part = BlockReduce(part, AddOp(), 0.0f, shared);
    if (threadIdx.x == 0) loss[r] = part;
  }
}

template <typename L>
__global__ void SparseSoftmaxXentKernel(const float* x, const L* labels, float* loss, float* bp,
                                        int64_t rows, int64_t c) {
  __shared__ float shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * c;
    float* br = bp + r * c;
    const int64_t label = static_cast<int64_t>(labels[r]);
    const bool valid = label >= 0 && label < c;
    float m, s;
    RowMaxAndSum(xr, c, shared, &m, &s);
    const float inv = 1.0f / s;
    for (int64_t k = threadIdx.x; k < c; k += blockDim.x) {
      br[k] = expf(xr[k] - m) * inv - (k == label ? 1.0f : 0.0f);
    }
    if (threadIdx.x == 0) loss[r] = valid ? logf(s) - (xr[label] - m) : NAN;
  }
}

__global__ void BiasAddKernel(const float* x, const float* b, float* y, int64_t n,
                              int64_t channels) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = x[i] + b[i % channels];
  }
}

template <typename L>
cudaError_t SparseXent(const float* features, const L* labels, float* loss, float* backprop,
                       int64_t rows, int64_t classes, cudaStream_t stream) {
  if (classes < 1 || rows < 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  SparseSoftmaxXentKernel<L><<<RowBlocks(rows), RowThreads(classes), 0, stream>>>(
      features, labels, loss, backprop, rows, classes);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchSoftmax(const float* logits, float* out, int64_t rows, int64_t classes, bool log,
                          cudaStream_t stream) {
  if (classes < 1 || rows < 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  if (log) {
    SoftmaxKernel<true>
        <<<RowBlocks(rows), RowThreads(classes), 0, stream>>>(logits, out, rows, classes);
  } else {
    SoftmaxKernel<false>
        <<<RowBlocks(rows), RowThreads(classes), 0, stream>>>(logits, out, rows, classes);
  }
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxXent(const float* features, const float* labels, float* loss,
                              float* backprop, int64_t rows, int64_t classes, cudaStream_t stream) {
  if (classes < 1 || rows < 0) return cudaErrorInvalidValue;
  if (rows == 0) return cudaSuccess;
  SoftmaxXentKernel<<<RowBlocks(rows), RowThreads(classes), 0, stream>>>(features, labels, loss,
                                                                         backprop, rows, classes);
  return cudaGetLastError();
}

cudaError_t LaunchSparseSoftmaxXent(const float* features, const int32_t* labels, float* loss,
                                    float* backprop, int64_t rows, int64_t classes,
                                    cudaStream_t stream) {
  return SparseXent<int32_t>(features, labels, loss, backprop, rows, classes, stream);
}

cudaError_t LaunchSparseSoftmaxXent(const float* features, const int64_t* labels, float* loss,
                                    float* backprop, int64_t rows, int64_t classes,
                                    cudaStream_t stream) {
  return SparseXent<int64_t>(features, labels, loss, backprop, rows, classes, stream);
}

cudaError_t LaunchBiasAdd(const float* value, const float* bias, float* out, int64_t rows,
                          int64_t channels, cudaStream_t stream) {
  if (channels < 1 || rows < 0) return cudaErrorInvalidValue;
  const int64_t n = rows * channels;
  if (n == 0) return cudaSuccess;
  BiasAddKernel<<<BlocksFor(n), kThreads, 0, stream>>>(value, bias, out, n, channels);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace shardflow
