#include "partitioner/optimizer/graph_optimizer.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"

namespace shardflow {

// Note [graph optimizer]
// ----------------------
// The optimizer sees the graph of one Run signature: pruned to what the fetches and targets
// need, feeds already replaced by _Arg and fetches by _Retval (RewriteForRun), not yet placed.
// So a fed placeholder is never folded (it is an _Arg), a fetched tensor is never lost (its
// _Retval consumes it), and a node's requested device is all it knows of placement: two nodes
// are merged or fused only when they ask for the same device (or neither asks). Gradients were
// built by the user's graph before the optimizer runs, so forwarding a StopGradient, or fusing a
// MatMul into a _FusedMatMul whose intermediate nothing else reads, changes no gradient.
// Every pass leaves a graph that computes the same values as its input, up to float rounding
// (fusion reorders nothing; folding computes with the same kernels); the tests in
// tests/partitioner/optimizer/ run both on random inputs, forward and gradients.
// Order: arithmetic simplification first (x*1 becomes x, which lets CSE and folding see more),
// then folding, CSE, and dependency optimization (forwarding the identities the others left and
// removing the nodes nothing reads any more); twice, then bfloat16 mixed precision when asked
// for (Note [bfloat16 mixed precision]), then fusion, once, on the final graph.

bool PassEnabled(const RewriterConfig& config, const std::string& pass) {
  if (config.disable_meta_optimizer()) return false;
  RewriterConfig::Toggle t = RewriterConfig::DEFAULT;
  if (pass == "arithmetic_optimization") t = config.arithmetic_optimization();
  if (pass == "constant_folding") t = config.constant_folding();
  if (pass == "common_subgraph_elimination") t = config.common_subgraph_elimination();
  if (pass == "dependency_optimization") t = config.dependency_optimization();
  if (pass == "remapping") t = config.remapping();
  if (pass == "auto_mixed_precision_onednn_bfloat16") {
    return config.auto_mixed_precision_onednn_bfloat16() == RewriterConfig::ON;
  }
  return t != RewriterConfig::OFF;
}

absl::Status OptimizeGraph(const GraphOptimizerOptions& options, Graph* graph,
                           GraphOptimizerReport* report) {
  // _filter_is_constant makes a convolution kernel reorder its filter once and reuse it: only the
  // remapping pass, which sees the filter is a Const, may set it. A client graph's value is not
  // trusted (on a variable filter the kernel would keep computing with the first value).
  for (Node* n : graph->nodes()) {
    if (n->attrs().count("_filter_is_constant") > 0) {
      n->SetAttr("_filter_is_constant", MakeAttr(false));
    }
  }
  std::vector<std::unique_ptr<GraphOptimizationPass>> passes;
  passes.push_back(NewArithmeticOptimizer());
  passes.push_back(NewConstantFolding());
  passes.push_back(NewCommonSubgraphElimination());
  passes.push_back(NewDependencyOptimizer());
  std::vector<GraphOptimizationPass*> order;
  for (int round = 0; round < 2; ++round) {
    for (auto& p : passes) order.push_back(p.get());
  }
  std::unique_ptr<GraphOptimizationPass> mixed_precision = NewAutoMixedPrecision();
  order.push_back(mixed_precision.get());
  std::unique_ptr<GraphOptimizationPass> remapper = NewRemapper();
  order.push_back(remapper.get());
  for (GraphOptimizationPass* pass : order) {
    if (!PassEnabled(options.config, pass->name())) continue;
    const int before = graph->num_nodes();
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> changes;
    absl::Status s = pass->Run(options, graph, &changes);
    if (!s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("graph optimizer pass ", pass->name(), ": ", s.message(),
                                       " (RewriterConfig can turn the pass off)"));
    }
    if (report == nullptr) continue;
    GraphOptimizerReport::Pass* r = report->add_passes();
    r->set_name(pass->name());
    r->set_nodes_before(before);
    r->set_nodes_after(graph->num_nodes());
    r->set_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (std::string& c : changes) r->add_changes(std::move(c));
  }
  return absl::OkStatus();
}

namespace optimizer {

bool IsFixed(const Node& node, const GraphOptimizerOptions& options) {
  const std::string& op = node.op();
  return node.op_def().is_stateful || op == kArgOp || op == kRetvalOp || op == kSendOp ||
         op == kRecvOp || op == kPlaceholderOp || options.keep.contains(node.name());
}

absl::Status MoveOutputs(Graph* graph, Node* from, int from_output, Node* to, int to_output) {
  std::vector<const Edge*> edges;
  for (const Edge* e : from->out_edges()) {
    if (!e->IsControl() && e->src_output == from_output) edges.push_back(e);
  }
  for (const Edge* e : edges) {
    Node* dst = e->dst;
    const int input = e->dst_input;
    graph->RemoveEdge(e);
    SF_RETURN_IF_ERROR(graph->AddEdge(to, to_output, dst, input).status());
  }
  return absl::OkStatus();
}

void MoveControlOutputs(Graph* graph, Node* from, Node* to) {
  std::vector<const Edge*> edges;
  for (const Edge* e : from->out_edges()) {
    if (e->IsControl()) edges.push_back(e);
  }
  for (const Edge* e : edges) {
    Node* dst = e->dst;
    graph->RemoveEdge(e);
    if (dst != to) graph->AddControlEdge(to, dst);
  }
}

absl::Status ForwardInput(Graph* graph, Node* node, int input) {
  const Edge* in = node->input_edge(input);
  if (in == nullptr) return absl::InternalError("forwarding an unconnected input");
  Node* src = in->src;
  const int src_output = in->src_output;
  // Whatever the node waited for, its consumers now wait for.
  std::vector<Node*> waits_for;
  for (const Edge* e : node->in_edges()) {
    if (e->IsControl()) waits_for.push_back(e->src);
  }
  std::vector<Node*> consumers;
  for (const Edge* e : node->out_edges()) consumers.push_back(e->dst);
  for (Node* c : waits_for) {
    for (Node* dst : consumers) {
      if (dst != c) graph->AddControlEdge(c, dst);
    }
  }
  SF_RETURN_IF_ERROR(MoveOutputs(graph, node, 0, src, src_output));
  MoveControlOutputs(graph, node, src);
  graph->RemoveNode(node);
  return absl::OkStatus();
}

bool SameDevice(const Node& a, const Node& b) {
  return a.requested_device() == b.requested_device() && a.assigned_device() == b.assigned_device();
}

NodeDef ConstNodeDef(const std::string& name, const Node& like, const Tensor& value) {
  NodeDef def;
  def.set_name(name);
  def.set_op(kConstOp);
  def.set_device(like.requested_device());
  def.set_assigned_device(like.assigned_device());
  (*def.mutable_attr())["dtype"] = MakeAttr(value.dtype());
  (*def.mutable_attr())["value"] = MakeAttr(value);
  return def;
}

absl::StatusOr<Node*> ReplaceNode(Graph* graph, Node* old, NodeDef def,
                                  const std::vector<std::pair<Node*, int>>& inputs,
                                  const std::vector<Node*>& waits_for) {
  struct Reader {
    int output;
    Node* dst;
    int input;
  };
  std::vector<Reader> readers;
  std::vector<Node*> waiters;
  for (const Edge* e : old->out_edges()) {
    if (e->IsControl()) {
      waiters.push_back(e->dst);
    } else {
      readers.push_back({e->src_output, e->dst, e->dst_input});
    }
  }
  graph->RemoveNode(old);
  SF_ASSIGN_OR_RETURN(Node * n, graph->AddNode(std::move(def)));
  for (size_t i = 0; i < inputs.size(); ++i) {
    SF_RETURN_IF_ERROR(
        graph->AddEdge(inputs[i].first, inputs[i].second, n, static_cast<int>(i)).status());
  }
  for (Node* w : waits_for) graph->AddControlEdge(w, n);
  SF_RETURN_IF_ERROR(graph->InferShapes(n));
  for (const Reader& r : readers) {
    SF_RETURN_IF_ERROR(graph->AddEdge(n, r.output, r.dst, r.input).status());
  }
  for (Node* dst : waiters) graph->AddControlEdge(n, dst);
  return n;
}

}  // namespace optimizer
}  // namespace shardflow
