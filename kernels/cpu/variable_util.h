// Helpers shared by kernels that use variables and other resources.
#ifndef SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_
#define SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/framework/op_kernel.h"
#include "core/framework/resource_mgr.h"

namespace shardflow {

// The resource name a handle (a string scalar) in input `input` holds.
absl::StatusOr<std::string> ResourceHandleName(OpKernelContext* ctx, int input);
// The variable named by the string handle in input `input`.
absl::StatusOr<std::shared_ptr<Variable>> LookupVariable(OpKernelContext* ctx, int input);
// "variable 'x' is not initialized: ..." with the way out.
std::string UninitializedMessage(const std::string& name);

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_VARIABLE_UTIL_H_
