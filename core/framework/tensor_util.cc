#include "core/framework/tensor_util.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"

#if defined(__AVX__) && defined(__F16C__)
#include <immintrin.h>
#endif

namespace shardflow {

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);

void FloatToHalf(const float* in, half* out, int64_t n) {
  int64_t i = 0;
#if defined(__AVX__) && defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
#endif
  for (; i < n; ++i) out[i] = half(in[i]);
}

void HalfToFloat(const half* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__AVX__) && defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

// bfloat16 is the upper half of a float: rounded to nearest even by adding 0x7fff plus the
// lowest kept bit, a NaN made a quiet NaN of its sign (as Eigen's bfloat16(float)). Blocks of a
// fixed length, which GCC vectorizes at -O2 (an open loop it does not).
constexpr int64_t kBfloat16Block = 64;

inline uint16_t RoundToBfloat16(uint32_t u) {
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const uint16_t r = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return nan ? static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7fc0u) : r;
}

void FloatToBfloat16(const float* in, bfloat16* out, int64_t n) {
  uint32_t bits[kBfloat16Block];
  uint16_t rounded[kBfloat16Block];
  int64_t i = 0;
  for (; i + kBfloat16Block <= n; i += kBfloat16Block) {
    std::memcpy(bits, in + i, sizeof(bits));
    for (int64_t j = 0; j < kBfloat16Block; ++j) rounded[j] = RoundToBfloat16(bits[j]);
    std::memcpy(out + i, rounded, sizeof(rounded));
  }
  for (; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, in + i, sizeof(u));
    const uint16_t r = RoundToBfloat16(u);
    std::memcpy(out + i, &r, sizeof(r));
  }
}

void Bfloat16ToFloat(const bfloat16* in, float* out, int64_t n) {
  uint16_t raw[kBfloat16Block];
  uint32_t bits[kBfloat16Block];
  int64_t i = 0;
  for (; i + kBfloat16Block <= n; i += kBfloat16Block) {
    std::memcpy(raw, in + i, sizeof(raw));
    for (int64_t j = 0; j < kBfloat16Block; ++j) bits[j] = static_cast<uint32_t>(raw[j]) << 16;
    std::memcpy(out + i, bits, sizeof(bits));
  }
  for (; i < n; ++i) {
    uint16_t r;
    std::memcpy(&r, in + i, sizeof(r));
    const uint32_t u = static_cast<uint32_t>(r) << 16;
    std::memcpy(out + i, &u, sizeof(u));
  }
}

namespace {

// Note [Float to integer casts]: C++ leaves a float -> integer conversion undefined when the
// truncated value does not fit (NaN, infinities, 1e30 -> int32), and UBSan reports it. Cast is
// defined for every input instead: NaN becomes 0, values below or above the integer type's range
// saturate to its min or max, and values in range truncate toward zero as static_cast does.
template <typename To, typename F>
To SaturatingFloatToInt(F v) {
  static_assert(std::is_integral_v<To> && std::is_floating_point_v<F>);
  if (std::isnan(v)) return 0;
  constexpr To kMin = std::numeric_limits<To>::min();
  constexpr To kMax = std::numeric_limits<To>::max();
  // kMin is 0 or minus a power of two, so exact in F. kMax may round up to the next power of
  // two (int64 max -> 2^63 in double); every v below that truncates to at most kMax.
  if (v <= static_cast<F>(kMin)) return kMin;
  if (v >= static_cast<F>(kMax)) return kMax;
  return static_cast<To>(v);
}

template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <typename From, typename To>
void CastLoop(const From* in, To* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<To, bool>) {
      out[i] = static_cast<float>(in[i]) != 0.0f;
    } else if constexpr (kIsHalfLike<To>) {
      out[i] = static_cast<To>(static_cast<float>(in[i]));
    } else if constexpr (std::is_integral_v<To> && kIsHalfLike<From>) {
      out[i] = SaturatingFloatToInt<To>(static_cast<float>(in[i]));
    } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
      out[i] = SaturatingFloatToInt<To>(in[i]);
    } else if constexpr (kIsHalfLike<From>) {
      out[i] = static_cast<To>(static_cast<float>(in[i]));
    } else {
      out[i] = static_cast<To>(in[i]);
    }
  }
}

// The array conversions above for the casts between float and the 16-bit floats (non-template
// overloads, chosen over the template).
void CastLoop(const float* in, half* out, int64_t n) { FloatToHalf(in, out, n); }
void CastLoop(const half* in, float* out, int64_t n) { HalfToFloat(in, out, n); }
void CastLoop(const float* in, bfloat16* out, int64_t n) { FloatToBfloat16(in, out, n); }
void CastLoop(const bfloat16* in, float* out, int64_t n) { Bfloat16ToFloat(in, out, n); }

}  // namespace

absl::Status CastInto(const Tensor& in, Tensor* out) {
  if (in.dtype() == DT_STRING || out->dtype() == DT_STRING) {
    if (in.dtype() != out->dtype()) {
      return absl::UnimplementedError(absl::StrCat("cannot cast ", DataTypeString(in.dtype()),
                                                   " to ", DataTypeString(out->dtype())));
    }
    for (int64_t i = 0; i < in.NumElements(); ++i)
      out->data<std::string>()[i] = in.data<std::string>()[i];
    return absl::OkStatus();
  }
  if (in.dtype() == out->dtype()) {
    if (in.TotalBytes() > 0 && in.raw_data() != out->raw_data()) {
      std::memcpy(out->raw_data(), in.raw_data(), in.TotalBytes());
    }
    return absl::OkStatus();
  }
  absl::Status status;
  SF_SWITCH_NUMERIC(
      in.dtype(), From,
      {
        SF_SWITCH_NUMERIC(
            out->dtype(), To, { CastLoop(in.data<From>(), out->data<To>(), in.NumElements()); },
            status = absl::InvalidArgumentError("bad cast target type"));
      },
      status = absl::InvalidArgumentError("bad cast source type"));
  return status;
}

absl::StatusOr<Tensor> CastTensor(const Tensor& in, DataType to) {
  auto out = Tensor::Create(CpuAllocator(), to, in.shape());
  if (!out.ok()) return out.status();
  absl::Status s = CastInto(in, &*out);
  if (!s.ok()) return s;
  return out;
}

bool TensorsEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DT_STRING) {
    for (int64_t i = 0; i < a.NumElements(); ++i) {
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
    }
    return true;
  }
  return a.TotalBytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0;
}

}  // namespace shardflow
