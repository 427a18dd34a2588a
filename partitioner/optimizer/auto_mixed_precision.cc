// auto_mixed_precision_onednn_bfloat16 (TF's name; off unless RewriterConfig turns it ON): the
// matrix products and convolutions of the graph, forward and gradients (MatMul, Conv2D,
// Conv2DBackpropInput, Conv2DBackpropFilter), take bfloat16 inputs; everything else - variables
// (the fp32 master weights), optimizer updates, reductions, batch norm, losses - stays fp32.
//
// Note [bfloat16 mixed precision]
// -------------------------------
// bfloat16 keeps fp32's exponent and 8 bits of mantissa, so no loss scaling is needed (unlike
// fp16): each input of an allowed op is rounded to bfloat16 (round to nearest even, one Cast),
// products are accumulated in fp32 and the result is fp32, as oneDNN's bf16 kernels do.
// - On a processor that multiplies bfloat16 natively (AVX512-BF16, AMX; core/platform/cpu_info.h)
//   a MatMul runs as MatMul<bfloat16> on Cast inputs (oneDNN's bf16 primitive: half the bytes,
//   2-8x the multiply rate), followed by a Cast of its output back to fp32 under its old name.
// - Elsewhere, and for the convolutions (whose kernels are fp32 only), the inputs are rounded to
//   bfloat16 and widened back (Cast, Cast) and the fp32 kernel runs: the same numbers as native
//   bf16 up to the order of the fp32 accumulation, so accuracy can be checked on any processor,
//   with no speed-up.
// A tensor read by several rewritten ops (a weight read by the forward op and both gradients) is
// cast once. The pass runs before remapping, which then leaves the rewritten ops unfused.
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/platform/cpu_info.h"
#include "core/platform/status.h"
#include "partitioner/optimizer/graph_optimizer.h"

namespace shardflow {
namespace {

// A Cast from `from` to `to`, placed like `like`.
NodeDef CastDef(const std::string& name, const Node& like, DataType from, DataType to) {
  NodeDef def;
  def.set_name(name);
  def.set_op("Cast");
  def.set_device(like.requested_device());
  def.set_assigned_device(like.assigned_device());
  (*def.mutable_attr())["SrcT"] = MakeAttr(from);
  (*def.mutable_attr())["DstT"] = MakeAttr(to);
  return def;
}

// The inputs of an allowed op that carry fp32 data (the others are int32 shapes).
std::vector<int> FloatInputs(const std::string& op) {
  if (op == "MatMul" || op == "Conv2D") return {0, 1};
  if (op == "Conv2DBackpropInput") return {1, 2};
  if (op == "Conv2DBackpropFilter") return {0, 2};
  return {};
}

class AutoMixedPrecision : public GraphOptimizationPass {
 public:
  const char* name() const override { return "auto_mixed_precision_onednn_bfloat16"; }

  absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                   std::vector<std::string>* changes) override {
    const bool native = CpuHasNativeBf16();
    casts_.clear();
    std::vector<int> ids;
    for (Node* n : graph->nodes()) ids.push_back(n->id());
    int emulated_ops = 0;
    for (int id : ids) {
      Node* n = graph->node(id);
      if (n == nullptr || FloatInputs(n->op()).empty() || n->num_outputs() != 1 ||
          n->output_type(0) != DT_FLOAT || optimizer::IsFixed(*n, options)) {
        continue;
      }
      bool connected = true;
      for (int i : FloatInputs(n->op())) connected &= n->input_edge(i) != nullptr;
      if (!connected) continue;
      if (native && n->op() == "MatMul") {
        changes->push_back(absl::StrCat("'", n->name(), "' (MatMul) runs in bfloat16"));
        SF_RETURN_IF_ERROR(RunInBf16(graph, n));
        continue;
      }
      for (int i : FloatInputs(n->op())) {
        const Edge* e = n->input_edge(i);
        SF_ASSIGN_OR_RETURN(Node * rounded, Cast(graph, e->src, e->src_output, *n, true));
        graph->RemoveEdge(e);
        SF_RETURN_IF_ERROR(graph->AddEdge(rounded, 0, n, i).status());
      }
      ++emulated_ops;
      changes->push_back(
          absl::StrCat("'", n->name(), "' (", n->op(), ") reads bfloat16-rounded inputs"));
    }
    if (emulated_ops > 0 && !native) {
      changes->push_back(
          "this processor has no native bfloat16 (AVX512-BF16, AMX): inputs are rounded to "
          "bfloat16 and the fp32 kernels run (same accuracy, no speed-up)");
    }
    return absl::OkStatus();
  }

 private:
  // A Cast of src:output to bfloat16 on `like`'s device, made once per tensor; with `widen`, a
  // second Cast back to fp32 after it (the rounded value in fp32).
  absl::StatusOr<Node*> Cast(Graph* graph, Node* src, int output, const Node& like, bool widen) {
    const auto key = std::make_tuple(src->id(), output, widen);
    auto it = casts_.find(key);
    if (it != casts_.end() && graph->node(it->second) != nullptr) {
      return graph->node(it->second);
    }
    auto make = [&](Node* from, int from_output, DataType to,
                    const std::string& suffix) -> absl::StatusOr<Node*> {
      SF_ASSIGN_OR_RETURN(
          Node * c, graph->AddNode(CastDef(graph->UniqueName(absl::StrCat(src->name(), suffix)),
                                           like, from->output_type(from_output), to)));
      SF_RETURN_IF_ERROR(graph->AddEdge(from, from_output, c, 0).status());
      SF_RETURN_IF_ERROR(graph->InferShapes(c));
      return c;
    };
    SF_ASSIGN_OR_RETURN(Node * narrow,
                        make(src, output, DT_BFLOAT16,
                             output == 0 ? "/to_bf16" : absl::StrCat("/", output, "/to_bf16")));
    Node* result = narrow;
    if (widen) {
      SF_ASSIGN_OR_RETURN(result, make(narrow, 0, DT_FLOAT, "/bf16_rounded"));
    }
    casts_[key] = result->id();
    return result;
  }

  // MatMul<float> n becomes MatMul<bfloat16> of bfloat16 casts of its inputs, and a Cast of its
  // product to fp32 takes n's name and consumers.
  absl::Status RunInBf16(Graph* graph, Node* n) {
    std::vector<std::pair<Node*, int>> inputs;
    for (int i : FloatInputs(n->op())) {
      const Edge* e = n->input_edge(i);
      SF_ASSIGN_OR_RETURN(Node * c, Cast(graph, e->src, e->src_output, *n, false));
      inputs.push_back({c, 0});
    }
    NodeDef def;
    def.set_name(graph->UniqueName(n->name() + "/bf16"));
    def.set_op(n->op());
    def.set_device(n->requested_device());
    def.set_assigned_device(n->assigned_device());
    for (const auto& [attr, value] : n->attrs()) (*def.mutable_attr())[attr] = value;
    (*def.mutable_attr())["T"] = MakeAttr(DT_BFLOAT16);
    SF_ASSIGN_OR_RETURN(Node * product, graph->AddNode(std::move(def)));
    for (size_t i = 0; i < inputs.size(); ++i) {
      SF_RETURN_IF_ERROR(
          graph->AddEdge(inputs[i].first, inputs[i].second, product, static_cast<int>(i)).status());
    }
    // The product waits for what n waited for; the Cast after it needs nothing more.
    for (const Edge* e : n->in_edges()) {
      if (e->IsControl()) graph->AddControlEdge(e->src, product);
    }
    SF_RETURN_IF_ERROR(graph->InferShapes(product));
    return optimizer::ReplaceNode(graph, n, CastDef(n->name(), *n, DT_BFLOAT16, DT_FLOAT),
                                  {{product, 0}}, {})
        .status();
  }

  std::map<std::tuple<int, int, bool>, int> casts_;  // (src id, output, widened) -> cast id
};

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewAutoMixedPrecision() {
  return std::make_unique<AutoMixedPrecision>();
}

}  // namespace shardflow
