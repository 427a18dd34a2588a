// CUDA kernels for the optimizer updates, AssignAdd and CheckNumerics (launchers declared in
// training_ops.cu.h).
//
// The float updates spell out their arithmetic with __fadd_rn, __fmul_rn, __fdiv_rn and
// __fsqrt_rn: IEEE round-to-nearest operations that the compiler neither fuses into
// multiply-adds nor replaces under fast-math flags, evaluated in the CPU kernels' order
// (kernels/cpu/training_ops.cc).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/training_ops.cu.h"

namespace shardflow {
namespace gpu {
namespace {

__global__ void ApplyGradientDescentKernel(float* var, const float* alpha_ptr, const float* delta,
                                           int64_t n) {
  const float alpha = *alpha_ptr;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    var[i] = __fsub_rn(var[i], __fmul_rn(alpha, delta[i]));
  }
}

__global__ void ApplyMomentumKernel(float* var, float* accum, const float* lr_ptr,
                                    const float* grad, const float* momentum_ptr, bool nesterov,
                                    int64_t n) {
  const float lr = *lr_ptr, momentum = *momentum_ptr;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float g = grad[i];
    const float a = __fadd_rn(__fmul_rn(momentum, accum[i]), g);
    accum[i] = a;
    const float step = nesterov ? __fadd_rn(g, __fmul_rn(momentum, a)) : a;
    var[i] = __fsub_rn(var[i], __fmul_rn(lr, step));
  }
}

__global__ void ApplyAdamKernel(float* var, float* m, float* v, const float* beta1_power_ptr,
                                const float* beta2_power_ptr, const float* lr_ptr,
                                const float* beta1_ptr, const float* beta2_ptr,
                                const float* epsilon_ptr, const float* grad, int64_t n) {
  const double beta1_power = static_cast<double>(*beta1_power_ptr);
  const double beta2_power = static_cast<double>(*beta2_power_ptr);
  // The CPU kernel fails the step here; leaving the variables untouched is the closest the
  // device can do without the host reading these values.
  if (!(beta1_power < 1.0 && beta2_power < 1.0)) return;
  const double bias = sqrt(1.0 - beta2_power) / (1.0 - beta1_power);
  const float lr_t = static_cast<float>(static_cast<double>(*lr_ptr) * bias);
  const float beta1 = *beta1_ptr, beta2 = *beta2_ptr, eps = *epsilon_ptr;
  const float one_minus_beta1 = __fsub_rn(1.0f, beta1), one_minus_beta2 = __fsub_rn(1.0f, beta2);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float g = grad[i];
    const float mi = __fadd_rn(__fmul_rn(beta1, m[i]), __fmul_rn(one_minus_beta1, g));
    const float vi = __fadd_rn(__fmul_rn(beta2, v[i]), __fmul_rn(__fmul_rn(one_minus_beta2, g), g));
    m[i] = mi;
    v[i] = vi;
    var[i] = __fsub_rn(var[i], __fdiv_rn(__fmul_rn(lr_t, mi), __fadd_rn(__fsqrt_rn(vi), eps)));
  }
}

template <typename T>
__global__ void AssignAddKernel(T* var, const T* value, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      var[i] = static_cast<T>(static_cast<U>(var[i]) + static_cast<U>(value[i]));
    } else {
      var[i] = __fadd_rn(var[i], value[i]);
    }
  }
}

template <typename T>
cudaError_t AssignAdd(T* var, const T* value, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  AssignAddKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(var, value, n);
  return cudaGetLastError();
}

// Each thread finds the first non-finite element of its grid-stride sequence (the first it
// meets, as its indices increase) and offers it once.
__global__ void FindNonFiniteKernel(const float* x, int64_t n, unsigned long long* first) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if (!isfinite(x[i])) {
      atomicMin(first, static_cast<unsigned long long>(i));
      return;
    }
  }
}

}  // namespace

cudaError_t LaunchApplyGradientDescent(float* var, const float* alpha, const float* delta,
                                       int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ApplyGradientDescentKernel<<<BlocksFor(n), kThreads, 0, stream>>>(var, alpha, delta, n);
  return cudaGetLastError();
}

cudaError_t LaunchApplyMomentum(float* var, float* accum, const float* lr, const float* grad,
                                const float* momentum, bool nesterov, int64_t n,
                                cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ApplyMomentumKernel<<<BlocksFor(n), kThreads, 0, stream>>>(var, accum, lr, grad, momentum,
                                                             nesterov, n);
  return cudaGetLastError();
}

cudaError_t LaunchApplyAdam(float* var, float* m, float* v, const float* beta1_power,
                            const float* beta2_power, const float* lr, const float* beta1,
                            const float* beta2, const float* epsilon, const float* grad, int64_t n,
                            cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  ApplyAdamKernel<<<BlocksFor(n), kThreads, 0, stream>>>(var, m, v, beta1_power, beta2_power, lr,
                                                         beta1, beta2, epsilon, grad, n);
  return cudaGetLastError();
}

cudaError_t LaunchAssignAdd(float* var, const float* value, int64_t n, cudaStream_t stream) {
  return AssignAdd<float>(var, value, n, stream);
}
cudaError_t LaunchAssignAdd(int32_t* var, const int32_t* value, int64_t n, cudaStream_t stream) {
  return AssignAdd<int32_t>(var, value, n, stream);
}
cudaError_t LaunchAssignAdd(int64_t* var, const int64_t* value, int64_t n, cudaStream_t stream) {
  return AssignAdd<int64_t>(var, value, n, stream);
}

cudaError_t LaunchFindNonFinite(const float* x, int64_t n, unsigned long long* first,
                                cudaStream_t stream) {
  // All bits set: UINT64_MAX, above every index.
  cudaError_t e = cudaMemsetAsync(first, 0xff, sizeof(*first), stream);
  if (e != cudaSuccess || n <= 0) return e;
  FindNonFiniteKernel<<<BlocksFor(n), kThreads, 0, stream>>>(x, n, first);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace shardflow
