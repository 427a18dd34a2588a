#include "core/framework/rendezvous.h"

#include "absl/strings/str_cat.h"

namespace shardflow {

std::string RendezvousKey(const std::string& src_device, uint64_t src_incarnation,
                          const std::string& dst_device, const std::string& tensor_name) {
  return absl::StrCat(src_device, ";", absl::Hex(src_incarnation), ";", dst_device, ";",
                      tensor_name, ";0:0");
}

}  // namespace shardflow
