#include "runtime/shared_kernels.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace shardflow {

std::shared_ptr<OpKernel> SharedKernels::FindOrAdd(const std::string& device, const NodeDef& def,
                                                   std::shared_ptr<OpKernel> kernel) {
  // Sorted, whatever order the NodeDef keeps; each value as its exact proto bytes.
  std::map<std::string, std::string> attrs;
  for (const auto& [name, value] : def.attr()) attrs[name] = value.SerializeAsString();
  std::string key = absl::StrCat(device, "\n", def.name(), "\n", def.op());
  for (const auto& [name, value] : attrs) absl::StrAppend(&key, "\n", name, "=", value);
  absl::MutexLock lock(&mu_);
  auto [it, added] = kernels_.emplace(std::move(key), kernel);
  return added ? kernel : it->second;
}

}  // namespace shardflow
