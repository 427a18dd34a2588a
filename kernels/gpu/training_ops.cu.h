// Launchers of the CUDA kernels behind the optimizer updates, AssignAddVariableOp and
// CheckNumerics (kernels/gpu/training_ops.cu). Conventions as in gpu_launchers.h: plain device
// pointers, int64 counts, a stream; each launcher enqueues its work and returns
// cudaGetLastError(); nothing is launched for n == 0.
//
// The optimizers' hyper-parameters are single values in device memory, read by the kernels, so
// that the host never waits for the GPU. Arithmetic uses round-to-nearest intrinsics without
// fused multiply-adds, in the CPU kernels' order of operations, so both give the same bits.
//
// Thread safety: every launcher may be called from any thread.
#ifndef SHARDFLOW_KERNELS_GPU_TRAINING_OPS_CU_H_
#define SHARDFLOW_KERNELS_GPU_TRAINING_OPS_CU_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace shardflow {
namespace gpu {

// var[i] -= *alpha * delta[i].
cudaError_t LaunchApplyGradientDescent(float* var, const float* alpha, const float* delta,
                                       int64_t n, cudaStream_t stream);

// accum[i] = *momentum * accum[i] + grad[i];
// var[i] -= *lr * accum[i]  (nesterov: *lr * (grad[i] + *momentum * accum[i])).
cudaError_t LaunchApplyMomentum(float* var, float* accum, const float* lr, const float* grad,
                                const float* momentum, bool nesterov, int64_t n,
                                cudaStream_t stream);

// Adam with lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power), computed in double in the
// kernel as the CPU computes it:
//   m[i] = beta1 * m[i] + (1 - beta1) * grad[i];
//   v[i] = beta2 * v[i] + (1 - beta2) * grad[i]^2;
//   var[i] -= lr_t * m[i] / (sqrt(v[i]) + epsilon).
// The CPU kernel rejects beta1_power or beta2_power >= 1; here they are read on the device, so
// the kernel instead leaves var, m and v unchanged in that case.
cudaError_t LaunchApplyAdam(float* var, float* m, float* v, const float* beta1_power,
                            const float* beta2_power, const float* lr, const float* beta1,
                            const float* beta2, const float* epsilon, const float* grad, int64_t n,
                            cudaStream_t stream);

// var[i] += value[i] (integers wrap on overflow).
cudaError_t LaunchAssignAdd(float* var, const float* value, int64_t n, cudaStream_t stream);
cudaError_t LaunchAssignAdd(int32_t* var, const int32_t* value, int64_t n, cudaStream_t stream);
cudaError_t LaunchAssignAdd(int64_t* var, const int64_t* value, int64_t n, cudaStream_t stream);

// *first = the smallest i in [0, n) with x[i] NaN or infinite, or UINT64_MAX when there is none.
// `first` is one element of device memory.
cudaError_t LaunchFindNonFinite(const float* x, int64_t n, unsigned long long* first,
                                cudaStream_t stream);

}  // namespace gpu
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_GPU_TRAINING_OPS_CU_H_
