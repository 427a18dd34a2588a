// remapping: MatMul or Conv2D, then BiasAdd, then optionally Relu, Tanh or Sigmoid, become one
// _FusedMatMul / _FusedConv2D (kernels/cpu: the bias and the activation are applied as the
// product is written). An inference batch norm after a Conv2D is folded into constant weights
// when its statistics are constants (a frozen graph), else fused with the convolution (and an
// activation after it) into _FusedConv2DBatchNorm, and a residual Add after that (+ activation)
// into _FusedConv2DBatchNormAdd. Only when nothing else reads the intermediate
// results: in a training graph the activation's gradient reads the activation's output, which the
// fused node still produces under the same name.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/platform/status.h"
#include "partitioner/optimizer/graph_optimizer.h"

namespace shardflow {
namespace {

// The one node reading `n`'s only output through its only edge, else null.
Node* SoleReader(const Node& n) {
  if (n.out_edges().size() != 1) return nullptr;
  const Edge* e = n.out_edges()[0];
  return e->IsControl() || e->src_output != 0 ? nullptr : e->dst;
}

bool IsFloat(const Node& n) { return n.num_outputs() == 1 && n.output_type(0) == DT_FLOAT; }

// The Relu, Tanh or Sigmoid that is the sole reader of `n`'s output and may join its fusion, else
// null.
Node* FusibleActivation(const Node& n, const GraphOptimizerOptions& options) {
  Node* a = SoleReader(n);
  if (a == nullptr || !IsFloat(*a) || optimizer::IsFixed(*a, options) ||
      !optimizer::SameDevice(n, *a) ||
      (a->op() != "Relu" && a->op() != "Tanh" && a->op() != "Sigmoid")) {
    return nullptr;
  }
  return a;
}

// A fused node: named after and placed like `last` (the end of the chain it replaces), with
// `product`'s attrs and the activation's name (or "") as its "activation" attr.
NodeDef FusedNodeDef(const std::string& op, const Node& last, const Node& product,
                     const Node* activation) {
  NodeDef def;
  def.set_name(last.name());
  def.set_op(op);
  def.set_device(last.requested_device());
  def.set_assigned_device(last.assigned_device());
  for (const auto& [attr, value] : product.attrs()) (*def.mutable_attr())[attr] = value;
  (*def.mutable_attr())["activation"] =
      MakeAttr(activation != nullptr ? activation->op() : std::string());
  return def;
}

// What the nodes of a chain wait for from outside it (their control inputs): the fused node
// waits for the same.
std::vector<Node*> OuterControlInputs(const std::vector<Node*>& chain) {
  std::vector<Node*> out;
  for (Node* n : chain) {
    if (n == nullptr) continue;
    for (const Edge* e : n->in_edges()) {
      if (!e->IsControl()) continue;
      bool inside = false;
      for (Node* c : chain) inside |= c == e->src;
      if (!inside) out.push_back(e->src);
    }
  }
  return out;
}

// The node an inference batch norm normalises (its input 0), when `bn` is a FusedBatchNorm with
// is_training false of which only output 0 is read; else null. Sets `epsilon`.
Node* InferenceBatchNormInput(const Node& bn, const GraphOptimizerOptions& options,
                              float* epsilon) {
  bool training = true;
  if (bn.op() != "FusedBatchNorm" || optimizer::IsFixed(bn, options) ||
      !GetAttr(bn.attrs(), "is_training", &training).ok() || training ||
      !GetAttr(bn.attrs(), "epsilon", epsilon).ok()) {
    return nullptr;
  }
  for (const Edge* e : bn.out_edges()) {
    if (!e->IsControl() && e->src_output != 0) return nullptr;
  }
  const Edge* in = bn.input_edge(0);
  return in == nullptr ? nullptr : in->src;
}

// " + 'name' (Op)" for a change line, or "" without an activation.
std::string ActivationPart(const Node* activation) {
  return activation != nullptr
             ? absl::StrCat(" + '", activation->name(), "' (", activation->op(), ")")
             : "";
}

class Remapper : public GraphOptimizationPass {
 public:
  // Before fusing: inference batch norms folded into the weights before them.
  static absl::Status FoldBatchNorms(const GraphOptimizerOptions& options, Graph* graph,
                                     std::vector<std::string>* changes);
  // Then the others after a Conv2D: one _FusedConv2DBatchNorm.
  static absl::Status FuseConvBatchNorms(const GraphOptimizerOptions& options, Graph* graph,
                                         std::vector<std::string>* changes);
  // A residual block's end, Add(`conv`, shortcut) (+ activation) with `conv` a `conv_op`
  // (_FusedConv2DBatchNorm, or _FusedConv2D where the batch norm was folded) with no activation
  // of its own: one `conv_op` + "Add" node, the shortcut its last input.
  static absl::Status FuseResidualAdds(const GraphOptimizerOptions& options,
                                       const std::string& conv_op, Graph* graph,
                                       std::vector<std::string>* changes);

  const char* name() const override { return "remapping"; }

  absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                   std::vector<std::string>* changes) override {
    SF_RETURN_IF_ERROR(FoldBatchNorms(options, graph, changes));
    SF_RETURN_IF_ERROR(FuseConvBatchNorms(options, graph, changes));
    SF_RETURN_IF_ERROR(FuseResidualAdds(options, "_FusedConv2DBatchNorm", graph, changes));
    SF_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
    std::vector<int> ids;
    for (Node* n : order) ids.push_back(n->id());
    for (int id : ids) {
      Node* product = graph->node(id);  // null once fused away
      if (product == nullptr) continue;
      const bool matmul = product->op() == "MatMul";
      if ((!matmul && product->op() != "Conv2D") || !IsFloat(*product) ||
          optimizer::IsFixed(*product, options)) {
        continue;
      }
      Node* bias_add = SoleReader(*product);
      if (bias_add == nullptr || bias_add->op() != "BiasAdd" || !IsFloat(*bias_add) ||
          optimizer::IsFixed(*bias_add, options) || !optimizer::SameDevice(*product, *bias_add) ||
          bias_add->input_edge(0) == nullptr || bias_add->input_edge(0)->src != product ||
          bias_add->input_edge(1) == nullptr || product->input_edge(0) == nullptr ||
          product->input_edge(1) == nullptr) {
        continue;
      }
      Node* activation = FusibleActivation(*bias_add, options);
      Node* last = activation != nullptr ? activation : bias_add;
      // The fused node takes the last node's name, consumers and control edges.
      NodeDef def =
          FusedNodeDef(matmul ? "_FusedMatMul" : "_FusedConv2D", *last, *product, activation);
      std::vector<std::pair<Node*, int>> inputs;
      for (const Edge* in :
           {product->input_edge(0), product->input_edge(1), bias_add->input_edge(1)}) {
        inputs.push_back({in->src, in->src_output});
      }
      const std::vector<Node*> waits_for = OuterControlInputs({product, bias_add, activation});
      const std::string what =
          absl::StrCat("fused '", product->name(), "' (", product->op(), ") + '", bias_add->name(),
                       "' (BiasAdd)", ActivationPart(activation), " into ", def.op());
      graph->RemoveNode(product);
      if (last != bias_add) graph->RemoveNode(bias_add);
      SF_RETURN_IF_ERROR(
          optimizer::ReplaceNode(graph, last, std::move(def), inputs, waits_for).status());
      changes->push_back(what);
    }
    SF_RETURN_IF_ERROR(FuseResidualAdds(options, "_FusedConv2D", graph, changes));
    MarkConstantFilters(graph, changes);
    return absl::OkStatus();
  }

  // A convolution whose filter is a Const (a frozen graph, or weights folded above) gets
  // _filter_is_constant: its kernel reorders the filter into oneDNN's layout once instead of at
  // every call (~20 ms of a 90 ms ResNet-50 inference at batch 1).
  static void MarkConstantFilters(Graph* graph, std::vector<std::string>* changes) {
    for (Node* n : graph->nodes()) {
      if (n->op() != "Conv2D" && n->op() != "_FusedConv2D" && n->op() != "_FusedConv2DAdd" &&
          n->op() != "_FusedConv2DBatchNorm" && n->op() != "_FusedConv2DBatchNormAdd") {
        continue;
      }
      const Edge* filter = n->input_edge(1);
      if (filter == nullptr || filter->src->op() != "Const" ||
          (n->attrs().count("_filter_is_constant") > 0 &&
           n->attrs().at("_filter_is_constant").b())) {
        continue;
      }
      n->SetAttr("_filter_is_constant", MakeAttr(true));
      changes->push_back(
          absl::StrCat("'", n->name(), "' (", n->op(), ") has a constant filter: reordered once"));
    }
  }
};

// An inference batch norm (FusedBatchNorm, is_training false) whose statistics are constants
// (a frozen graph), right after a Conv2D or MatMul whose weights are a constant, is folded into
// the weights: w' = w * s and a BiasAdd of offset - mean * s, s = scale / sqrt(variance + eps)
// per output channel. The BiasAdd then fuses with the product like any other.
absl::Status Remapper::FoldBatchNorms(const GraphOptimizerOptions& options, Graph* graph,
                                      std::vector<std::string>* changes) {
  std::vector<int> ids;
  for (Node* n : graph->nodes()) ids.push_back(n->id());
  for (int id : ids) {
    Node* bn = graph->node(id);  // null once removed (a dead constant below)
    float epsilon = 0.001f;
    Node* product = bn == nullptr ? nullptr : InferenceBatchNormInput(*bn, options, &epsilon);
    if (product == nullptr) continue;
    const bool conv = product->op() == "Conv2D";
    bool tb = false;
    if (product->op() == "MatMul" && (!GetAttr(product->attrs(), "transpose_b", &tb).ok() || tb)) {
      continue;
    }
    if ((!conv && product->op() != "MatMul") || SoleReader(*product) != bn ||
        optimizer::IsFixed(*product, options) || !optimizer::SameDevice(*product, *bn) ||
        product->input_edge(1) == nullptr) {
      continue;
    }
    const Tensor* w = product->input_edge(1)->src->constant_value();
    std::vector<const Tensor*> stats;  // scale, offset, mean, variance
    for (int i = 1; i <= 4; ++i) {
      const Edge* e = bn->input_edge(i);
      stats.push_back(e == nullptr ? nullptr : e->src->constant_value());
    }
    if (w == nullptr || w->dtype() != DT_FLOAT || w->shape().rank() < 2) continue;
    const int64_t channels = w->shape().dim(w->shape().rank() - 1);
    bool ok = true;
    for (const Tensor* t : stats) {
      ok &= t != nullptr && t->dtype() == DT_FLOAT && t->NumElements() == channels;
    }
    if (!ok) continue;
    std::vector<float> factor(channels);
    Tensor bias(DT_FLOAT, TensorShape({channels}));
    for (int64_t c = 0; c < channels; ++c) {
      factor[c] = stats[0]->data<float>()[c] / std::sqrt(stats[3]->data<float>()[c] + epsilon);
      bias.data<float>()[c] = stats[1]->data<float>()[c] - stats[2]->data<float>()[c] * factor[c];
    }
    Tensor folded(DT_FLOAT, w->shape());
    for (int64_t i = 0; i < w->NumElements(); ++i) {
      folded.data<float>()[i] = w->data<float>()[i] * factor[i % channels];
    }
    auto constant = [&](const std::string& suffix, const Tensor& value) -> absl::StatusOr<Node*> {
      SF_ASSIGN_OR_RETURN(Node * c, graph->AddNode(optimizer::ConstNodeDef(
                                        graph->UniqueName(bn->name() + suffix), *bn, value)));
      SF_RETURN_IF_ERROR(graph->InferShapes(c));
      return c;
    };
    std::vector<int> replaced = {product->input_edge(1)->src->id()};
    for (int i = 1; i <= 4; ++i) replaced.push_back(bn->input_edge(i)->src->id());
    SF_ASSIGN_OR_RETURN(Node * weights, constant("/folded_weights", folded));
    SF_ASSIGN_OR_RETURN(Node * offset, constant("/folded_bias", bias));
    graph->RemoveEdge(product->input_edge(1));
    SF_RETURN_IF_ERROR(graph->AddEdge(weights, 0, product, 1).status());
    // A BiasAdd takes the batch norm's name, consumers and control edges.
    std::vector<Node*> waits_for;
    for (const Edge* e : bn->in_edges()) {
      if (e->IsControl()) waits_for.push_back(e->src);
    }
    NodeDef def;
    def.set_name(bn->name());
    def.set_op("BiasAdd");
    def.set_device(bn->requested_device());
    def.set_assigned_device(bn->assigned_device());
    (*def.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    const std::string what = absl::StrCat("folded '", bn->name(), "' (FusedBatchNorm) into '",
                                          product->name(), "' (", product->op(), ") + BiasAdd");
    SF_RETURN_IF_ERROR(
        optimizer::ReplaceNode(graph, bn, std::move(def), {{product, 0}, {offset, 0}}, waits_for)
            .status());
    // The constants folded in, unless something else reads them.
    for (int c_id : replaced) {
      Node* c = graph->node(c_id);
      if (c != nullptr && c->out_edges().empty() && !optimizer::IsFixed(*c, options)) {
        graph->RemoveNode(c);
      }
    }
    changes->push_back(what);
  }
  return absl::OkStatus();
}

absl::Status Remapper::FuseConvBatchNorms(const GraphOptimizerOptions& options, Graph* graph,
                                          std::vector<std::string>* changes) {
  std::vector<int> ids;
  for (Node* n : graph->nodes()) ids.push_back(n->id());
  for (int id : ids) {
    Node* bn = graph->node(id);
    float epsilon = 0.001f;
    Node* conv = bn == nullptr ? nullptr : InferenceBatchNormInput(*bn, options, &epsilon);
    if (conv == nullptr || bn->output_type(0) != DT_FLOAT) continue;
    if (conv->op() != "Conv2D" || !IsFloat(*conv) || SoleReader(*conv) != bn ||
        optimizer::IsFixed(*conv, options) || !optimizer::SameDevice(*conv, *bn) ||
        conv->input_edge(0) == nullptr || conv->input_edge(1) == nullptr) {
      continue;
    }
    bool inputs_ok = true;
    for (int i = 1; i <= 4; ++i) inputs_ok &= bn->input_edge(i) != nullptr;
    if (!inputs_ok) continue;
    // The activation must be the batch norm's only reader (SoleReader looks at one edge).
    Node* activation = FusibleActivation(*bn, options);
    Node* last = activation != nullptr ? activation : bn;
    NodeDef def = FusedNodeDef("_FusedConv2DBatchNorm", *last, *conv, activation);
    (*def.mutable_attr())["epsilon"] = MakeAttr(epsilon);
    std::vector<std::pair<Node*, int>> inputs;
    for (const Edge* e : {conv->input_edge(0), conv->input_edge(1), bn->input_edge(1),
                          bn->input_edge(2), bn->input_edge(3), bn->input_edge(4)}) {
      inputs.push_back({e->src, e->src_output});
    }
    const std::vector<Node*> waits_for = OuterControlInputs({conv, bn, activation});
    const std::string what = absl::StrCat(
        "fused '", conv->name(), "' (Conv2D) + '", bn->name(), "' (FusedBatchNorm, inference)",
        ActivationPart(activation), " into _FusedConv2DBatchNorm");
    graph->RemoveNode(conv);
    if (last != bn) graph->RemoveNode(bn);
    SF_RETURN_IF_ERROR(
        optimizer::ReplaceNode(graph, last, std::move(def), inputs, waits_for).status());
    changes->push_back(what);
  }
  return absl::OkStatus();
}

// Whether `a` and `b` are NHWC shapes that agree in height, width and channels (all known): an
// Add of the two broadcasts at most over the batch, which _FusedConv2DBatchNormAdd does too.
bool SameImageShape(const TensorShape& a, const TensorShape& b) {
  if (a.rank() != 4 || b.rank() != 4) return false;
  for (int i = 1; i < 4; ++i) {
    if (a.dim(i) < 0 || a.dim(i) != b.dim(i)) return false;
  }
  return true;
}

absl::Status Remapper::FuseResidualAdds(const GraphOptimizerOptions& options,
                                        const std::string& conv_op, Graph* graph,
                                        std::vector<std::string>* changes) {
  const int conv_inputs = conv_op == "_FusedConv2D" ? 3 : 6;
  std::vector<int> ids;
  for (Node* n : graph->nodes()) ids.push_back(n->id());
  for (int id : ids) {
    Node* add = graph->node(id);
    if (add == nullptr || (add->op() != "Add" && add->op() != "AddV2") || !IsFloat(*add) ||
        optimizer::IsFixed(*add, options) || add->input_edge(0) == nullptr ||
        add->input_edge(1) == nullptr) {
      continue;
    }
    Node* fused = nullptr;
    const Edge* side = nullptr;
    for (int i = 0; i < 2 && fused == nullptr; ++i) {
      Node* f = add->input_edge(i)->src;
      std::string activation;
      if (f->op() != conv_op || add->input_edge(i)->src_output != 0 || SoleReader(*f) != add ||
          optimizer::IsFixed(*f, options) || !optimizer::SameDevice(*f, *add) ||
          !GetAttr(f->attrs(), "activation", &activation).ok() || !activation.empty()) {
        continue;
      }
      const Edge* other = add->input_edge(1 - i);
      if (!SameImageShape(f->output_shape(0), other->src->output_shape(other->src_output))) {
        continue;
      }
      bool inputs_ok = true;
      for (int k = 0; k < conv_inputs; ++k) inputs_ok &= f->input_edge(k) != nullptr;
      if (!inputs_ok) continue;
      fused = f;
      side = other;
    }
    if (fused == nullptr) continue;
    Node* activation = FusibleActivation(*add, options);
    Node* last = activation != nullptr ? activation : add;
    NodeDef def = FusedNodeDef(conv_op + "Add", *last, *fused, activation);
    std::vector<std::pair<Node*, int>> inputs;
    for (int k = 0; k < conv_inputs; ++k) {
      inputs.push_back({fused->input_edge(k)->src, fused->input_edge(k)->src_output});
    }
    inputs.push_back({side->src, side->src_output});
    const std::vector<Node*> waits_for = OuterControlInputs({fused, add, activation});
    const std::string what = absl::StrCat("fused '", fused->name(), "' (", conv_op, ") + '",
                                          add->name(), "' (", add->op(), ", the residual add)",
                                          ActivationPart(activation), " into ", conv_op, "Add");
    graph->RemoveNode(fused);
    if (last != add) graph->RemoveNode(add);
    SF_RETURN_IF_ERROR(
        optimizer::ReplaceNode(graph, last, std::move(def), inputs, waits_for).status());
    changes->push_back(what);
  }
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewRemapper() { return std::make_unique<Remapper>(); }

}  // namespace shardflow
