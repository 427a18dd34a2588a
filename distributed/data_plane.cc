#include "distributed/data_plane.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"

namespace shardflow {
namespace {

struct Registry {
  absl::Mutex mu;
  std::map<std::string, DataPlaneFactory> factories ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace

void RegisterDataPlane(const std::string& name, DataPlaneFactory factory) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  if (!r.factories.emplace(name, std::move(factory)).second) {
    std::fprintf(stderr, "shardflow: data plane \"%s\" registered twice\n", name.c_str());
    std::abort();
  }
}

std::vector<std::string> RegisteredDataPlanes() {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  std::vector<std::string> names;
  for (const auto& entry : r.factories) names.push_back(entry.first);
  return names;
}

absl::StatusOr<std::unique_ptr<DataPlane>> NewDataPlane(const std::string& name,
                                                        const DataPlaneOptions& options,
                                                        std::shared_ptr<WorkerCacheInterface> cache,
                                                        std::unique_ptr<TensorTransport> fallback) {
  DataPlaneFactory factory;
  {
    Registry& r = GetRegistry();
    absl::MutexLock lock(&r.mu);
    auto it = r.factories.find(name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::vector<std::string> have = RegisteredDataPlanes();
    return absl::NotFoundError(absl::StrCat("transport \"", name,
                                            "\" is not in this build of shardflow (it has: grpc",
                                            have.empty() ? "" : ", ", absl::StrJoin(have, ", "),
                                            "); for ucx, apt-get install libucx-dev and rebuild"));
  }
  return factory(options, std::move(cache), std::move(fallback));
}

absl::Status CheckTransportName(const std::string& name) {
  if (name == "auto" || name == "grpc" || name == "ucx") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "transport \"", name, "\" is not one shardflow knows; use auto (the default), grpc or ucx"));
}

}  // namespace shardflow
