#include "kernels/gpu/gpu_util.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace shardflow {
namespace gpu {
namespace {

struct Handles {
  absl::Mutex mu;
  std::map<cudaStream_t, cublasHandle_t> cublas ABSL_GUARDED_BY(mu);
  struct Cudnn {
    cudnnHandle_t handle = nullptr;
    absl::Mutex* mu = nullptr;
  };
  std::map<cudaStream_t, Cudnn> cudnn ABSL_GUARDED_BY(mu);
};

// Handles live as long as the process: their streams do too (runtime/gpu/gpu_device.cc).
Handles& AllHandles() {
  static auto* handles = new Handles;
  return *handles;
}

}  // namespace

absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("CUDA error ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ") in ", what));
}

absl::Status CublasStatus(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuBLAS error ", cublasGetStatusName(e), " (",
                                          cublasGetStatusString(e), ") in ", what));
}

absl::Status CudnnStatus(cudnnStatus_t e, const char* what) {
  if (e == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuDNN error ", cudnnGetErrorString(e), " (",
                                          static_cast<int>(e), ") in ", what));
}

absl::StatusOr<cublasHandle_t> CublasHandle(cudaStream_t stream, bool allow_tf32) {
  Handles& h = AllHandles();
  cublasHandle_t handle = nullptr;
  {
    absl::MutexLock lock(&h.mu);
    auto it = h.cublas.find(stream);
    if (it != h.cublas.end()) {
      handle = it->second;
    } else {
      cublasStatus_t s = cublasCreate(&handle);
      if (s != CUBLAS_STATUS_SUCCESS) return CublasStatus(s, "cublasCreate");
      s = cublasSetStream(handle, stream);
      if (s != CUBLAS_STATUS_SUCCESS) return CublasStatus(s, "cublasSetStream");
      h.cublas[stream] = handle;
    }
  }
  // The math mode follows the TF32 switch at the time of each call.
  cublasStatus_t s =
      cublasSetMathMode(handle, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
  if (s != CUBLAS_STATUS_SUCCESS) return CublasStatus(s, "cublasSetMathMode");
  return handle;
}

absl::StatusOr<CudnnHandle> CudnnHandle::Get(cudaStream_t stream) {
  Handles& h = AllHandles();
  Handles::Cudnn entry;
  {
    absl::MutexLock lock(&h.mu);
    auto it = h.cudnn.find(stream);
    if (it != h.cudnn.end()) {
      entry = it->second;
    } else {
      cudnnStatus_t s = cudnnCreate(&entry.handle);
      if (s != CUDNN_STATUS_SUCCESS) return CudnnStatus(s, "cudnnCreate");
      s = cudnnSetStream(entry.handle, stream);
      if (s != CUDNN_STATUS_SUCCESS) return CudnnStatus(s, "cudnnSetStream");
      entry.mu = new absl::Mutex;
      h.cudnn[stream] = entry;
    }
  }
  entry.mu->Lock();
  return CudnnHandle(entry.handle, entry.mu);
}

CudnnHandle::~CudnnHandle() {
  if (mu_ != nullptr) static_cast<absl::Mutex*>(mu_)->Unlock();
}

}  // namespace gpu
}  // namespace shardflow
