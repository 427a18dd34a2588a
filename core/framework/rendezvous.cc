#include "core/framework/rendezvous.h"

#include "absl/strings/str_cat.h"
#include "core/framework/device_base.h"

namespace shardflow {

std::string RendezvousKey(const std::string& src_device, uint64_t src_incarnation,
                          const std::string& dst_device, const std::string& tensor_name) {
  return absl::StrCat(src_device, ";", absl::Hex(src_incarnation), ";", dst_device, ";",
                      tensor_name, ";0:0");
}

absl::StatusOr<Tensor> ToReceiverMemory(const Tensor& value, const RecvArgs& args) {
  const bool want_host = args.allocator == nullptr || args.allocator->IsHostMemory();
  if (!value.IsInitialized() || (want_host && IsHostTensor(value)) ||
      (value.buffer() != nullptr && value.buffer()->allocator() == args.allocator)) {
    return value;
  }
  if (args.device == nullptr) {
    return absl::InternalError(
        "a received tensor must be copied to another memory, but the receiver named no device");
  }
  Allocator* allocator = want_host ? args.device->GetHostAllocator() : args.allocator;
  auto copy = Tensor::Create(allocator, value.dtype(), value.shape());
  if (!copy.ok()) return copy.status();
  absl::Status s = args.device->CopyTensor(value, &*copy);
  if (!s.ok()) return s;
  return copy;
}

}  // namespace shardflow
