#include "distributed/protocol.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace shardflow {
namespace {

absl::Mutex protocols_mu(absl::kConstInit);

std::map<std::string, Protocol>& Protocols() {
  static auto* protocols = new std::map<std::string, Protocol>;
  return *protocols;
}

}  // namespace

void RegisterProtocol(const std::string& name, Protocol protocol) {
  absl::MutexLock lock(&protocols_mu);
  if (!Protocols().emplace(name, std::move(protocol)).second) {
    std::fprintf(stderr, "shardflow: protocol '%s' is registered twice\n", name.c_str());
    std::abort();
  }
}

absl::StatusOr<const Protocol*> FindProtocol(const std::string& name) {
  absl::MutexLock lock(&protocols_mu);
  auto it = Protocols().find(name.empty() ? kDefaultProtocol : name);
  if (it == Protocols().end()) {
    std::vector<std::string> known;
    for (const auto& [n, p] : Protocols()) known.push_back(n);
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown protocol '", name, "'; known protocols: ", absl::StrJoin(known, ", ")));
  }
  return &it->second;
}

absl::StatusOr<std::shared_ptr<WorkerCacheInterface>> NewWorkerCache(
    const std::string& name, const WorkerClientOptions& options) {
  auto protocol = FindProtocol(name);
  if (!protocol.ok()) return protocol.status();
  return (*protocol)->new_worker_cache(options);
}

}  // namespace shardflow
