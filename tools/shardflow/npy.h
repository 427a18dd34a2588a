// Writing NumPy .npy files (format version 1.0), for handing tensors to Python reference code.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_NPY_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "core/framework/tensor.h"

namespace shardflow {

// float, double, int32 and int64 tensors; little-endian, C order.
absl::Status WriteNpy(const std::string& path, const Tensor& t);

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_NPY_H_
