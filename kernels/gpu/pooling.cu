// Pooling kernels of our own on NHWC tensors (windows clamped to the input, so any padding,
// even or not, works): the forward pass and average pooling's gradient for uneven SAME padding
// (cuDNN pads symmetrically), and max pooling's gradient always. Also the copy of an image
// region that pads and crops the inputs of uneven convolutions (conv_ops.cc).
//
// Max pooling's gradient on NHWC tensors, as the CPU kernel defines it: each output position's
// gradient goes to the first input of its window (in row-major order) equal to the pooled value.
// One thread per output gradient; windows may overlap, so contributions are added atomically
// into dx, which the launcher zeroes first. (cuDNN's NHWC pooling backward took ~0.4 ms for the
// CNN's 512x28x28x32 layer on an H200; this kernel reads each window once.)
#include "kernels/gpu/gpu_launchers.h"

namespace shardflow {
namespace gpu {
namespace {

__global__ void MaxPoolGradKernel(const float* __restrict__ x, const float* __restrict__ y,
                                  const float* __restrict__ dy, float* __restrict__ dx,
                                  MaxPoolGradShape s, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = i % s.c;
    int64_t rest = i / s.c;
    const int64_t ox = rest % s.ow;
    rest /= s.ow;
    const int64_t oy = rest % s.oh;
    const int64_t img = rest / s.oh;
    const int64_t h0 = max(oy * s.sh - s.pad_top, int64_t{0});
    const int64_t h1 = min(oy * s.sh - s.pad_top + s.kh, s.h);
    const int64_t w0 = max(ox * s.sw - s.pad_left, int64_t{0});
    const int64_t w1 = min(ox * s.sw - s.pad_left + s.kw, s.w);
    const float target = y[i];
    for (int64_t hh = h0; hh < h1; ++hh) {
      for (int64_t ww = w0; ww < w1; ++ww) {
        const int64_t p = ((img * s.h + hh) * s.w + ww) * s.c + k;
        if (x[p] == target) {
          atomicAdd(dx + p, dy[i]);
          hh = h1;  // the first match only
          break;
        }
      }
    }
  }
}

// The clamped window of output position i (NHWC): rows [h0, h1), columns [w0, w1), and i's
// channel and image.
struct WindowOf {
  int64_t k, img, h0, h1, w0, w1;
  __device__ WindowOf(const MaxPoolGradShape& s, int64_t i) {
    k = i % s.c;
    int64_t rest = i / s.c;
    const int64_t ox = rest % s.ow;
    rest /= s.ow;
    const int64_t oy = rest % s.oh;
    img = rest / s.oh;
    h0 = max(oy * s.sh - s.pad_top, int64_t{0});
    h1 = min(oy * s.sh - s.pad_top + s.kh, s.h);
    w0 = max(ox * s.sw - s.pad_left, int64_t{0});
    w1 = min(ox * s.sw - s.pad_left + s.kw, s.w);
  }
};

// Max or average (over the window's elements inside the input) per output position.
__global__ void PoolForwardKernel(const float* __restrict__ x, float* __restrict__ y,
                                  MaxPoolGradShape s, int64_t total, bool max_pool) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const WindowOf win(s, i);
    float best = -INFINITY, sum = 0;
    for (int64_t hh = win.h0; hh < win.h1; ++hh) {
      for (int64_t ww = win.w0; ww < win.w1; ++ww) {
        const float v = x[((win.img * s.h + hh) * s.w + ww) * s.c + win.k];
        best = v > best ? v : best;
        sum += v;
      }
    }
    const int64_t count = (win.h1 - win.h0) * (win.w1 - win.w0);
    y[i] = max_pool ? best : (count > 0 ? sum / static_cast<float>(count) : 0.0f);
  }
}

// Average pooling's gradient: each output's gradient / its count into every input of its window.
__global__ void AvgPoolGradKernel(const float* __restrict__ dy, float* __restrict__ dx,
                                  MaxPoolGradShape s, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const WindowOf win(s, i);
    const int64_t count = (win.h1 - win.h0) * (win.w1 - win.w0);
    if (count == 0) continue;
    const float g = dy[i] / static_cast<float>(count);
    for (int64_t hh = win.h0; hh < win.h1; ++hh) {
      for (int64_t ww = win.w0; ww < win.w1; ++ww) {
        atomicAdd(dx + ((win.img * s.h + hh) * s.w + ww) * s.c + win.k, g);
      }
    }
  }
}

// Copies rows x cols of each image (all channels) from the top left of src to that of dst.
__global__ void CopyRegionKernel(const float* __restrict__ src, int64_t src_h, int64_t src_w,
                                 float* __restrict__ dst, int64_t dst_h, int64_t dst_w, int64_t c,
                                 int64_t rows, int64_t cols, int64_t total) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t k = i % c;
    int64_t rest = i / c;
    const int64_t col = rest % cols;
    rest /= cols;
    const int64_t row = rest % rows;
    const int64_t img = rest / rows;
    dst[((img * dst_h + row) * dst_w + col) * c + k] =
        src[((img * src_h + row) * src_w + col) * c + k];
  }
}

}  // namespace

cudaError_t LaunchPoolForward(const float* x, float* y, const MaxPoolGradShape& s, bool max_pool,
                              cudaStream_t stream) {
  const int64_t total = s.n * s.oh * s.ow * s.c;
  if (total == 0) return cudaSuccess;
  PoolForwardKernel<<<BlocksFor(total), kThreads, 0, stream>>>(x, y, s, total, max_pool);
  return cudaGetLastError();
}

cudaError_t LaunchAvgPoolGrad(const float* dy, float* dx, const MaxPoolGradShape& s,
                              cudaStream_t stream) {
  const int64_t in_elems = s.n * s.h * s.w * s.c;
  const int64_t total = s.n * s.oh * s.ow * s.c;
  if (in_elems == 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(dx, 0, in_elems * sizeof(float), stream);
  if (e != cudaSuccess || total == 0) return e;
  AvgPoolGradKernel<<<BlocksFor(total), kThreads, 0, stream>>>(dy, dx, s, total);
  return cudaGetLastError();
}

cudaError_t LaunchCopyRegion(const float* src, int64_t src_h, int64_t src_w, float* dst,
                             int64_t dst_h, int64_t dst_w, int64_t n, int64_t c, int64_t rows,
                             int64_t cols, cudaStream_t stream) {
  const int64_t total = n * rows * cols * c;
  if (total == 0) return cudaSuccess;
  CopyRegionKernel<<<BlocksFor(total), kThreads, 0, stream>>>(src, src_h, src_w, dst, dst_h, dst_w,
                                                              c, rows, cols, total);
  return cudaGetLastError();
}

cudaError_t LaunchMaxPoolGrad(const float* x, const float* y, const float* dy, float* dx,
                              const MaxPoolGradShape& s, cudaStream_t stream) {
  const int64_t in_elems = s.n * s.h * s.w * s.c;
  const int64_t total = s.n * s.oh * s.ow * s.c;
  if (in_elems == 0) return cudaSuccess;
  cudaError_t e = cudaMemsetAsync(dx, 0, in_elems * sizeof(float), stream);
  if (e != cudaSuccess || total == 0) return e;
  MaxPoolGradKernel<<<BlocksFor(total), kThreads, 0, stream>>>(x, y, dy, dx, s, total);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace shardflow
