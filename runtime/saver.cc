#include "runtime/saver.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/node_def_util.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

// Note [Saver nodes]
// For each variable, whose VarHandleOp node is `h`, under the fresh scope `save`:
//   save/h/read    ReadVariableOp(h)              fetched by Save
//   save/h/value   Placeholder(dtype, shape)      fed by Restore
//   save/h/assign  AssignVariableOp(h, value)
// and save/restore_all, a NoOp with a control input from every assign: Restore's target.
// The nodes name no device: the placer puts every user of a variable handle with the variable
// (partitioner/placer.cc), so reads and assigns run where the variable lives.

constexpr char kReadVariableOp[] = "ReadVariableOp";
constexpr char kAssignVariableOp[] = "AssignVariableOp";

NodeDef MakeNode(const std::string& name, const std::string& op) {
  NodeDef node;
  node.set_name(name);
  node.set_op(op);
  return node;
}

// "save", or "save_1", "save_2", ... when a node is named so or lives under that scope.
std::string FreshScope(const GraphDef& graph) {
  absl::flat_hash_set<std::string> taken;
  for (const NodeDef& node : graph.node()) {
    const std::string& name = node.name();
    taken.insert(name.substr(0, name.find('/')));
  }
  std::string scope = "save";
  for (int i = 1; taken.contains(scope); ++i) scope = absl::StrCat("save_", i);
  return scope;
}

}  // namespace

absl::StatusOr<Saver> Saver::Build(const GraphDef& graph, GraphDef* added) {
  Saver saver;
  const std::string scope = FreshScope(graph);
  absl::flat_hash_map<std::string, size_t> by_name;  // shared name -> index in variables_
  NodeDef restore = MakeNode(absl::StrCat(scope, "/restore_all"), kNoOp);
  for (const NodeDef& node : graph.node()) {
    if (node.op() != kVarHandleOp) continue;
    VariableSpec spec;
    SF_RETURN_IF_ERROR(
        WithContext(GetAttr(node.attr(), "dtype", &spec.dtype), NodeErrorPrefix(node)));
    SF_RETURN_IF_ERROR(
        WithContext(GetAttr(node.attr(), "shape", &spec.shape), NodeErrorPrefix(node)));
    std::string shared_name;
    if (node.attr().contains("shared_name")) {
      SF_RETURN_IF_ERROR(
          WithContext(GetAttr(node.attr(), "shared_name", &shared_name), NodeErrorPrefix(node)));
    }
    spec.name = shared_name.empty() ? node.name() : shared_name;
    if (auto it = by_name.find(spec.name); it != by_name.end()) {
      const VariableSpec& first = saver.variables_[it->second];
      if (first.dtype != spec.dtype || first.shape != spec.shape) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeErrorPrefix(node), "variable '", spec.name, "' is declared as ",
                         DataTypeString(spec.dtype), " ", spec.shape.DebugString(), " here but as ",
                         DataTypeString(first.dtype), " ", first.shape.DebugString(),
                         " by another VarHandleOp of the same shared name"));
      }
      continue;  // another handle to a variable already saved
    }
    const std::string prefix = absl::StrCat(scope, "/", node.name());
    NodeDef read = MakeNode(prefix + "/read", kReadVariableOp);
    read.add_input(node.name());
    read.mutable_attr()->insert({"dtype", MakeAttr(spec.dtype)});
    NodeDef value = MakeNode(prefix + "/value", kPlaceholderOp);
    value.mutable_attr()->insert({"dtype", MakeAttr(spec.dtype)});
    value.mutable_attr()->insert({"shape", MakeAttr(spec.shape)});
    NodeDef assign = MakeNode(prefix + "/assign", kAssignVariableOp);
    assign.add_input(node.name());
    assign.add_input(value.name());
    assign.mutable_attr()->insert({"dtype", MakeAttr(spec.dtype)});
    restore.add_input(absl::StrCat("^", assign.name()));

    by_name[spec.name] = saver.variables_.size();
    saver.variables_.push_back(std::move(spec));
    saver.reads_.push_back(read.name());
    saver.values_.push_back(value.name());
    *added->add_node() = std::move(read);
    *added->add_node() = std::move(value);
    *added->add_node() = std::move(assign);
  }
  saver.restore_op_ = restore.name();
  *added->add_node() = std::move(restore);
  return saver;
}

absl::StatusOr<Saver> Saver::AddToGraph(GraphDef* graph) {
  GraphDef added;
  SF_ASSIGN_OR_RETURN(Saver saver, Build(*graph, &added));
  for (NodeDef& node : *added.mutable_node()) *graph->add_node() = std::move(node);
  return saver;
}

absl::StatusOr<Saver> Saver::AddToSession(Session* session, const GraphDef& graph) {
  GraphDef added;
  SF_ASSIGN_OR_RETURN(Saver saver, Build(graph, &added));
  SF_RETURN_IF_ERROR(WithContext(session->Extend(added), "adding the saver's nodes: "));
  return saver;
}

absl::Status Saver::Save(Session* session, const std::string& path,
                         const NamedTensors& extra) const {
  NamedTensors tensors;
  for (const auto& [name, t] : extra) {
    if (name.rfind("_meta/", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("extra checkpoint entry '", name, "' must be named _meta/..."));
    }
  }
  std::vector<Tensor> values;
  if (!reads_.empty()) SF_RETURN_IF_ERROR(session->Run({}, reads_, {}, &values));
  for (size_t i = 0; i < variables_.size(); ++i)
    tensors.push_back({variables_[i].name, std::move(values[i])});
  tensors.insert(tensors.end(), extra.begin(), extra.end());
  return SaveCheckpoint(path, tensors);
}

absl::StatusOr<NamedTensors> Saver::Restore(Session* session, const std::string& path) const {
  SF_ASSIGN_OR_RETURN(NamedTensors loaded, LoadCheckpoint(path));
  return Restore(session, loaded, path);
}

absl::StatusOr<NamedTensors> Saver::Restore(Session* session, const NamedTensors& loaded,
                                            const std::string& source) const {
  NamedTensors vars, meta;
  for (const auto& entry : loaded)
    (entry.first.rfind("_meta/", 0) == 0 ? meta : vars).push_back(entry);
  SF_RETURN_IF_ERROR(
      WithContext(CheckCompatible(vars, variables_),
                  absl::StrCat("checkpoint '", source, "' does not fit this graph: ")));
  absl::flat_hash_map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : vars) by_name[name] = &t;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < variables_.size(); ++i)
    feeds.push_back({values_[i], *by_name.at(variables_[i].name)});
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run(feeds, {}, {restore_op_}, &out));
  return meta;
}

}  // namespace shardflow
