// GraphHandle: the C++ side of a Python `shardflow.Graph` — a root Scope and what Python needs
// to name its tensors and keep building after an error.
//
//   auto g = std::make_shared<GraphHandle>();
//   BuildContext ctx{"x", "layer1", "/device:CPU:1", {}};
//   std::vector<OutputRef> outs = g->Build(ctx, [&](const Scope& s) {
//     return std::vector<Output>{ops::Placeholder(s, DT_FLOAT)};
//   });
//
// Python refers to tensors by name (OutputRef: node name, output index, dtype, shape), never by
// Node*, so that the graph can be rebuilt: the C++ Scope keeps its first error forever (later
// ops become no-ops), while Python users expect a failed op to raise and the graph to stay
// usable. Build() therefore rebuilds the graph into a fresh Scope after an error (the failed node
// was already removed; see Note [Recovering after a build error]) and then raises the error.
//
// Thread safety: none; Python calls it with the GIL held.
#ifndef SHARDFLOW_PYTHON_BINDINGS_SRC_GRAPH_HANDLE_H_
#define SHARDFLOW_PYTHON_BINDINGS_SRC_GRAPH_HANDLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ops/scope.h"
#include "ops/training.h"
#include "python_bindings/src/status_exceptions.h"

namespace shardflow {
namespace python {

// One output of a node, as Python sees it.
struct OutputRef {
  std::string node;
  int index = 0;
  DataType dtype = DT_INVALID;
  bool unknown_rank = true;
  std::vector<int64_t> dims;  // -1 for an unknown dimension
  std::string name() const { return node + ":" + std::to_string(index); }
};

// Where and how the next op is built (from Python's context managers).
struct BuildContext {
  std::string name;                         // exact op name within the name scope; "" = "<Op>[_k]"
  std::string name_scope;                   // "a/b" or ""
  std::string device;                       // requested device, "" = any
  std::vector<std::string> control_inputs;  // node names
  std::vector<std::string> colocate_with;   // node names (tf.colocate_with): attr _class
};

class GraphHandle {
 public:
  GraphHandle() : root_(Scope::NewRootScope()) {}
  GraphHandle(const GraphHandle&) = delete;
  GraphHandle& operator=(const GraphHandle&) = delete;

  const Scope& root() const { return root_; }
  Graph* graph() const { return root_.graph(); }
  // Changes whenever nodes are added or the graph is rebuilt.
  int64_t generation() const { return generation_; }

  // The node named `name`; NotFound (raised) when there is none.
  Node* FindNode(const std::string& name) const;
  Output ResolveOutput(const OutputRef& ref) const;
  OutputRef MakeRef(const Output& output) const;

  // The scope `ctx` describes.
  Scope ScopeFor(const BuildContext& ctx) const;

  // Runs `fn(scope)` and returns its result; raises the build error (after recovering) when the
  // scope failed.
  template <typename Fn>
  auto Build(const BuildContext& ctx, Fn&& fn) -> decltype(fn(std::declval<const Scope&>())) {
    ThrowIfError(root_.status());
    Scope s = ScopeFor(ctx);
    auto result = fn(s);
    ++generation_;
    if (!root_.ok()) {
      absl::Status error = root_.status();
      Recover();
      throw StatusError(error);
    }
    return result;
  }
  // For builders that return a Status of their own (gradients, optimizers).
  void FailBuild(const absl::Status& status);

  // The variable whose VarHandleOp is named `handle_name`.
  Var FindVariable(const std::string& handle_name) const;

  // TF1's import_graph_def: validates `def` on its own (ops, attrs, edges, dtypes, cycles,
  // shapes), then adds its nodes as `prefix/name` ("" = unchanged), each input named in
  // `input_map` ("node:index" or "node" for :0) wired to that existing tensor instead, and
  // `control_inputs` added to every node without inputs. All or nothing: on an error no node
  // stays. Returns the new nodes' names, in topological order.
  std::vector<std::string> ImportGraphDef(
      const GraphDef& def, const std::string& prefix,
      const std::vector<std::pair<std::string, OutputRef>>& input_map,
      const std::vector<std::string>& control_inputs);

 private:
  // Note [Recovering after a build error]: OpBuilder removes a node that fails validation, so
  // the graph itself is consistent; only the Scope's sticky status is set. Recover() copies the
  // graph node by node into a fresh root Scope (same names, devices, attrs, edges) and
  // re-registers the variables, leaving the error behind.
  void Recover();

  Scope root_;
  int64_t generation_ = 0;
};

}  // namespace python
}  // namespace shardflow

#endif  // SHARDFLOW_PYTHON_BINDINGS_SRC_GRAPH_HANDLE_H_
