// FusedBatchNorm and its gradient on the GPU, channels last: x is [rows, c]. The same arithmetic
// as the CPU kernel (kernels/cpu/batch_norm_ops.cc): per-channel sums in double, the training
// variance from the sums of d = x - shift with the shift the mean of the first 64 rows (so that
// E[d^2] - E[d]^2 does not cancel), then y = x * a + b with per-channel a and b.
//
// Column sums: blocks of 32 channels x 8 row lanes, each thread summing a strided set of rows in
// double, the lanes reduced in shared memory and added atomically into `sums` (zeroed first).
#include "kernels/gpu/gpu_launchers.h"

namespace shardflow {
namespace gpu {
namespace {

constexpr int kCols = 32;
constexpr int kLanes = 8;

// shift[k] = the mean of the first min(rows, 64) rows of channel k.
__global__ void ShiftKernel(const float* __restrict__ x, float* __restrict__ shift, int64_t rows,
                            int64_t c) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= c) return;
  const int64_t head = rows < 64 ? rows : 64;
  float s = 0;
  for (int64_t r = 0; r < head; ++r) s += x[r * c + k];
  shift[k] = s / static_cast<float>(head > 0 ? head : 1);
}

// mode 0: sums[k] += x - shift, sums[c + k] += (x - shift)^2 (shift = aux).
// mode 1: sums[k] += dy, sums[c + k] += dy * (x - mean) (dy = a, x = b, mean = aux).
template <int kMode>
__global__ void ColumnSumsKernel(const float* __restrict__ a, const float* __restrict__ b,
                                 const float* __restrict__ aux, double* __restrict__ sums,
                                 int64_t rows, int64_t c) {
  __shared__ double s1[kLanes][kCols];
  __shared__ double s2[kLanes][kCols];
  const int64_t k = blockIdx.x * static_cast<int64_t>(kCols) + threadIdx.x;
  double acc1 = 0, acc2 = 0;
  if (k < c) {
    const float center = aux[k];
    for (int64_t r = blockIdx.y * static_cast<int64_t>(kLanes) + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.y) * kLanes) {
      if (kMode == 0) {
        const double d = static_cast<double>(a[r * c + k]) - center;
        acc1 += d;
        acc2 += d * d;
      } else {
        const double g = a[r * c + k];
        acc1 += g;
        acc2 += g * (static_cast<double>(b[r * c + k]) - center);
      }
    }
  }
  s1[threadIdx.y][threadIdx.x] = acc1;
  s2[threadIdx.y][threadIdx.x] = acc2;
  __syncthreads();
  if (threadIdx.y == 0 && k < c) {
    for (int l = 1; l < kLanes; ++l) {
      acc1 += s1[l][threadIdx.x];
      acc2 += s2[l][threadIdx.x];
    }
    atomicAdd(sums + k, acc1);
    atomicAdd(sums + c + k, acc2);
  }
}

// Statistics and the coefficients a (coef[k]) and b (coef[c + k]) of y = x * a + b.
__global__ void FinishForwardKernel(
    const double* __restrict__ sums, const float* __restrict__ shift,
    const float* __restrict__ scale, const float* __restrict__ offset,
    const float* __restrict__ mean_in, const float* __restrict__ var_in, float* batch_mean,
    float* batch_var, float* saved_mean, float* saved_inv_std, float* coef, int64_t rows, int64_t c,
    float epsilon, bool training) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= c) return;
  double mean, var;
  if (training) {
    const double m = sums[k] / rows;
    mean = shift[k] + m;
    const double ssd = fmax(0.0, sums[c + k] - rows * m * m);
    var = ssd / rows;
    const double bessel = rows > 1 ? static_cast<double>(rows) / (rows - 1) : 1.0;
    batch_mean[k] = static_cast<float>(mean);
    batch_var[k] = static_cast<float>(var * bessel);
  } else {
    mean = mean_in[k];
    var = var_in[k];
    batch_mean[k] = static_cast<float>(mean);
    batch_var[k] = static_cast<float>(var);
  }
  const double inv_std = 1.0 / sqrt(var + static_cast<double>(epsilon));
  saved_mean[k] = static_cast<float>(mean);
  saved_inv_std[k] = static_cast<float>(inv_std);
  const double ak = scale[k] * inv_std;
  coef[k] = static_cast<float>(ak);
  coef[c + k] = static_cast<float>(offset[k] - mean * ak);
}

__global__ void NormalizeKernel(const float* __restrict__ x, const float* __restrict__ coef,
                                float* __restrict__ y, int64_t n, int64_t c) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = i % c;
    y[i] = x[i] * coef[k] + coef[c + k];
  }
}

// dx = dy * a + (x - mean) * b + d, with a, b, d in coef[0..3c).
__global__ void FinishGradKernel(const double* __restrict__ sums, const float* __restrict__ scale,
                                 const float* __restrict__ inv_std, float* dscale, float* doffset,
                                 float* coef, int64_t rows, int64_t c, bool training) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= c) return;
  const double s = inv_std[k];
  const double sc = scale[k];
  doffset[k] = static_cast<float>(sums[k]);
  dscale[k] = static_cast<float>(sums[c + k] * s);
  coef[k] = static_cast<float>(sc * s);
  if (training && rows > 0) {
    coef[c + k] = static_cast<float>(-sc * s * s * s * sums[c + k] / rows);
    coef[2 * c + k] = static_cast<float>(-sc * s * sums[k] / rows);
  } else {
    coef[c + k] = coef[2 * c + k] = 0.0f;
  }
}

__global__ void GradKernel(const float* __restrict__ dy, const float* __restrict__ x,
                           const float* __restrict__ mean, const float* __restrict__ coef,
                           float* __restrict__ dx, int64_t n, int64_t c) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = i % c;
    dx[i] = dy[i] * coef[k] + (x[i] - mean[k]) * coef[c + k] + coef[2 * c + k];
  }
}

// Blocks of the column sums: enough row lanes to fill the GPU, at most 1024 rows of blocks.
dim3 SumsGrid(int64_t rows, int64_t c) {
  const int64_t col_blocks = (c + kCols - 1) / kCols;
  int64_t row_blocks = (rows + kLanes * 16 - 1) / (kLanes * 16);  // >= 16 rows per thread
  if (row_blocks > 1024) row_blocks = 1024;
  if (row_blocks < 1) row_blocks = 1;
  return dim3(static_cast<unsigned>(col_blocks), static_cast<unsigned>(row_blocks));
}

int ChannelBlocks(int64_t c) { return static_cast<int>((c + kThreads - 1) / kThreads); }

}  // namespace

cudaError_t LaunchBatchNorm(const float* x, const float* scale, const float* offset,
                            const float* mean_in, const float* var_in, float* y, float* batch_mean,
                            float* batch_var, float* saved_mean, float* saved_inv_std, int64_t rows,
                            int64_t c, float epsilon, bool training, double* sums, float* coef,
                            cudaStream_t stream) {
  if (c == 0) return cudaSuccess;
  float* shift = coef + 2 * c;
  if (training) {
    cudaError_t e = cudaMemsetAsync(sums, 0, 2 * c * sizeof(double), stream);
    if (e != cudaSuccess) return e;
    ShiftKernel<<<ChannelBlocks(c), kThreads, 0, stream>>>(x, shift, rows, c);
    if (rows > 0) {
      ColumnSumsKernel<0>
          <<<SumsGrid(rows, c), dim3(kCols, kLanes), 0, stream>>>(x, nullptr, shift, sums, rows, c);
    }
  }
  FinishForwardKernel<<<ChannelBlocks(c), kThreads, 0, stream>>>(
      sums, shift, scale, offset, mean_in, var_in, batch_mean, batch_var, saved_mean, saved_inv_std,
      coef, rows, c, epsilon, training);
  if (rows > 0) {
    NormalizeKernel<<<BlocksFor(rows * c), kThreads, 0, stream>>>(x, coef, y, rows * c, c);
  }
  return cudaGetLastError();
}

cudaError_t LaunchBatchNormGrad(const float* dy, const float* x, const float* scale,
                                const float* mean, const float* inv_std, float* dx, float* dscale,
                                float* doffset, int64_t rows, int64_t c, bool training,
                                double* sums, float* coef, cudaStream_t stream) {
  if (c == 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(sums, 0, 2 * c * sizeof(double), stream);
  if (e != cudaSuccess) return e;
  if (rows > 0) {
    ColumnSumsKernel<1>
        <<<SumsGrid(rows, c), dim3(kCols, kLanes), 0, stream>>>(dy, x, mean, sums, rows, c);
  }
  FinishGradKernel<<<ChannelBlocks(c), kThreads, 0, stream>>>(sums, scale, inv_std, dscale, doffset,
                                                              coef, rows, c, training);
  if (rows > 0) {
    GradKernel<<<BlocksFor(rows * c), kThreads, 0, stream>>>(dy, x, mean, coef, dx, rows * c, c);
  }
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace shardflow
