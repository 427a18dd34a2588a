#include "python_bindings/src/graph_handle.h"

#include <map>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/graph/graph.h"
#include "partitioner/placer.h"

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
  for (const std::string& name : ctx.colocate_with) s = s.ColocateWith(Operation(FindNode(name)));
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

std::vector<std::string> GraphHandle::ImportGraphDef(
    const GraphDef& def, const std::string& prefix,
    const std::vector<std::pair<std::string, OutputRef>>& input_map,
    const std::vector<std::string>& control_inputs) {
  ThrowIfError(root_.status());
  // Whole-graph validation first, so that what is added below only fails on name clashes and
  // on mapped inputs of the wrong dtype.
  absl::StatusOr<std::unique_ptr<Graph>> alone = Graph::FromGraphDef(def, graph()->registry());
  if (!alone.ok()) {
    throw StatusError(absl::InvalidArgumentError(
        absl::StrCat("import_graph_def: the GraphDef is not valid: ", alone.status().message())));
  }
  SF_PY_ASSIGN_OR_THROW(std::vector<Node*> order, (*alone)->TopologicalOrder());
  std::map<std::pair<std::string, int>, Output> mapped;
  std::set<std::pair<std::string, int>> unused;
  for (const auto& [key, ref] : input_map) {
    absl::StatusOr<TensorRef> k = ParseTensorRef(key);
    if (!k.ok() || k->index == Edge::kControlSlot) {
      throw StatusError(absl::InvalidArgumentError(absl::StrCat(
          "import_graph_def: input_map key '", key, "' is not a tensor name ('node:0')")));
    }
    mapped[{k->node, k->index}] = ResolveOutput(ref);
    unused.insert({k->node, k->index});
  }
  std::vector<Node*> deps;
  for (const std::string& name : control_inputs) deps.push_back(FindNode(name));
  auto renamed = [&](const std::string& name) {
    return prefix.empty() ? name : absl::StrCat(prefix, "/", name);
  };

  Graph* g = graph();
  std::vector<Node*> added;
  auto fail = [&](const absl::Status& s) {
    for (auto it = added.rbegin(); it != added.rend(); ++it) g->RemoveNode(*it);
    ++generation_;
    throw StatusError(absl::InvalidArgumentError(absl::StrCat("import_graph_def: ", s.message())));
  };
  for (Node* source : order) {
    NodeDef nd = source->def();
    const std::string name = renamed(nd.name());
    if (g->FindNode(name) != nullptr) {
      fail(absl::AlreadyExistsError(absl::StrCat("the graph already has a node named '", name,
                                                 "'; pass name='...' for a prefix")));
    }
    nd.set_name(name);
    nd.clear_input();
    // Colocation requests name nodes of the GraphDef: they move under the prefix with them (a
    // TF GraphDef's save/Assign nodes carry _class = ["loc:@w"]).
    auto classes = nd.mutable_attr()->find(kColocationAttr);
    if (classes != nd.mutable_attr()->end()) {
      for (std::string& entry : *classes->second.mutable_list()->mutable_s()) {
        if (!absl::StartsWith(entry, kColocationPrefix)) continue;
        std::string target = entry.substr(std::string(kColocationPrefix).size());
        if ((*alone)->FindNode(target) == nullptr) {
          fail(absl::InvalidArgumentError(absl::StrCat(
              "node '", source->name(), "' asks to be colocated with '", target,
              "', which is not in the GraphDef; fix or remove its ", kColocationAttr, " attr")));
        }
        entry = absl::StrCat(kColocationPrefix, renamed(target));
      }
    }
    absl::StatusOr<Node*> n = g->AddNode(nd);
    if (!n.ok()) fail(n.status());
    added.push_back(*n);
    bool has_inputs = false;
    for (const Edge* e : source->in_edges()) {
      has_inputs = true;
      Node* src = g->FindNode(renamed(e->src->name()));
      if (e->IsControl()) {
        g->AddControlEdge(src, *n);
        continue;
      }
      Output from(src, e->src_output);
      auto m = mapped.find({e->src->name(), e->src_output});
      if (m != mapped.end()) {
        from = m->second;
        unused.erase(m->first);
      }
      absl::StatusOr<const Edge*> edge = g->AddEdge(from.node(), from.index(), *n, e->dst_input);
      if (!edge.ok()) fail(edge.status());
    }
    if (!has_inputs) {
      for (Node* d : deps) g->AddControlEdge(d, *n);
    }
    absl::Status s = g->InferShapes(*n);
    if (!s.ok()) fail(s);
  }
  if (!unused.empty()) {
    fail(absl::InvalidArgumentError(absl::StrCat("input_map names '", unused.begin()->first, ":",
                                                 unused.begin()->second,
                                                 "', which no node of the GraphDef reads")));
  }
  ++generation_;
  std::vector<std::string> names;
  for (Node* n : added) names.push_back(n->name());
  return names;
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
