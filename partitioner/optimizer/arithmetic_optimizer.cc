// arithmetic_optimization: operations that return one of their inputs unchanged are replaced by
// that input — x*1, 1*x, x+0, 0+x, x-0, x/1 (when the constant does not broadcast x to a larger
// shape), Neg(Neg(x)), and a Reshape of x to the shape x already has.
#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "partitioner/optimizer/graph_optimizer.h"

namespace shardflow {
namespace {

template <typename T>
bool AllEqual(const Tensor& t, double value) {
  const T* v = t.data<T>();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (static_cast<double>(v[i]) != value) return false;
  }
  return true;
}

// Whether `node` is a Const whose every element is `value` (float, double, int32, int64).
bool IsConstantOf(const Node& node, double value) {
  const Tensor* t = node.constant_value();
  if (t == nullptr || t->NumElements() == 0) return false;
  switch (t->dtype()) {
    case DT_FLOAT:
      return AllEqual<float>(*t, value);
    case DT_DOUBLE:
      return AllEqual<double>(*t, value);
    case DT_INT32:
      return AllEqual<int32_t>(*t, value);
    case DT_INT64:
      return AllEqual<int64_t>(*t, value);
    default:
      return false;
  }
}

class ArithmeticOptimizer : public GraphOptimizationPass {
 public:
  const char* name() const override { return "arithmetic_optimization"; }

  absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                   std::vector<std::string>* changes) override {
    SF_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
    for (Node* n : order) {
      if (optimizer::IsFixed(*n, options)) continue;
      int forward = -1;  // the input `n` returns unchanged
      const std::string& op = n->op();
      if (n->num_inputs() == 2 && n->input_edge(0) && n->input_edge(1) &&
          (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")) {
        const Node& a = *n->input_edge(0)->src;
        const Node& b = *n->input_edge(1)->src;
        const double neutral = (op == "Add" || op == "Sub") ? 0.0 : 1.0;
        if (IsConstantOf(b, neutral) && KeepsShape(*n, 0, b)) {
          forward = 0;
        } else if ((op == "Add" || op == "Mul") && IsConstantOf(a, neutral) &&
                   KeepsShape(*n, 1, a)) {
          forward = 1;
        }
      } else if (op == "Neg" && n->input_edge(0) && n->input_edge(0)->src->op() == "Neg") {
        // -(-x): the outer Neg's consumers read x.
        Node* inner = n->input_edge(0)->src;
        if (!optimizer::IsFixed(*inner, options) && inner->input_edge(0) != nullptr &&
            optimizer::SameDevice(*n, *inner)) {
          const std::string what = absl::StrCat("'", n->name(), "' (Neg of Neg) -> '",
                                                inner->input_edge(0)->src->name(), "'");
          SF_RETURN_IF_ERROR(optimizer::MoveOutputs(graph, n, 0, inner->input_edge(0)->src,
                                                    inner->input_edge(0)->src_output));
          optimizer::MoveControlOutputs(graph, n, inner);
          changes->push_back(what);
          continue;  // the dead Negs go with the dependency pass
        }
      } else if (op == "Reshape" && n->input_edge(0) != nullptr) {
        const Edge* in = n->input_edge(0);
        const TensorShape& from = in->src->output_shape(in->src_output);
        if (from.IsFullyDefined() && from == n->output_shape(0)) forward = 0;
      }
      if (forward < 0) continue;
      const Node* src = n->input_edge(forward)->src;
      const std::string what = absl::StrCat("'", n->name(), "' (", op, ") returns '", src->name(),
                                            "' unchanged: forwarded");
      SF_RETURN_IF_ERROR(optimizer::ForwardInput(graph, n, forward));
      changes->push_back(what);
    }
    return absl::OkStatus();
  }

 private:
  // Whether n's output has the shape of its input `kept` whatever the constant broadcasts: the
  // constant is a scalar, or both shapes are known and equal.
  static bool KeepsShape(const Node& n, int kept, const Node& constant) {
    if (n.input_type(kept) != n.output_type(0)) return false;
    const Tensor* c = constant.constant_value();
    const Edge* in = n.input_edge(kept);
    const TensorShape& x = in->src->output_shape(in->src_output);
    if (c != nullptr && c->shape().rank() == 0) return true;  // a scalar never broadcasts x
    return x.IsFullyDefined() && x == n.output_shape(0);
  }
};

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewArithmeticOptimizer() {
  return std::make_unique<ArithmeticOptimizer>();
}

}  // namespace shardflow
