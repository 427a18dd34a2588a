// Launchers of the CUDA kernels (kernels/gpu/*.cu): plain pointers, element counts and a stream,
// so that both nvcc (which compiles them) and the C++ compiler (the OpKernels in *.cc) read this
// header. Each enqueues its kernel on `stream` and returns cudaGetLastError(): launch errors
// come back at once, errors inside a kernel at the next synchronisation.
//
// Element types are passed as shardflow::DataType numbers (core/protos/types.proto) so this header
// needs nothing of the framework.
//
// Thread safety: every launcher may be called from any thread.
#ifndef SHARDFLOW_KERNELS_GPU_GPU_LAUNCHERS_H_
#define SHARDFLOW_KERNELS_GPU_GPU_LAUNCHERS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace shardflow {
namespace gpu {

// Grid-stride loops: blocks of kThreads threads, at most kMaxBlocks blocks.
inline constexpr int kThreads = 256;
inline constexpr int kMaxBlocks = 132 * 16;
inline int BlocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

// ---- layout (kernels/gpu/transpose.cu) -------------------------------------------------------
// out = in with its dimensions permuted: out dim i is in dim perm[i]. rank <= 8; `in_dims` are
// the input's dims; `elem_size` is 1, 2, 4 or 8 bytes.
cudaError_t LaunchTranspose(const void* in, void* out, int rank, const int64_t* in_dims,
                            const int* perm, int elem_size, cudaStream_t stream);

// ---- epilogues of the fused ops (kernels/gpu/fused.cu) ---------------------------------------
// y[i] = activation(y[i] + bias[i % channels]) in place over n float32 values in rows of
// `channels` (NHWC or a matrix); activation 0 = none, 1 = Relu, 2 = Tanh, 3 = Sigmoid.
cudaError_t LaunchBiasActivation(float* y, const float* bias, int64_t n, int64_t channels,
                                 int activation, cudaStream_t stream);

// ---- max pooling's gradient (kernels/gpu/pooling.cu) ------------------------------------------
// NHWC input [n, h, w, c], output [n, oh, ow, c]; windows kh x kw with strides sh, sw, starting
// pad_top / pad_left before the input.
struct MaxPoolGradShape {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pad_top, pad_left;
};
// dx = the gradient of max pooling x into y with respect to x, given dy (zeroed, then filled).
cudaError_t LaunchMaxPoolGrad(const float* x, const float* y, const float* dy, float* dx,
                              const MaxPoolGradShape& shape, cudaStream_t stream);

// Whether collectives between GPUs can use NCCL in this build (collective_ops.cc).
bool BuiltWithNccl();

// Max (max_pool) or average pooling forward over clamped windows (any padding; average over
// the elements inside the input), and average pooling's gradient (dx zeroed, then filled).
cudaError_t LaunchPoolForward(const float* x, float* y, const MaxPoolGradShape& shape,
                              bool max_pool, cudaStream_t stream);
cudaError_t LaunchAvgPoolGrad(const float* dy, float* dx, const MaxPoolGradShape& shape,
                              cudaStream_t stream);
// Copies rows x cols of each of n images (c channels, NHWC) from the top left of src
// [n, src_h, src_w, c] to the top left of dst [n, dst_h, dst_w, c].
cudaError_t LaunchCopyRegion(const float* src, int64_t src_h, int64_t src_w, float* dst,
                             int64_t dst_h, int64_t dst_w, int64_t n, int64_t c, int64_t rows,
                             int64_t cols, cudaStream_t stream);

// Batch normalisation over x viewed as [rows, c] (kernels/gpu/batch_norm.cu; the CPU kernel's
// arithmetic: statistics in double, the training variance from sums of x - shift).
// `sums` is scratch of 2c doubles, `coef` of 4c floats. Training: batch_mean/batch_var out (the
// variance with Bessel's correction) from the batch; inference: from mean_in/var_in.
cudaError_t LaunchBatchNorm(const float* x, const float* scale, const float* offset,
                            const float* mean_in, const float* var_in, float* y, float* batch_mean,
                            float* batch_var, float* saved_mean, float* saved_inv_std, int64_t rows,
                            int64_t c, float epsilon, bool training, double* sums, float* coef,
                            cudaStream_t stream);
// Its gradient from the saved mean and 1/sqrt(var + eps); scratch as above.
cudaError_t LaunchBatchNormGrad(const float* dy, const float* x, const float* scale,
                                const float* mean, const float* inv_std, float* dx, float* dscale,
                                float* doffset, int64_t rows, int64_t c, bool training,
                                double* sums, float* coef, cudaStream_t stream);

}  // namespace gpu
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_GPU_GPU_LAUNCHERS_H_
