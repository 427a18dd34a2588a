// The graph optimizer: passes that rewrite a step's graph after it is pruned to what the fetches
// need and before it is placed, so placement and partitioning see the optimized graph. User code
// does not change; SessionOptionsProto.rewrite_options turns each pass off.
//
//   GraphOptimizerOptions options;
//   options.config = session_config.rewrite_options();
//   options.keep = {"train_op"};                 // the run's targets: never removed or renamed
//   options.evaluate = ...;                      // runs one node on the host (constant folding)
//   GraphOptimizerReport report;
//   SF_RETURN_IF_ERROR(OptimizeGraph(options, graph.get(), &report));
//
// The passes, in order (Note [graph optimizer] in graph_optimizer.cc):
//   arithmetic_optimization      x*1, x+0, x-0, x/1, Neg(Neg(x)), a Reshape to x's own shape -> x
//   constant_folding             a pure node whose inputs are all constants -> Const; Shape, Size
//                                and Rank of a statically known shape -> Const
//   common_subgraph_elimination  two pure nodes with the same op, attrs, device and inputs -> one
//   dependency_optimization      Identity/StopGradient forwarded to their input; dead nodes removed
//   remapping                    MatMul/Conv2D + BiasAdd (+ Relu, Relu6, Elu, Tanh, Sigmoid) ->
//                                one _FusedMatMul/_FusedConv2D (a oneDNN primitive with post-ops);
//                                first, an inference FusedBatchNorm with constant statistics is
//                                folded into the constant weights before it (+ a BiasAdd);
//                                one with variable statistics -> _FusedConv2DBatchNorm, and a
//                                residual Add (+ Relu) after it -> _FusedConv2DBatchNormAdd
// The first four run twice (one pass's result feeds another's); remapping runs last, once.
//
// A rewritten node keeps its name where one node replaces another (a folded constant, the fused
// node takes the name of the last node of its chain), so the whole-graph placement still applies
// and fetches still find their tensors. Stateful ops, _Arg/_Retval/_Send/_Recv and Placeholder are
// never folded, merged or removed.
#ifndef SHARDFLOW_PARTITIONER_OPTIMIZER_GRAPH_OPTIMIZER_H_
#define SHARDFLOW_PARTITIONER_OPTIMIZER_GRAPH_OPTIMIZER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "core/framework/tensor.h"
#include "core/graph/graph.h"
#include "core/protos/config.pb.h"

namespace shardflow {

struct GraphOptimizerOptions {
  RewriterConfig config;
  // Nodes that must stay as they are (the run's targets, which nothing consumes).
  absl::flat_hash_set<std::string> keep;
  // Runs one node on the host with the given inputs (constant folding); unset = no folding.
  std::function<absl::StatusOr<std::vector<Tensor>>(const NodeDef& node,
                                                    std::vector<Tensor> inputs)>
      evaluate;
  // A folded constant larger than this is left to be computed at run time (as TF's 10 MB).
  int64_t max_constant_bytes = 10 << 20;
  // A node costing more floating-point operations than this (its FlopsFn) is not folded: folding
  // is for cheap constant expressions, heavy work runs in the step where the user placed it.
  double max_fold_flops = 1e7;
};

// One pass over a graph. Implementations live beside this file.
class GraphOptimizationPass {
 public:
  virtual ~GraphOptimizationPass() = default;
  // The RewriterConfig field that turns it off ("constant_folding", ...).
  virtual const char* name() const = 0;
  // Rewrites `graph` in place; appends one line per change ("folded 'x' (Add) into a constant").
  virtual absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                           std::vector<std::string>* changes) = 0;
};

std::unique_ptr<GraphOptimizationPass> NewArithmeticOptimizer();
std::unique_ptr<GraphOptimizationPass> NewConstantFolding();
std::unique_ptr<GraphOptimizationPass> NewCommonSubgraphElimination();
std::unique_ptr<GraphOptimizationPass> NewDependencyOptimizer();
std::unique_ptr<GraphOptimizationPass> NewRemapper();
// Off unless turned ON: MatMul and convolutions on bfloat16 inputs (auto_mixed_precision.cc).
std::unique_ptr<GraphOptimizationPass> NewAutoMixedPrecision();

// Runs the passes the config leaves on; `report` (may be null) gets one entry per pass run.
absl::Status OptimizeGraph(const GraphOptimizerOptions& options, Graph* graph,
                           GraphOptimizerReport* report);

// Whether the config turns the pass named `pass` on (DEFAULT and ON do, except for
// auto_mixed_precision_onednn_bfloat16, which only ON turns on; disable_meta_optimizer wins).
bool PassEnabled(const RewriterConfig& config, const std::string& pass);

// Helpers the passes share (graph_rewrite_util.cc).
namespace optimizer {

// Never folded, merged, forwarded or removed: stateful ops, _Arg, _Retval, _Send, _Recv,
// Placeholder, and nodes in options.keep.
bool IsFixed(const Node& node, const GraphOptimizerOptions& options);
// Moves every consumer of from:from_output to to:to_output.
absl::Status MoveOutputs(Graph* graph, Node* from, int from_output, Node* to, int to_output);
// Gives `to` the control consumers of `from` (they then wait for `to`).
void MoveControlOutputs(Graph* graph, Node* from, Node* to);
// Replaces `node` by its input `input` (the input's producer takes its consumers; its control
// inputs become control inputs of each consumer) and removes it.
absl::Status ForwardInput(Graph* graph, Node* node, int input);
// Whether two nodes are asked for, or placed on, the same device (or neither says).
bool SameDevice(const Node& a, const Node& b);
// A Const holding `value`, on `like`'s device.
NodeDef ConstNodeDef(const std::string& name, const Node& like, const Tensor& value);
// Replaces `old` by a node made from `def` (usually of old's name: `old` is removed first). The
// new node reads inputs[i] on input i and waits for `waits_for`; it takes old's consumers (output
// i for output i) and control consumers. Its shapes are inferred.
absl::StatusOr<Node*> ReplaceNode(Graph* graph, Node* old, NodeDef def,
                                  const std::vector<std::pair<Node*, int>>& inputs,
                                  const std::vector<Node*>& waits_for);

}  // namespace optimizer
}  // namespace shardflow

#endif  // SHARDFLOW_PARTITIONER_OPTIMIZER_GRAPH_OPTIMIZER_H_
