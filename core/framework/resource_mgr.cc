#include "core/framework/resource_mgr.h"

#include "absl/strings/str_cat.h"

namespace shardflow {

Tensor* Variable::mutable_value() {
  if (value_.IsInitialized() && !value_.RefCountIsOne()) value_ = value_.DeepCopy();
  value_.MarkWritten();  // caches of what was derived from the old contents go stale
  return &value_;
}

absl::StatusOr<std::shared_ptr<Variable>> ResourceMgr::LookupOrCreate(const std::string& name,
                                                                      DataType dtype,
                                                                      const TensorShape& shape) {
  absl::MutexLock lock(&mu_);
  auto it = vars_.find(name);
  if (it != vars_.end()) {
    Variable& v = *it->second;
    // Another graph (another worker of a between-graph job) declared it differently.
    if (v.dtype() != dtype || !v.declared_shape().IsCompatibleWith(shape)) {
      // Declared only (a handle, a readiness check) and never given a value: as TF's
      // VarHandleOp, a declaration alone does not fix the variable, so a worker with a wrong
      // graph cannot block the job's variables until the ps restarts. The one that assigns
      // it first decides; a graph that disagrees with a variable that has a value fails.
      bool has_value;
      {
        absl::MutexLock value_lock(v.mu());
        has_value = v.initialized();
      }
      if (!has_value) {
        auto var = std::make_shared<Variable>(dtype, shape);
        it->second = var;
        return var;
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "variable '", name, "' exists on this device as ", DataTypeString(v.dtype()), " ",
          v.declared_shape().DebugString(), " but this graph declares it ", DataTypeString(dtype),
          " ", shape.DebugString(),
          "; the graphs that share it (e.g. the workers of one job) must agree, or give it "
          "another name"));
    }
    return it->second;
  }
  if (resources_.count(name) > 0) return NameTaken(name, "variable");
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
  resources_.clear();
}

absl::Status ResourceMgr::NameTaken(const std::string& name, const char* want) const {
  std::string have = vars_.count(name) > 0 ? "a variable" : "another kind of resource";
  auto it = resources_.find(name);
  if (it != resources_.end()) have = it->second->DebugString();
  return absl::InvalidArgumentError(absl::StrCat("resource name '", name, "' is taken by ", have,
                                                 " on this device (wanted: ", want,
                                                 "); give one of them another shared_name"));
}

}  // namespace shardflow
