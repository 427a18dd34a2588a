// ResourceMgr: state that outlives a step, per device — variables, optimizer slots, random
// generator positions, and other named resources (gradient accumulators, queues: any class
// deriving from ResourceBase), shared by every session and graph that runs on the device.
//
// A variable is a named tensor behind a mutex. Reading it hands out a Tensor that shares the
// buffer (no copy). Updates are copy-on-write: an update writes in place only when nobody else
// holds the buffer, otherwise it copies first, so a tensor read earlier never changes under its
// reader.
//
// Thread safety: all methods may be called concurrently.
#ifndef SHARDFLOW_CORE_FRAMEWORK_RESOURCE_MGR_H_
#define SHARDFLOW_CORE_FRAMEWORK_RESOURCE_MGR_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/tensor.h"

namespace shardflow {

class Variable {
 public:
  Variable(DataType dtype, TensorShape shape) : dtype_(dtype), shape_(std::move(shape)) {}
  DataType dtype() const { return dtype_; }
  // The declared shape (may be partial); the value's shape must be compatible with it.
  const TensorShape& declared_shape() const { return shape_; }

  absl::Mutex* mu() ABSL_LOCK_RETURNED(mu_) { return &mu_; }
  bool initialized() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return value_.IsInitialized(); }
  const Tensor& value() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return value_; }
  void set_value(Tensor t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { value_ = std::move(t); }
  // The value, made exclusively owned (copied if someone else holds the buffer) so the caller
  // may write into it.
  Tensor* mutable_value() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  const DataType dtype_;
  const TensorShape shape_;
  absl::Mutex mu_;
  Tensor value_ ABSL_GUARDED_BY(mu_);
};

// A named resource other than a variable. Subclasses guard their own state and name their kind
// in `static constexpr char kTypeName[]` (for errors).
class ResourceBase {
 public:
  virtual ~ResourceBase() = default;
  // What it is, for errors ("a gradient accumulator of float32 [3,4]").
  virtual std::string DebugString() const = 0;
};

class ResourceMgr {
 public:
  // The variable `name`, created with dtype and shape if absent. Error if it exists with
  // another dtype.
  absl::StatusOr<std::shared_ptr<Variable>> LookupOrCreate(const std::string& name, DataType dtype,
                                                           const TensorShape& shape);
  // NotFound naming the variable when absent.
  absl::StatusOr<std::shared_ptr<Variable>> Lookup(const std::string& name) const;
  void Clear();

  // The resource `name` of type T, made by `create` when absent. Errors: `create` fails, or a
  // resource of another type (or a variable) has that name.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> LookupOrCreateResource(
      const std::string& name, const std::function<absl::StatusOr<std::shared_ptr<T>>()>& create);
  // NotFound naming the resource when absent; InvalidArgument when it is of another type.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> LookupResource(const std::string& name) const;

 private:
  absl::Status NameTaken(const std::string& name, const char* want) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Variable>> vars_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<ResourceBase>> resources_ ABSL_GUARDED_BY(mu_);
};

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::LookupOrCreateResource(
    const std::string& name, const std::function<absl::StatusOr<std::shared_ptr<T>>()>& create) {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(name);
  if (it != resources_.end()) {
    auto typed = std::dynamic_pointer_cast<T>(it->second);
    if (typed == nullptr) return NameTaken(name, T::kTypeName);
    return typed;
  }
  if (vars_.count(name) > 0) return NameTaken(name, T::kTypeName);
  absl::StatusOr<std::shared_ptr<T>> made = create();
  if (!made.ok()) return made.status();
  resources_[name] = *made;
  return made;
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> ResourceMgr::LookupResource(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = resources_.find(name);
  if (it == resources_.end()) {
    return absl::NotFoundError(absl::StrCat("resource '", name,
                                            "' does not exist on this device: run the op "
                                            "that creates it (its handle) first"));
  }
  auto typed = std::dynamic_pointer_cast<T>(it->second);
  if (typed == nullptr) return NameTaken(name, T::kTypeName);
  return typed;
}

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_RESOURCE_MGR_H_
