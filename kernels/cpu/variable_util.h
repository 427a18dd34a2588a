// Helpers shared by kernels that use variables and other resources.
#ifndef SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_
#define SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/op_kernel.h"
#include "core/framework/resource_mgr.h"

namespace shardflow {

// The device's resource manager (variables, queues, accumulators); FAILED_PRECONDITION naming
// the device when it keeps none.
absl::StatusOr<ResourceMgr*> ResourcesOf(OpKernelContext* ctx);

// What a handle op (VarHandleOp, FIFOQueueV2, ...) is built with: its attrs shared_name (the
// node's name when empty), dtype and shape, and the handle it outputs (the name as a string
// scalar). Missing attrs are errors set on `c`.
struct HandleAttrs {
  std::string name;
  DataType dtype = DT_INVALID;
  TensorShape shape;
  Tensor handle;
};
HandleAttrs ReadHandleAttrs(OpKernelConstruction* c);

// The resource name a handle (a string scalar) in input `input` holds.
absl::StatusOr<std::string> ResourceHandleName(OpKernelContext* ctx, int input);
// The variable named by the string handle in input `input`.
absl::StatusOr<std::shared_ptr<Variable>> LookupVariable(OpKernelContext* ctx, int input);
// "variable 'x' is not initialized: ..." with the way out.
std::string UninitializedMessage(const std::string& name);

// AssignVariableOp and AssignAddVariableOp: `value` has the dtype of the variable named `name`
// and a shape compatible with its declared one. The caller holds the variable's lock.
absl::Status CheckAssignable(const std::string& name, const Variable& var, const Tensor& value);
// AssignAddVariableOp (CPU and GPU kernels): the checked value of the variable to add `value` to
// in place — assignable, initialized, of value's shape. The caller holds the variable's lock.
absl::StatusOr<Tensor*> AssignAddTarget(const std::string& name, Variable* var,
                                        const Tensor& value);

// For optimizer updates (CPU and GPU kernels): the value of `var`, named by the handle in input
// `input`, to be written in place — initialized, with the dtype and shape of `grad`. The caller
// holds the variable's lock.
absl::StatusOr<Tensor*> WritableVariable(OpKernelContext* ctx, int input, Variable* var,
                                         const Tensor& grad);
// An update's variable and slots (input index, variable) must be distinct variables: their
// locks are taken one after another (the same one twice would deadlock) and the loops write them
// as separate arrays.
absl::Status CheckDistinctVariables(OpKernelContext* ctx,
                                    const std::vector<std::pair<int, Variable*>>& vars);

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_
