// Helpers shared by kernels that use variables and other resources.
#ifndef SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_
#define SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_

#include <memory>
#include <string>

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

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_
