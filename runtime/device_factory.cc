#include "runtime/device_factory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

struct Registered {
  std::unique_ptr<DeviceFactory> factory;
  int priority = 0;
};

absl::Mutex registry_mu(absl::kConstInit);

std::map<std::string, Registered>& Registry() {
  static auto* registry = new std::map<std::string, Registered>;
  return *registry;
}

}  // namespace

void DeviceFactory::Register(const std::string& device_type, std::unique_ptr<DeviceFactory> factory,
                             int priority) {
  absl::MutexLock lock(&registry_mu);
  if (Registry().count(device_type) > 0) {
    std::fprintf(stderr, "shardflow: a device factory for %s is registered twice\n",
                 device_type.c_str());
    std::abort();
  }
  Registry()[device_type] = Registered{std::move(factory), priority};
}

DeviceFactory* DeviceFactory::Get(const std::string& device_type) {
  absl::MutexLock lock(&registry_mu);
  auto it = Registry().find(device_type);
  return it == Registry().end() ? nullptr : it->second.factory.get();
}

std::vector<std::string> DeviceFactory::DeviceTypes() {
  std::vector<std::pair<int, std::string>> by_priority;
  {
    absl::MutexLock lock(&registry_mu);
    for (const auto& [type, r] : Registry()) by_priority.emplace_back(-r.priority, type);
  }
  std::sort(by_priority.begin(), by_priority.end());
  std::vector<std::string> types;
  for (const auto& [priority, type] : by_priority) types.push_back(type);
  return types;
}

absl::StatusOr<std::vector<std::unique_ptr<Device>>> DeviceFactory::CreateDevices(
    const SessionOptionsProto& config, const std::string& job, int task) {
  std::vector<std::unique_ptr<Device>> devices;
  for (const std::string& type : DeviceTypes()) {
    DeviceFactory* factory = Get(type);
    absl::Status s = factory->AddDevices(config, job, task, &devices);
    if (!s.ok()) {
      return WithContext(s, absl::StrCat("creating the ", type, " devices of /job:", job,
                                         "/replica:0/task:", task, ": "));
    }
  }
  if (devices.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no device factory made a device for /job:", job, "/replica:0/task:", task));
  }
  return devices;
}

}  // namespace shardflow
