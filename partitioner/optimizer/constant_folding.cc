// constant_folding: a pure node whose data inputs are all constants is computed once, here, and
// replaced by a Const of the same name; Shape of a tensor whose shape is known becomes a Const.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/framework/op_cost.h"
#include "core/platform/status.h"
#include "partitioner/optimizer/graph_optimizer.h"

namespace shardflow {
namespace {

class ConstantFolding : public GraphOptimizationPass {
 public:
  const char* name() const override { return "constant_folding"; }

  absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                   std::vector<std::string>* changes) override {
    SF_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
    for (Node* n : order) {
      if (n->IsConstant() || optimizer::IsFixed(*n, options) || n->num_outputs() == 0) continue;
      std::vector<Tensor> outputs;
      if (n->op() == "Shape") {
        if (!StaticShape(*n, &outputs)) continue;
      } else if (!Evaluate(options, *n, &outputs)) {
        continue;
      }
      const std::string what =
          absl::StrCat("folded '", n->name(), "' (", n->op(), ") into a constant");
      SF_RETURN_IF_ERROR(Replace(graph, n, outputs));
      changes->push_back(what);
    }
    return absl::OkStatus();
  }

 private:
  // Shape(x) with x's shape fully known.
  static bool StaticShape(const Node& n, std::vector<Tensor>* outputs) {
    const Edge* in = n.input_edge(0);
    if (in == nullptr) return false;
    const TensorShape& s = in->src->output_shape(in->src_output);
    if (!s.IsFullyDefined()) return false;
    std::vector<int64_t> dims;
    for (int i = 0; i < s.rank(); ++i) dims.push_back(s.dim(i));
    if (n.output_type(0) == DT_INT64) {
      outputs->push_back(Tensor::FromVector<int64_t>(dims));
    } else {
      std::vector<int32_t> narrow(dims.begin(), dims.end());
      for (int64_t d : dims) {
        if (d > INT32_MAX) return false;  // the kernel's error, at run time
      }
      outputs->push_back(Tensor::FromVector<int32_t>(narrow));
    }
    return true;
  }

  // Runs `n` when everything it reads and waits for is a constant. False: not foldable, or the
  // kernel refused (its error then comes at run time, where it names the step), or too large.
  static bool Evaluate(const GraphOptimizerOptions& options, const Node& n,
                       std::vector<Tensor>* outputs) {
    if (!options.evaluate || n.num_inputs() == 0) return false;
    std::vector<Tensor> inputs;
    for (int i = 0; i < n.num_inputs(); ++i) {
      const Edge* in = n.input_edge(i);
      if (in == nullptr || !in->src->IsConstant()) return false;
      const Tensor* value = in->src->constant_value();
      if (value == nullptr) return false;
      inputs.push_back(*value);
    }
    for (const Edge* e : n.in_edges()) {
      if (e->IsControl() && !e->src->IsConstant()) return false;
    }
    // Folding is for cheap constant expressions (shape arithmetic, scalars, small transforms):
    // heavy work runs in the step, on the device the user asked for, not here at plan time.
    std::vector<TensorShape> in_shapes, out_shapes;
    double largest = 0;
    for (const Tensor& t : inputs) {
      in_shapes.push_back(t.shape());
      largest = std::max(largest, static_cast<double>(t.NumElements()));
    }
    for (int i = 0; i < n.num_outputs(); ++i) {
      out_shapes.push_back(n.output_shape(i));
      largest = std::max(largest, static_cast<double>(n.output_shape(i).IsFullyDefined()
                                                          ? n.output_shape(i).num_elements()
                                                          : 0));
    }
    double flops = 2 * largest;
    if (n.op_def().flops_fn) {
      flops = n.op_def().flops_fn(OpCostContext(n.def(), &in_shapes, &out_shapes, 1));
    }
    if (flops > options.max_fold_flops) return false;
    absl::StatusOr<std::vector<Tensor>> out = options.evaluate(n.def(), std::move(inputs));
    if (!out.ok() || static_cast<int>(out->size()) != n.num_outputs()) return false;
    for (int i = 0; i < n.num_outputs(); ++i) {
      const Tensor& t = (*out)[i];
      if (!t.IsInitialized() || t.dtype() != n.output_type(i) ||
          t.TotalBytes() > options.max_constant_bytes) {
        return false;
      }
    }
    *outputs = *std::move(out);
    return true;
  }

  // One output: a Const takes the node's name and consumers. Several: one Const per output
  // ("name/folded_i"); the node, read by nobody, goes with the dependency pass.
  static absl::Status Replace(Graph* graph, Node* n, const std::vector<Tensor>& outputs) {
    if (outputs.size() == 1) {
      return optimizer::ReplaceNode(graph, n, optimizer::ConstNodeDef(n->name(), *n, outputs[0]),
                                    {}, {})
          .status();
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      NodeDef def = optimizer::ConstNodeDef(
          graph->UniqueName(absl::StrCat(n->name(), "/folded_", i)), *n, outputs[i]);
      SF_ASSIGN_OR_RETURN(Node * c, graph->AddNode(std::move(def)));
      SF_RETURN_IF_ERROR(graph->InferShapes(c));
      SF_RETURN_IF_ERROR(optimizer::MoveOutputs(graph, n, static_cast<int>(i), c, 0));
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewConstantFolding() {
  return std::make_unique<ConstantFolding>();
}

}  // namespace shardflow
