// Helpers shared by the GPU kernels (kernels/gpu/*.cc, compiled by the C++ compiler): the stream
// a kernel launches on, CUDA/cuBLAS/cuDNN errors as Status, the cuBLAS and cuDNN handles of a
// stream, and launch shapes. The CUDA code itself lives in *.cu files behind plain-pointer
// launchers declared in gpu_launchers.h, so nvcc never sees abseil or protobuf.
//
// Execution model (docs/gpu.md): every kernel of one GPU enqueues its work on that GPU's compute
// stream and returns; stream order makes a later kernel see an earlier one's results and makes
// freed memory safe to reuse (the allocator hands it to kernels queued after the free). Only a
// copy to the host waits for the stream.
//
//   void Compute(OpKernelContext* ctx) override {
//     ...
//     OP_REQUIRES_CUDA(ctx, gpu::LaunchRelu(x.data<float>(), y->data<float>(), n,
//                                           gpu::StreamOf(ctx)));
//   }
//
// Thread safety: every function may be called from any thread.
#ifndef SHARDFLOW_KERNELS_GPU_GPU_UTIL_H_
#define SHARDFLOW_KERNELS_GPU_GPU_UTIL_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/framework/op_kernel.h"

namespace shardflow {
namespace gpu {

inline cudaStream_t StreamOf(OpKernelContext* ctx) {
  return static_cast<cudaStream_t>(ctx->device()->gpu_stream());
}

// OK, or INTERNAL "CUDA error <name> (<text>) in <what>".
absl::Status CudaStatus(cudaError_t e, const char* what);
absl::Status CublasStatus(cublasStatus_t e, const char* what);
absl::Status CudnnStatus(cudnnStatus_t e, const char* what);

// The cuBLAS handle bound to `stream` (one per stream, made on first use), in TF32 math mode when
// `allow_tf32`. cuBLAS handles may be used from several threads at once.
absl::StatusOr<cublasHandle_t> CublasHandle(cudaStream_t stream, bool allow_tf32);

// The cuDNN handle bound to `stream`; cuDNN handles must not be used by two threads at once, so
// it comes with a lock held for as long as the CudnnHandle lives.
class CudnnHandle {
 public:
  static absl::StatusOr<CudnnHandle> Get(cudaStream_t stream);
  cudnnHandle_t get() const { return handle_; }
  CudnnHandle(CudnnHandle&& other) noexcept : handle_(other.handle_), mu_(other.mu_) {
    other.mu_ = nullptr;
  }
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  ~CudnnHandle();

 private:
  CudnnHandle(cudnnHandle_t handle, void* mu) : handle_(handle), mu_(mu) {}
  cudnnHandle_t handle_;
  void* mu_;  // an absl::Mutex, held
};

// Whether float32 matrix products and convolutions of this kernel's device may use TF32 tensor
// cores (10-bit mantissa inputs, float32 accumulation): off unless the session asked
// (gpu_options.allow_tf32 or $SHARDFLOW_GPU_TF32=1), so results match the CPU's float32.
inline bool AllowTf32(OpKernelContext* ctx) { return ctx->device()->allow_tf32(); }

}  // namespace gpu
}  // namespace shardflow

#define OP_REQUIRES_CUDA(CTX, EXPR) OP_REQUIRES_OK(CTX, ::shardflow::gpu::CudaStatus((EXPR), #EXPR))
#define OP_REQUIRES_CUBLAS(CTX, EXPR) \
  OP_REQUIRES_OK(CTX, ::shardflow::gpu::CublasStatus((EXPR), #EXPR))
#define OP_REQUIRES_CUDNN(CTX, EXPR) \
  OP_REQUIRES_OK(CTX, ::shardflow::gpu::CudnnStatus((EXPR), #EXPR))

#endif  // SHARDFLOW_KERNELS_GPU_GPU_UTIL_H_
