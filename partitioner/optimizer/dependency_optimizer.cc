// dependency_optimization: Identity and StopGradient nodes forwarded to their input, then the
// nodes nothing reads any more removed.
#include "absl/strings/str_cat.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"
#include "partitioner/optimizer/graph_optimizer.h"

namespace shardflow {
namespace {

class DependencyOptimizer : public GraphOptimizationPass {
 public:
  const char* name() const override { return "dependency_optimization"; }

  absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                   std::vector<std::string>* changes) override {
    for (Node* n : graph->nodes()) {
      if (!Forwardable(*n, options)) continue;
      const std::string what = absl::StrCat("forwarded '", n->name(), "' (", n->op(), ") to '",
                                            n->input_edge(0)->src->name(), "'");
      SF_RETURN_IF_ERROR(optimizer::ForwardInput(graph, n, 0));
      changes->push_back(what);
    }
    // Dead nodes: nothing reads them, nothing waits for them, they have no effect. Removing one
    // can leave its inputs dead, so repeat until none is left.
    bool removed = true;
    while (removed) {
      removed = false;
      for (Node* n : graph->nodes()) {
        if (!n->out_edges().empty() || optimizer::IsFixed(*n, options)) continue;
        changes->push_back(
            absl::StrCat("removed '", n->name(), "' (", n->op(), "): nothing reads it"));
        graph->RemoveNode(n);
        removed = true;
      }
    }
    return absl::OkStatus();
  }

 private:
  // An Identity or StopGradient on the same device as its input (an Identity that moves a tensor
  // to another device stays: it is how users copy).
  static bool Forwardable(const Node& n, const GraphOptimizerOptions& options) {
    if (n.op() != kIdentityOp && n.op() != kStopGradientOp) return false;
    if (optimizer::IsFixed(n, options) || n.num_inputs() != 1) return false;
    const Edge* in = n.input_edge(0);
    if (in == nullptr) return false;
    const Node& src = *in->src;
    if (!n.requested_device().empty() && n.requested_device() != src.requested_device()) {
      return false;
    }
    return n.assigned_device().empty() || n.assigned_device() == src.assigned_device();
  }
};

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewDependencyOptimizer() {
  return std::make_unique<DependencyOptimizer>();
}

}  // namespace shardflow
