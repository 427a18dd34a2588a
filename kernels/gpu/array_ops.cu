// CUDA kernels for Cast, Fill, ZerosLike and OnesLike (launchers declared in array_ops.cu.h).
//
// Half and bfloat16 are handled as their 16-bit patterns. Conversions to them go through float
// and round to nearest even, NaN becoming the quiet NaN that Eigen (the CPU's half and bfloat16)
// produces, so that the GPU and the CPU agree bit for bit.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/gpu/array_ops.cu.h"
#include "kernels/gpu/gpu_launchers.h"

namespace shardflow {
namespace gpu {
namespace {

// Storage of the 16-bit floating types.
struct HalfBits {
  uint16_t bits;
};
struct Bfloat16Bits {
  uint16_t bits;
};

template <typename T>
inline constexpr bool kIsFloatLike =
    std::is_same_v<T, float> || std::is_same_v<T, HalfBits> || std::is_same_v<T, Bfloat16Bits>;

// NaN keeps its sign and payload, as on the CPU (the hardware conversion gives the canonical
// NaN 0x7fffffff instead).
__device__ __forceinline__ float HalfToFloat(uint16_t bits) {
  if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0) {
    return __uint_as_float((static_cast<uint32_t>(bits & 0x8000u) << 16) | 0x7f800000u |
                           (static_cast<uint32_t>(bits & 0x03ffu) << 13));
  }
  return __half2float(__ushort_as_half(bits));
}
__device__ __forceinline__ uint16_t FloatToHalf(float f) {
  if (isnan(f)) return static_cast<uint16_t>((__float_as_uint(f) >> 16) & 0x8000u) | 0x7e00u;
  return __half_as_ushort(__float2half_rn(f));
}
__device__ __forceinline__ float Bfloat16ToFloat(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}
// Round to nearest even: add 0x7fff plus the lowest kept bit, then drop the low half (as Eigen).
__device__ __forceinline__ uint16_t FloatToBfloat16(float f) {
  const uint32_t bits = __float_as_uint(f);
  if (isnan(f)) return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7fc0u);
  const uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

// The value of an element, in the type arithmetic on it uses: float for the floating types.
template <typename T>
__device__ __forceinline__ auto Load(T v) {
  if constexpr (std::is_same_v<T, HalfBits>) {
    return HalfToFloat(v.bits);
  } else if constexpr (std::is_same_v<T, Bfloat16Bits>) {
    return Bfloat16ToFloat(v.bits);
  } else {
    return v;
  }
}

template <typename To>
struct IntLimits;
template <>
struct IntLimits<int32_t> {
  static constexpr int32_t kMin = INT32_MIN, kMax = INT32_MAX;
};
template <>
struct IntLimits<int64_t> {
  static constexpr int64_t kMin = INT64_MIN, kMax = INT64_MAX;
};

// Note [Float to integer casts] in core/framework/tensor_util.cc: NaN gives 0, values beyond the
// integer type's range saturate, the others truncate toward zero. kMax as a float may round up
// (2^31, 2^63); every v below it truncates to at most kMax.
template <typename To>
__device__ __forceinline__ To SaturatingFloatToInt(float v) {
  if (isnan(v)) return 0;
  if (v <= static_cast<float>(IntLimits<To>::kMin)) return IntLimits<To>::kMin;
  if (v >= static_cast<float>(IntLimits<To>::kMax)) return IntLimits<To>::kMax;
  return static_cast<To>(v);
}

template <typename From, typename To>
__device__ __forceinline__ To Convert(From in) {
  const auto v = Load(in);
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<float>(v) != 0.0f;
  } else if constexpr (std::is_same_v<To, HalfBits>) {
    return HalfBits{FloatToHalf(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<To, Bfloat16Bits>) {
    return Bfloat16Bits{FloatToBfloat16(static_cast<float>(v))};
  } else if constexpr (std::is_integral_v<To> && kIsFloatLike<From>) {
    return SaturatingFloatToInt<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* in, To* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = Convert<From, To>(in[i]);
  }
}

template <typename From, typename To>
cudaError_t CastTyped(const void* in, void* out, int64_t n, cudaStream_t stream) {
  CastKernel<From, To><<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<const From*>(in),
                                                              static_cast<To*>(out), n);
  return cudaGetLastError();
}

template <typename From>
cudaError_t CastFrom(const void* in, void* out, int out_dtype, int64_t n, cudaStream_t stream) {
  switch (out_dtype) {
    case kDtFloat:
      return CastTyped<From, float>(in, out, n, stream);
    case kDtInt32:
      return CastTyped<From, int32_t>(in, out, n, stream);
    case kDtInt64:
      return CastTyped<From, int64_t>(in, out, n, stream);
    case kDtBool:
      return CastTyped<From, bool>(in, out, n, stream);
    case kDtHalf:
      return CastTyped<From, HalfBits>(in, out, n, stream);
    case kDtBfloat16:
      return CastTyped<From, Bfloat16Bits>(in, out, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

int SizeOf(int dtype) {
  switch (dtype) {
    case kDtFloat:
    case kDtInt32:
      return 4;
    case kDtInt64:
      return 8;
    case kDtBool:
      return 1;
    case kDtHalf:
    case kDtBfloat16:
      return 2;
    default:
      return 0;
  }
}

template <typename E>
__global__ void FillFromDeviceKernel(const E* value, E* out, int64_t n) {
  const E v = *value;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = v;
  }
}

template <typename E>
__global__ void FillValueKernel(E value, E* out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = value;
  }
}

template <typename E>
cudaError_t FillFromDevice(const void* value, void* out, int64_t n, cudaStream_t stream) {
  FillFromDeviceKernel<E><<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<const E*>(value),
                                                                 static_cast<E*>(out), n);
  return cudaGetLastError();
}

template <typename E>
cudaError_t FillValue(uint64_t bits, void* out, int64_t n, cudaStream_t stream) {
  FillValueKernel<E>
      <<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<E>(bits), static_cast<E*>(out), n);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchCast(const void* in, int in_dtype, void* out, int out_dtype, int64_t n,
                       cudaStream_t stream) {
  if (!CastSupported(in_dtype) || !CastSupported(out_dtype) || n < 0) {
    return cudaErrorInvalidValue;
  }
  if (n == 0) return cudaSuccess;
  if (in_dtype == out_dtype) {
    return cudaMemcpyAsync(out, in, static_cast<size_t>(n) * SizeOf(in_dtype),
                           cudaMemcpyDeviceToDevice, stream);
  }
  switch (in_dtype) {
    case kDtFloat:
      return CastFrom<float>(in, out, out_dtype, n, stream);
    case kDtInt32:
      return CastFrom<int32_t>(in, out, out_dtype, n, stream);
    case kDtInt64:
      return CastFrom<int64_t>(in, out, out_dtype, n, stream);
    case kDtBool:
      return CastFrom<bool>(in, out, out_dtype, n, stream);
    case kDtHalf:
      return CastFrom<HalfBits>(in, out, out_dtype, n, stream);
    case kDtBfloat16:
      return CastFrom<Bfloat16Bits>(in, out, out_dtype, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchFillFromDevice(const void* value, void* out, int elem_size, int64_t n,
                                 cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      return FillFromDevice<uint8_t>(value, out, n, stream);
    case 2:
      return FillFromDevice<uint16_t>(value, out, n, stream);
    case 4:
      return FillFromDevice<uint32_t>(value, out, n, stream);
    case 8:
      return FillFromDevice<uint64_t>(value, out, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchFillBits(void* out, int elem_size, uint64_t bits, int64_t n,
                           cudaStream_t stream) {
  if (n < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  switch (elem_size) {
    case 1:
      return FillValue<uint8_t>(bits, out, n, stream);
    case 2:
      return FillValue<uint16_t>(bits, out, n, stream);
    case 4:
      return FillValue<uint32_t>(bits, out, n, stream);
    case 8:
      return FillValue<uint64_t>(bits, out, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace gpu
}  // namespace shardflow
