#include "core/framework/tensor_util.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace shardflow {
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
