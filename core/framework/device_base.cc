#include "core/framework/device_base.h"

namespace shardflow {

DeviceBase::DeviceBase(DeviceAttributes attributes) : attributes_(std::move(attributes)) {
  auto parsed = DeviceName::Parse(attributes_.name);
  if (parsed.ok()) parsed_name_ = *parsed;
}

DeviceBase::~DeviceBase() = default;

}  // namespace shardflow
