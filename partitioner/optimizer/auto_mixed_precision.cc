// auto_mixed_precision_onednn_bfloat16 (TF's name; off unless RewriterConfig turns it ON): the
// matrix products and convolutions of the graph, forward and gradients (MatMul, Conv2D,
// Conv2DBackpropInput, Conv2DBackpropFilter), take bfloat16 inputs; everything else - variables
// (the fp32 master weights), optimizer updates, reductions, batch norm, losses - stays fp32.
//
// Note [bfloat16 mixed precision]
// -------------------------------
// bfloat16 keeps fp32's exponent and 8 bits of mantissa, so no loss scaling is needed (unlike
// fp16): each input of an allowed op is rounded to bfloat16 (round to nearest even), products are
// accumulated in fp32 and the result is fp32, as oneDNN's bf16 kernels do.
// - On a processor that multiplies bfloat16 natively (AVX512-BF16, AMX; core/platform/cpu_info.h)
//   the op is marked (kBf16ProductsAttr, core/framework/fused_ops.h) and its CPU kernel rounds
//   its inputs and runs oneDNN's bf16 primitive, writing fp32 (kernels/cpu/matmul_op.cc,
//   conv_ops.cc): the graph keeps its fp32 types, so the remapping pass after this one still
//   fuses bias and activation into the marked products (the fused op inherits the mark), and no
//   output needs a Cast back.
// - Elsewhere, and for products placed on a GPU, the inputs are rounded to bfloat16 and widened
//   back (Cast, Cast) and the fp32 kernel runs: the same numbers as native bf16 up to the order
//   of the fp32 accumulation, so accuracy can be checked on any processor, with no speed-up. A
//   tensor read by several rewritten ops (a weight read by the forward op and both gradients) is
//   cast once.
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/fused_ops.h"
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

// Whether `n` is placed (or asked to be) on a GPU, whose kernels do not read the mark.
bool OnGpu(const Node& n) {
  return absl::StrContains(absl::AsciiStrToUpper(n.assigned_device()), "GPU") ||
         absl::StrContains(absl::AsciiStrToUpper(n.requested_device()), "GPU");
}

// The filter shape of convolution `n` ([kh, kw, cin, cout]: its filter input's, or for the filter
// gradient its output's) when fully known; else null (not a convolution, or unknown sizes).
const TensorShape* KnownFilterShape(const Node& n) {
  if (n.op().rfind("Conv2D", 0) != 0) return nullptr;
  const TensorShape* s = nullptr;
  if (n.op() == "Conv2DBackpropFilter") {
    if (n.num_outputs() < 1) return nullptr;
    s = &n.output_shape(0);
  } else {
    const Edge* e = n.input_edge(1);
    if (e == nullptr) return nullptr;
    s = &e->src->output_shape(e->src_output);
  }
  if (s->unknown_rank() || s->rank() != 4) return nullptr;
  for (int i = 0; i < 3; ++i) {
    if (s->dim(i) < 0) return nullptr;
  }
  return s;
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
      if (native && !OnGpu(*n)) {
        // Dot products too short to gain (kMinBf16DotLength, core/framework/fused_ops.h; the
        // kernels apply the same bound where the shapes are not known here).
        const TensorShape* f = KnownFilterShape(*n);
        if (f != nullptr && !Bf16DotProductsLongEnough(f->dim(0), f->dim(1), f->dim(2))) {
          // Short: the product below cannot overflow.
          changes->push_back(absl::StrCat("'", n->name(), "' (", n->op(), ") stays fp32: dot ",
                                          "products of ", f->dim(0) * f->dim(1) * f->dim(2),
                                          " (kernel x input channels), too short to gain"));
          continue;
        }
        n->SetAttr(kBf16ProductsAttr, MakeAttr(true));
        changes->push_back(absl::StrCat("'", n->name(), "' (", n->op(), ") runs in bfloat16"));
        continue;
      }
      for (int i : FloatInputs(n->op())) {
        const Edge* e = n->input_edge(i);
        SF_ASSIGN_OR_RETURN(Node * rounded, Rounded(graph, e->src, e->src_output, *n));
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
  // src:output rounded to bfloat16 and widened back to fp32 (Cast, Cast) on `like`'s device,
  // made once per tensor.
  absl::StatusOr<Node*> Rounded(Graph* graph, Node* src, int output, const Node& like) {
    auto it = casts_.find({src->id(), output});
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
    SF_ASSIGN_OR_RETURN(Node * wide, make(narrow, 0, DT_FLOAT, "/bf16_rounded"));
    casts_[{src->id(), output}] = wide->id();
    return wide;
  }

  std::map<std::pair<int, int>, int> casts_;  // (src id, output) -> the widening cast's id
};

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewAutoMixedPrecision() {
  return std::make_unique<AutoMixedPrecision>();
}

}  // namespace shardflow
