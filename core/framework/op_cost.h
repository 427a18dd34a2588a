// OpCostContext and FlopsFn: an op's floating-point work, estimated from its attrs and its
// (possibly partial) shapes, registered next to the op's definition:
//
//   double MatMulFlops(const OpCostContext& c) {
//     bool ta = false;
//     c.GetAttr("transpose_a", &ta);
//     return 2 * c.Dim(c.input(0), ta ? 1 : 0) * ... ;
//   }
//   REGISTER_OP("MatMul")...SetFlopsFn(MatMulFlops);
//
// The cost model (partitioner/cost_model.h) uses it to estimate how long the op takes on a
// device; an op without one counts a couple of operations per element of its largest input or
// output. Unknown dimensions count as the cost model's `unknown_dim`.
//
// Thread safety: a context is used by one thread; FlopsFns must be pure.
#ifndef SHARDFLOW_CORE_FRAMEWORK_OP_COST_H_
#define SHARDFLOW_CORE_FRAMEWORK_OP_COST_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/framework/attr_value.h"
#include "core/framework/tensor_shape.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

class OpCostContext {
 public:
  // `inputs` and `outputs` are borrowed for the context's life.
  OpCostContext(const NodeDef& node, const std::vector<TensorShape>* inputs,
                const std::vector<TensorShape>* outputs, int64_t unknown_dim)
      : node_(node), inputs_(inputs), outputs_(outputs), unknown_dim_(unknown_dim) {}

  // The shapes of input / output i (unknown rank past the end).
  const TensorShape& input(int i) const;
  const TensorShape& output(int i) const;
  // Dimension i of a shape (negative i counts from the end), unknown ones as unknown_dim.
  double Dim(const TensorShape& shape, int i) const;
  // Elements of a shape, unknown dimensions counted as unknown_dim.
  double Elements(const TensorShape& shape) const;
  // Elements of all inputs together, and of all outputs.
  double InputElements() const;
  double OutputElements() const;
  // False (leaving *value alone) when the attr is missing or of another type.
  template <typename T>
  bool GetAttr(const std::string& name, T* value) const {
    return ::shardflow::GetAttr(node_.attr(), name, value).ok();
  }

 private:
  const NodeDef& node_;
  const std::vector<TensorShape>* inputs_;
  const std::vector<TensorShape>* outputs_;
  const int64_t unknown_dim_;
};

using FlopsFn = std::function<double(const OpCostContext&)>;

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_OP_COST_H_
