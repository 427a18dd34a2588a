// ResourceMgr: state that outlives a step, per device — variables, optimizer slots, random
// generator positions.
//
// A variable is a named tensor behind a mutex. Reading it hands out a Tensor that shares the
// buffer (no copy). Updates are copy-on-write: an update writes in place only when nobody else
// holds the buffer, otherwise it copies first, so a tensor read earlier never changes under its
// reader.
//
// Thread safety: all methods may be called concurrently.
#ifndef SHARDFLOW_CORE_FRAMEWORK_RESOURCE_MGR_H_
#define SHARDFLOW_CORE_FRAMEWORK_RESOURCE_MGR_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

class ResourceMgr {
 public:
  // The variable `name`, created with dtype and shape if absent. Error if it exists with
  // another dtype.
  absl::StatusOr<std::shared_ptr<Variable>> LookupOrCreate(const std::string& name, DataType dtype,
                                                           const TensorShape& shape);
  // NotFound naming the variable when absent.
  absl::StatusOr<std::shared_ptr<Variable>> Lookup(const std::string& name) const;
  void Clear();

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Variable>> vars_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_RESOURCE_MGR_H_
