// InferenceContext: what an op's shape function sees, and the common shape functions.
//
// A shape function reads its input shapes (possibly partial), the values of constant inputs when
// known (a Const feeding Reshape's `shape`, for instance) and the node's attrs, and sets every
// output shape. It returns InvalidArgument for shapes that cannot work; the graph builder adds
// the node's name to the message.
//
//   absl::Status MatMulShape(InferenceContext* c) {
//     TensorShape a, b;
//     SF_RETURN_IF_ERROR(c->WithRank(0, 2, &a));
//     ...
//     c->set_output(0, TensorShape({m, n}));
//     return absl::OkStatus();
//   }
#ifndef SHARDFLOW_CORE_FRAMEWORK_SHAPE_INFERENCE_H_
#define SHARDFLOW_CORE_FRAMEWORK_SHAPE_INFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/attr_value.h"
#include "core/framework/node_def_util.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_shape.h"

namespace shardflow {

class InferenceContext {
 public:
  // `input_tensors[i]` is the value of input i when it is a known constant, else null; borrowed,
  // must outlive the context.
  InferenceContext(const NodeDef& node, const DataTypeVector& input_types,
                   const DataTypeVector& output_types, std::vector<TensorShape> input_shapes,
                   std::vector<const Tensor*> input_tensors);

  const NodeDef& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const TensorShape& input(int i) const { return inputs_[i]; }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const Tensor* input_tensor(int i) const { return input_tensors_[i]; }
  void set_output(int i, TensorShape shape) { outputs_[i] = std::move(shape); }
  const TensorShape& output(int i) const { return outputs_[i]; }
  std::vector<TensorShape> TakeOutputs() { return std::move(outputs_); }

  template <typename T>
  absl::Status GetAttr(const std::string& name, T* value) const {
    return ::shardflow::GetAttr(node_.attr(), name, value);
  }

  // Input i's shape, checked (or narrowed from unknown rank) to have `rank` dimensions.
  absl::Status WithRank(int i, int rank, TensorShape* out) const;
  absl::Status WithRankAtLeast(int i, int rank, TensorShape* out) const;
  // The integer values of input i (int32 or int64) when it is a known constant.
  bool GetConstantInts(int i, std::vector<int64_t>* values) const;
  // A constant input interpreted as a shape: known entries, -1 for unknown ones. When the
  // input is not constant, its partial value if the graph knows one (set_input_partial_value),
  // else a shape of unknown dims (or unknown rank if even its length is unknown).
  absl::StatusOr<TensorShape> ConstantInputAsShape(int i) const;
  // What the graph knows of a non-constant integer vector input i without running it: its
  // entries, -1 for the unknown ones (Note [Partial shape values] in core/graph/graph.cc: a
  // shape built from tf.shape(x) and numbers, as tf.reshape(x, [tf.shape(x)[0], -1, 64])).
  void set_input_partial_value(int i, std::vector<int64_t> values);

  absl::Status InvalidArgument(absl::string_view msg) const {
    return absl::InvalidArgumentError(msg);
  }

 private:
  const NodeDef& node_;
  const DataTypeVector& input_types_;
  const DataTypeVector& output_types_;
  std::vector<TensorShape> inputs_;
  std::vector<const Tensor*> input_tensors_;
  std::vector<std::vector<int64_t>> partial_values_;  // per input; empty: none
  std::vector<bool> has_partial_value_;
  std::vector<TensorShape> outputs_;
};

// NumPy broadcasting of two shapes (unknown dims allowed): aligned from the right, each pair of
// dims must be equal or one of them 1.
absl::StatusOr<TensorShape> BroadcastShapes(const TensorShape& a, const TensorShape& b);

// Output 0 has input 0's shape.
absl::Status UnchangedShape(InferenceContext* c);
// Output 0 is a scalar.
absl::Status ScalarShape(InferenceContext* c);
// Output 0 is the broadcast of inputs 0 and 1.
absl::Status BroadcastBinaryShape(InferenceContext* c);
// Every output has unknown shape.
absl::Status UnknownShape(InferenceContext* c);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_SHAPE_INFERENCE_H_
