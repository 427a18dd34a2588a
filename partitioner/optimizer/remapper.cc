// remapping: MatMul or Conv2D, then BiasAdd, then optionally Relu, Tanh or Sigmoid, become one
// _FusedMatMul / _FusedConv2D (kernels/cpu: the bias and the activation are applied as the
// product is written). Only when nothing else reads the intermediate results: in a training
// graph the activation's gradient reads the activation's output, which the fused node still
// produces under the same name.
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

class Remapper : public GraphOptimizationPass {
 public:
  const char* name() const override { return "remapping"; }

  absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                   std::vector<std::string>* changes) override {
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
          bias_add->input_edge(1) == nullptr) {
        continue;
      }
      Node* activation = SoleReader(*bias_add);
      if (activation != nullptr &&
          (!IsFloat(*activation) || optimizer::IsFixed(*activation, options) ||
           !optimizer::SameDevice(*bias_add, *activation) ||
           (activation->op() != "Relu" && activation->op() != "Tanh" &&
            activation->op() != "Sigmoid"))) {
        activation = nullptr;
      }
      Node* last = activation != nullptr ? activation : bias_add;
      // The fused node takes the last node's name, consumers and control edges.
      NodeDef def;
      def.set_name(last->name());
      def.set_op(matmul ? "_FusedMatMul" : "_FusedConv2D");
      def.set_device(last->requested_device());
      def.set_assigned_device(last->assigned_device());
      for (const auto& [attr, value] : product->attrs()) (*def.mutable_attr())[attr] = value;
      (*def.mutable_attr())["activation"] =
          MakeAttr(activation != nullptr ? activation->op() : std::string());
      std::vector<std::pair<Node*, int>> ins = {
          {product->input_edge(0) ? product->input_edge(0)->src : nullptr,
           product->input_edge(0) ? product->input_edge(0)->src_output : 0},
          {product->input_edge(1) ? product->input_edge(1)->src : nullptr,
           product->input_edge(1) ? product->input_edge(1)->src_output : 0},
          {bias_add->input_edge(1)->src, bias_add->input_edge(1)->src_output}};
      if (ins[0].first == nullptr || ins[1].first == nullptr) continue;
      std::vector<Node*> waits_for;
      for (Node* n : {product, bias_add, last}) {
        for (const Edge* e : n->in_edges()) {
          if (e->IsControl() && e->src != product && e->src != bias_add) {
            waits_for.push_back(e->src);
          }
        }
      }
      std::vector<std::pair<Node*, int>> readers;
      std::vector<Node*> waiters;
      for (const Edge* e : last->out_edges()) {
        if (e->IsControl()) {
          waiters.push_back(e->dst);
        } else {
          readers.push_back({e->dst, e->dst_input});
        }
      }
      const std::string what =
          absl::StrCat("fused '", product->name(), "' (", product->op(), ") + '", bias_add->name(),
                       "' (BiasAdd)",
                       activation != nullptr
                           ? absl::StrCat(" + '", activation->name(), "' (", activation->op(), ")")
                           : "",
                       " into ", def.op());
      for (Node* n : {product, bias_add, activation}) {
        if (n != nullptr) graph->RemoveNode(n);
      }
      SF_ASSIGN_OR_RETURN(Node * fused, graph->AddNode(std::move(def)));
      for (int i = 0; i < 3; ++i) {
        SF_RETURN_IF_ERROR(graph->AddEdge(ins[i].first, ins[i].second, fused, i).status());
      }
      for (Node* w : waits_for) graph->AddControlEdge(w, fused);
      SF_RETURN_IF_ERROR(graph->InferShapes(fused));
      for (auto [dst, input] : readers) {
        SF_RETURN_IF_ERROR(graph->AddEdge(fused, 0, dst, input).status());
      }
      for (Node* dst : waiters) graph->AddControlEdge(fused, dst);
      changes->push_back(what);
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewRemapper() { return std::make_unique<Remapper>(); }

}  // namespace shardflow
