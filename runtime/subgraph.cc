#include "runtime/subgraph.h"

#include <deque>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/attr_value.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

absl::StatusOr<std::pair<Node*, int>> ResolveTensor(Graph* graph, const std::string& name,
                                                    const char* role) {
  SF_ASSIGN_OR_RETURN(TensorRef ref, ParseTensorRef(name));
  if (ref.index == Edge::kControlSlot) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " '", name, "' must name a tensor, not a control input"));
  }
  Node* node = graph->FindNode(ref.node);
  if (node == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(role, " '", name, "': no node named '", ref.node, "' in the graph"));
  }
  if (ref.index >= node->num_outputs()) {
    return absl::InvalidArgumentError(absl::StrCat(role, " '", name, "': node '", ref.node, "' (",
                                                   node->op(), ") has ", node->num_outputs(),
                                                   " output(s)"));
  }
  return std::make_pair(node, ref.index);
}

absl::StatusOr<Node*> AddInternalNode(Graph* graph, const std::string& base, const std::string& op,
                                      DataType dtype, int index) {
  NodeDef def;
  def.set_name(graph->UniqueName(base));
  def.set_op(op);
  (*def.mutable_attr())["T"] = MakeAttr(dtype);
  (*def.mutable_attr())["index"] = MakeAttr(static_cast<int64_t>(index));
  return graph->AddNode(def);
}

}  // namespace

absl::Status RewriteForRun(Graph* graph, const std::vector<std::string>& feeds,
                           const std::vector<std::string>& fetches,
                           const std::vector<std::string>& targets, std::vector<FeedSpec>* specs) {
  specs->clear();
  std::vector<Node*> keep;
  absl::flat_hash_map<std::string, Node*> arg_for;  // "node:k" -> _Arg
  for (size_t i = 0; i < feeds.size(); ++i) {
    SF_ASSIGN_OR_RETURN(auto fed, ResolveTensor(graph, feeds[i], "feed"));
    auto [node, index] = fed;
    std::string key = TensorRefString(node->name(), index);
    if (arg_for.contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", key, "' is fed twice"));
    }
    FeedSpec spec;
    spec.name = feeds[i];
    spec.dtype = node->output_type(index);
    spec.shape = node->output_shape(index);
    specs->push_back(spec);
    SF_ASSIGN_OR_RETURN(
        Node * arg, AddInternalNode(graph, absl::StrCat("_arg_", node->name(), "_", index), "_Arg",
                                    spec.dtype, static_cast<int>(i)));
    arg->set_requested_device(node->requested_device());
    // The fed value is checked against spec.shape (CheckFeeds): the graph optimizer may rely on
    // what it knows of it.
    arg->SetAttr("shape", MakeAttr(spec.shape));
    SF_RETURN_IF_ERROR(graph->InferShapes(arg));
    std::vector<const Edge*> outs;
    for (const Edge* e : node->out_edges()) {
      if (!e->IsControl() && e->src_output == index) outs.push_back(e);
    }
    for (const Edge* e : outs) {
      Node* dst = e->dst;
      int slot = e->dst_input;
      graph->RemoveEdge(e);
      SF_RETURN_IF_ERROR(graph->AddEdge(arg, 0, dst, slot).status());
    }
    arg_for[key] = arg;
  }
  for (size_t i = 0; i < fetches.size(); ++i) {
    SF_ASSIGN_OR_RETURN(auto fetched, ResolveTensor(graph, fetches[i], "fetch"));
    auto [node, index] = fetched;
    auto it = arg_for.find(TensorRefString(node->name(), index));
    if (it != arg_for.end()) {
      node = it->second;
      index = 0;
    }
    SF_ASSIGN_OR_RETURN(Node * ret,
                        AddInternalNode(graph, absl::StrCat("_retval_", node->name(), "_", index),
                                        "_Retval", node->output_type(index), static_cast<int>(i)));
    ret->set_requested_device(node->requested_device());
    SF_RETURN_IF_ERROR(graph->AddEdge(node, index, ret, 0).status());
    keep.push_back(ret);
  }
  for (const std::string& t : targets) {
    std::string name = t;
    if (!name.empty() && name[0] == '^') name = name.substr(1);
    Node* node = graph->FindNode(name);
    if (node == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("target '", t, "': no node named '", name, "' in the graph"));
    }
    // A fed placeholder named as a target: what runs for it is its feed (it was reported as
    // "needed but not fed").
    auto fed = arg_for.find(TensorRefString(node->name(), 0));
    if (node->op() == kPlaceholderOp && fed != arg_for.end()) node = fed->second;
    keep.push_back(node);
  }
  // Prune: keep what the fetches and targets reach backwards.
  std::vector<bool> needed(graph->num_node_ids(), false);
  std::deque<Node*> queue(keep.begin(), keep.end());
  for (Node* n : keep) needed[n->id()] = true;
  while (!queue.empty()) {
    Node* n = queue.front();
    queue.pop_front();
    for (const Edge* e : n->in_edges()) {
      if (!needed[e->src->id()]) {
        needed[e->src->id()] = true;
        queue.push_back(e->src);
      }
    }
  }
  for (Node* n : graph->nodes()) {
    if (!needed[n->id()]) graph->RemoveNode(n);
  }
  for (Node* n : graph->nodes()) {
    if (n->op() == kPlaceholderOp) {
      DataType dtype;
      TensorShape shape;
      SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "dtype", &dtype));
      SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "shape", &shape));
      return absl::InvalidArgumentError(absl::StrCat(
          "placeholder '", n->name(), "' (", DataTypeString(dtype), ", shape ", shape.DebugString(),
          ") is needed by the fetches but not fed; add it to the feeds"));
    }
  }
  return absl::OkStatus();
}

void ApplyWholeGraphPlacement(Graph* graph, const std::map<std::string, std::string>& placement) {
  for (Node* n : graph->nodes()) {
    auto it = placement.find(n->name());
    if (it != placement.end()) n->set_assigned_device(it->second);
  }
  for (Node* n : graph->nodes()) {
    if (!n->assigned_device().empty()) continue;
    if (n->op() == kRetvalOp && n->num_inputs() > 0 && n->input_edge(0) != nullptr) {
      n->set_assigned_device(n->input_edge(0)->src->assigned_device());
    } else if (n->op() == kArgOp) {
      for (const Edge* e : n->out_edges()) {
        if (!e->dst->assigned_device().empty()) {
          n->set_assigned_device(e->dst->assigned_device());
          break;
        }
      }
    }
  }
}

absl::Status CheckClientGraph(const GraphDef& graph) {
  for (const NodeDef& node : graph.node()) {
    // The graph optimizer's fused ops (_FusedMatMul, _FusedConv2D) compute what a user could ask
    // for and may come in graphs other tools optimized; the other internal ops are the runtime's.
    const bool fused = node.op().rfind("_Fused", 0) == 0;
    if (!node.op().empty() && node.op()[0] == '_' && !fused) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name(), "' uses the internal op ", node.op(),
          ", which only the runtime may insert; feed a Placeholder instead of _Arg, fetch a "
          "tensor instead of _Retval, and let the partitioner add _Send/_Recv"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckFeeds(const std::vector<FeedSpec>& specs,
                        const std::vector<std::pair<std::string, Tensor>>& feeds) {
  for (size_t i = 0; i < feeds.size() && i < specs.size(); ++i) {
    const FeedSpec& spec = specs[i];
    const Tensor& t = feeds[i].second;
    if (t.IsInitialized() && t.dtype() == spec.dtype && t.shape().IsCompatibleWith(spec.shape)) {
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "feed '", spec.name, "': expected ", DataTypeString(spec.dtype), " of shape ",
        spec.shape.DebugString(), " but got ",
        t.IsInitialized()
            ? absl::StrCat(DataTypeString(t.dtype()), " of shape ", t.shape().DebugString())
            : std::string("an uninitialized tensor")));
  }
  return absl::OkStatus();
}

std::string RunSignature(const std::vector<std::string>& feeds,
                         const std::vector<std::string>& fetches,
                         const std::vector<std::string>& targets) {
  return absl::StrCat(absl::StrJoin(feeds, ","), "->", absl::StrJoin(fetches, ","), "//",
                      absl::StrJoin(targets, ","));
}

}  // namespace shardflow
