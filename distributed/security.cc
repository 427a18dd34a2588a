#include "distributed/security.h"

#include "absl/strings/match.h"

namespace shardflow {
namespace {

std::string HostOf(const std::string& address) {
  std::string host = address;
  size_t colon = address.rfind(':');
  if (colon != std::string::npos) host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

bool IsLoopbackAddress(const std::string& address) {
  std::string host = HostOf(address);
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

}  // namespace shardflow
