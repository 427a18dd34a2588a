#include "core/framework/device_base.h"

#include "absl/strings/str_cat.h"
#include "core/framework/tensor_util.h"

namespace shardflow {

DeviceBase::DeviceBase(DeviceAttributes attributes) : attributes_(std::move(attributes)) {
  auto parsed = DeviceName::Parse(attributes_.name);
  if (parsed.ok()) parsed_name_ = *parsed;
}

DeviceBase::~DeviceBase() = default;

absl::Status DeviceBase::CopyTensor(const Tensor& src, Tensor* dst) {
  if (!IsHostTensor(src) || !IsHostTensor(*dst)) {
    return absl::UnimplementedError(absl::StrCat(
        "device ", name(), " cannot copy a tensor between ", IsHostTensor(src) ? "host" : "device",
        " and ", IsHostTensor(*dst) ? "host" : "device", " memory"));
  }
  if (src.dtype() != dst->dtype() || src.shape() != dst->shape()) {
    return absl::InternalError(
        absl::StrCat("CopyTensor of a ", src.DebugString(0), " into a ", dst->DebugString(0)));
  }
  return CastInto(src, dst);  // same dtype: a copy
}

}  // namespace shardflow
