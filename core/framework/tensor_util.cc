#include "core/framework/tensor_util.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace shardflow {
namespace {

template <typename From, typename To>
void CastLoop(const From* in, To* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<To, bool>) {
      out[i] = static_cast<float>(in[i]) != 0.0f;
    } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) {
      out[i] = static_cast<To>(static_cast<float>(in[i]));
    } else if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
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
