// RunOp: runs one op eagerly on a CPU device, outside any graph or session.
//
//   auto out = RunOp("Add", {Tensor::FromVector<float>({1, 2}), Tensor::Scalar(1.0f)});
//   // out->at(0) is float [2] {2 3}
//   auto sum = RunOp("Sum", {x, Tensor::FromVector<int32_t>({1})}, {{"keep_dims",
//   MakeAttr(true)}});
//
// Type attrs (T, N, ...) are inferred from the inputs as the graph builder does; the node goes
// through the same validation, shape inference and kernel lookup as in a graph. Used by the op
// conformance test and by kernel tests.
#ifndef SHARDFLOW_RUNTIME_OP_RUNNER_H_
#define SHARDFLOW_RUNTIME_OP_RUNNER_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/attr_value.h"
#include "core/framework/tensor.h"

namespace shardflow {

struct RunOpOptions {
  // Run the op's shape function first, as a graph would. Off, only the kernel checks its inputs
  // (kernel tests use this to reach the kernel's own errors).
  bool infer_shapes = true;
  // Threads the op may use; 0 uses the shared eager device and its budget.
  int intra_op_threads = 0;
};

// `inputs` is taken by value: move tensors in to let the kernel reuse their buffers.
absl::StatusOr<std::vector<Tensor>> RunOp(const std::string& op, std::vector<Tensor> inputs,
                                          const std::map<std::string, AttrValue>& attrs = {},
                                          const RunOpOptions& options = {});

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_OP_RUNNER_H_
