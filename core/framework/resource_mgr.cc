#include "core/framework/resource_mgr.h"

#include "absl/strings/str_cat.h"

namespace shardflow {

Tensor* Variable::mutable_value() {
  if (value_.IsInitialized() && !value_.RefCountIsOne()) value_ = value_.DeepCopy();
  return &value_;
}

absl::StatusOr<std::shared_ptr<Variable>> ResourceMgr::LookupOrCreate(const std::string& name,
                                                                      DataType dtype,
                                                                      const TensorShape& shape) {
  absl::MutexLock lock(&mu_);
  auto it = vars_.find(name);
  if (it != vars_.end()) {
    if (it->second->dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable '", name, "' exists with dtype ", DataTypeString(it->second->dtype()),
          "; it cannot be used as ", DataTypeString(dtype)));
    }
    return it->second;
  }
  auto var = std::make_shared<Variable>(dtype, shape);
  vars_[name] = var;
  return var;
}

absl::StatusOr<std::shared_ptr<Variable>> ResourceMgr::Lookup(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = vars_.find(name);
  if (it == vars_.end()) {
    return absl::NotFoundError(absl::StrCat("variable '", name, "' does not exist on this device"));
  }
  return it->second;
}

void ResourceMgr::Clear() {
  absl::MutexLock lock(&mu_);
  vars_.clear();
}

}  // namespace shardflow
