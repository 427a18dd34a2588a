#include "python_bindings/src/graph_handle.h"

#include "absl/strings/str_cat.h"
#include "core/graph/graph.h"

namespace shardflow {
namespace python {

Node* GraphHandle::FindNode(const std::string& name) const {
  Node* n = graph()->FindNode(name);
  if (n == nullptr) {
    throw StatusError(absl::NotFoundError(absl::StrCat("no node named '", name, "' in the graph")));
  }
  return n;
}

Output GraphHandle::ResolveOutput(const OutputRef& ref) const {
  Node* n = FindNode(ref.node);
  if (ref.index < 0 || ref.index >= n->num_outputs()) {
    throw StatusError(
        absl::OutOfRangeError(absl::StrCat("node '", ref.node, "' has ", n->num_outputs(),
                                           " output(s); there is no output ", ref.index)));
  }
  return Output(n, ref.index);
}

OutputRef GraphHandle::MakeRef(const Output& output) const {
  OutputRef r;
  r.node = output.node()->name();
  r.index = output.index();
  r.dtype = output.dtype();
  TensorShape shape = output.shape();
  r.unknown_rank = shape.unknown_rank();
  if (!r.unknown_rank) r.dims.assign(shape.dims().begin(), shape.dims().end());
  return r;
}

Scope GraphHandle::ScopeFor(const BuildContext& ctx) const {
  Scope s = root_;
  if (!ctx.name_scope.empty()) s = s.NewSubScope(ctx.name_scope);
  if (!ctx.device.empty()) s = s.WithDevice(ctx.device);
  if (!ctx.control_inputs.empty()) {
    std::vector<Operation> deps;
    for (const std::string& name : ctx.control_inputs) deps.emplace_back(FindNode(name));
    s = s.WithControlDependencies(deps);
  }
  if (!ctx.name.empty()) s = s.WithOpName(ctx.name);
  return s;
}

void GraphHandle::FailBuild(const absl::Status& status) {
  ++generation_;
  if (!root_.ok()) Recover();
  if (!status.ok()) throw StatusError(status);
}

Var GraphHandle::FindVariable(const std::string& handle_name) const {
  for (const VariableInfo& info : root_.variables()) {
    if (info.handle != nullptr && info.handle->name() == handle_name) return Var(info);
  }
  throw StatusError(
      absl::NotFoundError(absl::StrCat("no variable with handle '", handle_name, "'")));
}

void GraphHandle::Recover() {
  GraphDef def;
  graph()->ToGraphDef(&def);
  Scope fresh = Scope::NewRootScope();
  Graph* g = fresh.graph();
  for (const NodeDef& nd : def.node()) {
    NodeDef copy = nd;
    copy.clear_input();
    auto added = g->AddNode(copy);
    if (!added.ok()) {
      throw StatusError(
          absl::InternalError(absl::StrCat("rebuilding the graph after an error failed at '",
                                           nd.name(), "': ", added.status().message())));
    }
    Node* n = *added;
    int slot = 0;
    for (const std::string& input : nd.input()) {
      auto ref = ParseTensorRef(input);
      Node* src = ref.ok() ? g->FindNode(ref->node) : nullptr;
      if (src == nullptr) continue;
      if (ref->index == Edge::kControlSlot) {
        g->AddControlEdge(src, n);
      } else {
        auto e = g->AddEdge(src, ref->index, n, slot++);
        if (!e.ok()) throw StatusError(absl::InternalError(e.status().message()));
      }
    }
    absl::Status s = g->InferShapes(n);
    if (!s.ok()) throw StatusError(absl::InternalError(s.message()));
  }
  for (const VariableInfo& v : root_.variables()) {
    VariableInfo info;
    info.handle = v.handle ? g->FindNode(v.handle->name()) : nullptr;
    info.read = v.read ? g->FindNode(v.read->name()) : nullptr;
    info.initializer = v.initializer ? g->FindNode(v.initializer->name()) : nullptr;
    info.trainable = v.trainable;
    if (info.handle != nullptr) fresh.AddVariable(info);
  }
  root_ = fresh;
  ++generation_;
}

}  // namespace python
}  // namespace shardflow
