#include "core/graph/graph.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"

namespace shardflow {

void Node::SetAttr(const std::string& name, AttrValue value) {
  (*def_.mutable_attr())[name] = std::move(value);
  constant_.reset();
}

const Tensor* Node::constant_value() const {
  if (!IsConstant()) return nullptr;
  if (!constant_) {
    Tensor t;
    if (!GetAttr(def_.attr(), "value", &t).ok()) return nullptr;
    constant_ = std::make_unique<Tensor>(std::move(t));
  }
  return constant_.get();
}

Graph::Graph(const OpRegistry* registry) : registry_(registry) {}
Graph::~Graph() = default;

absl::StatusOr<Node*> Graph::AddNode(NodeDef def) {
  if (def.name().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a node of op '", def.op(), "' has an empty name; every node needs a name"));
  }
  if (def.name().find_first_of(":^") != std::string::npos) {
    // "x:1" names output 1 of x and "^x" a control input: such a node could never be named.
    return absl::InvalidArgumentError(absl::StrCat(
        "node name '", def.name(), "' (op '", def.op(),
        "') contains ':' or '^', which tensor and control-input references use; rename it"));
  }
  if (by_name_.contains(def.name())) {
    return absl::InvalidArgumentError(
        absl::StrCat("node name '", def.name(), "' is used twice; node names must be unique"));
  }
  auto op = registry_->Find(def.op());
  if (!op.ok()) return WithContext(op.status(), NodeErrorPrefix(def));
  SF_RETURN_IF_ERROR(AddDefaultsAndValidate(**op, &def));
  auto node = std::make_unique<Node>();
  node->op_def_ = *op;
  SF_RETURN_IF_ERROR(ComputeArgTypes(**op, def, &node->input_types_, &node->output_types_));
  def.clear_input();
  node->def_ = std::move(def);
  node->id_ = static_cast<int>(nodes_.size());
  node->input_edges_.assign(node->input_types_.size(), nullptr);
  node->output_shapes_.assign(node->output_types_.size(), TensorShape::Unknown());
  Node* raw = node.get();
  by_name_[raw->name()] = raw;
  nodes_.push_back(std::move(node));
  ++num_nodes_;
  return raw;
}

absl::StatusOr<const Edge*> Graph::AddEdge(Node* src, int src_output, Node* dst, int dst_input) {
  std::string prefix = NodeErrorPrefix(dst->def());
  if (src_output < 0 || src_output >= src->num_outputs()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "input ", dst_input, " refers to output ", src_output, " of '", src->name(), "' (",
        src->op(), "), which has ", src->num_outputs(), " output(s)"));
  }
  if (dst_input < 0 || dst_input >= dst->num_inputs()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "has ", dst->num_inputs(),
                                                   " input(s); cannot connect input ", dst_input,
                                                   "; signature: ", dst->op_def().Signature()));
  }
  if (dst->input_edges_[dst_input] != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "input ", dst_input, " is connected twice"));
  }
  if (src->output_type(src_output) != dst->input_type(dst_input)) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "input ", dst_input, " expects ", DataTypeString(dst->input_type(dst_input)),
        " but '", TensorRefString(src->name(), src_output), "' is ",
        DataTypeString(src->output_type(src_output)), "; insert a Cast"));
  }
  auto edge = std::make_unique<Edge>();
  edge->id = static_cast<int>(edges_.size());
  edge->src = src;
  edge->src_output = src_output;
  edge->dst = dst;
  edge->dst_input = dst_input;
  const Edge* e = edge.get();
  edges_.push_back(std::move(edge));
  src->out_edges_.push_back(e);
  dst->in_edges_.push_back(e);
  dst->input_edges_[dst_input] = e;
  return e;
}

const Edge* Graph::AddControlEdge(Node* src, Node* dst) {
  for (const Edge* e : dst->in_edges_) {
    if (e->IsControl() && e->src == src) return e;
  }
  auto edge = std::make_unique<Edge>();
  edge->id = static_cast<int>(edges_.size());
  edge->src = src;
  edge->src_output = Edge::kControlSlot;
  edge->dst = dst;
  edge->dst_input = Edge::kControlSlot;
  const Edge* e = edge.get();
  edges_.push_back(std::move(edge));
  src->out_edges_.push_back(e);
  dst->in_edges_.push_back(e);
  return e;
}

void Graph::RemoveEdge(const Edge* edge) {
  auto erase = [edge](std::vector<const Edge*>* v) {
    v->erase(std::remove(v->begin(), v->end(), edge), v->end());
  };
  erase(&edge->src->out_edges_);
  erase(&edge->dst->in_edges_);
  if (!edge->IsControl()) edge->dst->input_edges_[edge->dst_input] = nullptr;
  edges_[edge->id].reset();
}

void Graph::RemoveNode(Node* node) {
  std::vector<const Edge*> edges = node->in_edges_;
  edges.insert(edges.end(), node->out_edges_.begin(), node->out_edges_.end());
  for (const Edge* e : edges) RemoveEdge(e);
  by_name_.erase(node->name());
  --num_nodes_;
  nodes_[node->id()].reset();
}

Node* Graph::FindNode(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(num_nodes_);
  for (const auto& n : nodes_) {
    if (n) out.push_back(n.get());
  }
  return out;
}

std::string Graph::UniqueName(const std::string& base) const {
  if (!by_name_.contains(base)) return base;
  int& next = next_suffix_[base];
  for (int i = std::max(next, 1);; ++i) {
    std::string candidate = absl::StrCat(base, "_", i);
    if (!by_name_.contains(candidate)) {
      next = i + 1;
      return candidate;
    }
  }
}

namespace {

// Note [Partial shape values]. TF1 programs build shapes from tf.shape(x) and numbers:
// tf.reshape(x, [tf.shape(x)[0], tf.shape(x)[1], heads, depth]) is, in the graph, a Concat of
// ExpandDims of Squeeze(Slice(Shape(x))) and of constants. Such a shape is not a constant, but
// parts of it are known before the step runs (the constants, and the dims of x the graph knows),
// and the ops after the Reshape need them (a dense layer needs the last dimension). As TF's
// shape inference does, the entries of an int32/int64 vector are followed through Const, Shape,
// Slice with constant bounds, Squeeze and ExpandDims (between a scalar and a 1-vector), Cast,
// Identity and Concat on axis 0; anything else is unknown (-1). Shape functions see the result
// through InferenceContext::ConstantInputAsShape. The depth bound and the budget of nodes
// visited per input keep a long chain, or a hostile graph of wide nested Concats, cheap.
constexpr int kMaxPartialDepth = 8;
constexpr int kPartialBudget = 512;

bool ConstantInts(const Node* n, std::vector<int64_t>* out) {
  const Tensor* t = n == nullptr ? nullptr : n->constant_value();
  if (t == nullptr || t->dims() > 1 || (t->dtype() != DT_INT32 && t->dtype() != DT_INT64)) {
    return false;
  }
  out->clear();
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    out->push_back(t->dtype() == DT_INT32 ? t->data<int32_t>()[i] : t->data<int64_t>()[i]);
  }
  return true;
}

std::optional<std::vector<int64_t>> PartialValue(const Node* n, int output, int depth,
                                                 int* budget) {
  std::vector<int64_t> values;
  if (n == nullptr || depth > kMaxPartialDepth || --*budget < 0) return std::nullopt;
  if (ConstantInts(n, &values)) return values;
  auto input = [&](int i) -> const Node* {
    const Edge* e = i < n->num_inputs() ? n->input_edge(i) : nullptr;
    return e == nullptr ? nullptr : e->src;
  };
  auto input_value = [&](int i) -> std::optional<std::vector<int64_t>> {
    const Edge* e = i < n->num_inputs() ? n->input_edge(i) : nullptr;
    if (e == nullptr) return std::nullopt;
    return PartialValue(e->src, e->src_output, depth + 1, budget);
  };
  const std::string& op = n->op();
  if (op == "Shape" && output == 0) {
    const Edge* e = n->input_edge(0);
    if (e == nullptr) return std::nullopt;
    const TensorShape& s = e->src->output_shape(e->src_output);
    if (s.unknown_rank()) return std::nullopt;
    for (int d = 0; d < s.rank(); ++d) values.push_back(s.dim(d));
    return values;
  }
  if (op == "Cast" || op == "Identity") return input_value(0);
  if (op == "Squeeze" || op == "ExpandDims") {  // between a scalar and a 1-vector only
    auto v = input_value(0);
    if (!v || v->size() != 1) return std::nullopt;
    return v;
  }
  if (op == "Slice") {
    auto whole = input_value(0);
    std::vector<int64_t> begin, size;
    if (!whole || !ConstantInts(input(1), &begin) || !ConstantInts(input(2), &size) ||
        begin.size() != 1 || size.size() != 1) {
      return std::nullopt;
    }
    const int64_t len = static_cast<int64_t>(whole->size());
    const int64_t b = begin[0], count = size[0] == -1 ? len - b : size[0];
    if (b < 0 || count < 0 || b > len || count > len - b) return std::nullopt;
    return std::vector<int64_t>(whole->begin() + b, whole->begin() + b + count);
  }
  if (op == "Concat" || op == "ConcatV2") {  // of scalars and vectors, on axis 0
    std::vector<int64_t> axis;
    if (!ConstantInts(input(n->num_inputs() - 1), &axis) || axis.size() != 1 ||
        (axis[0] != 0 && axis[0] != -1)) {
      return std::nullopt;
    }
    for (int i = 0; i + 1 < n->num_inputs(); ++i) {
      const Edge* e = n->input_edge(i);
      if (e == nullptr) return std::nullopt;
      const TensorShape& s = e->src->output_shape(e->src_output);
      // Longer than any shape can be: not a shape (and a hostile length allocates nothing).
      if (s.rank() != 1 || s.dim(0) < 0 ||
          s.dim(0) > TensorShape::kMaxRank - static_cast<int64_t>(values.size())) {
        return std::nullopt;
      }
      auto part = input_value(i);
      if (part && static_cast<int64_t>(part->size()) != s.dim(0)) return std::nullopt;
      if (part) {
        values.insert(values.end(), part->begin(), part->end());
      } else {
        values.insert(values.end(), s.dim(0), -1);  // entries not known, but their count is
      }
    }
    return values;
  }
  return std::nullopt;
}

}  // namespace

absl::Status Graph::InferShapes(Node* node) {
  std::vector<TensorShape> shapes;
  std::vector<const Tensor*> constants;
  for (int i = 0; i < node->num_inputs(); ++i) {
    const Edge* e = node->input_edges_[i];
    if (e == nullptr) {
      shapes.push_back(TensorShape::Unknown());
      constants.push_back(nullptr);
      continue;
    }
    shapes.push_back(e->src->output_shape(e->src_output));
    constants.push_back(e->src->constant_value());
  }
  if (!node->op_def_->shape_fn) return absl::OkStatus();
  InferenceContext ctx(node->def_, node->input_types_, node->output_types_, std::move(shapes),
                       std::move(constants));
  for (int i = 0; i < node->num_inputs(); ++i) {
    const Edge* e = node->input_edges_[i];
    const DataType t = node->input_types_[i];
    if (e == nullptr || e->src->IsConstant() || (t != DT_INT32 && t != DT_INT64)) continue;
    const TensorShape& in = ctx.input(i);
    if (!in.unknown_rank() && in.rank() > 1) continue;
    int budget = kPartialBudget;
    if (auto partial = PartialValue(e->src, e->src_output, 0, &budget)) {
      ctx.set_input_partial_value(i, *std::move(partial));
    }
  }
  absl::Status s = node->op_def_->shape_fn(&ctx);
  if (!s.ok()) {
    std::vector<std::string> ins;
    for (int i = 0; i < node->num_inputs(); ++i) ins.push_back(ctx.input(i).DebugString());
    return absl::Status(s.code(), absl::StrCat(NodeErrorPrefix(node->def_), s.message(),
                                               " (input shapes: ", absl::StrJoin(ins, ", "), ")"));
  }
  node->output_shapes_ = ctx.TakeOutputs();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Node*>> Graph::TopologicalOrder() const {
  std::vector<int> pending(nodes_.size(), 0);
  std::deque<Node*> ready;
  for (const auto& n : nodes_) {
    if (!n) continue;
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (n->input_edges_[i] == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeErrorPrefix(n->def_), "input ", i,
                         " is not connected; signature: ", n->op_def().Signature()));
      }
    }
    pending[n->id()] = static_cast<int>(n->in_edges_.size());
    if (pending[n->id()] == 0) ready.push_back(n.get());
  }
  std::vector<Node*> order;
  order.reserve(num_nodes_);
  while (!ready.empty()) {
    Node* n = ready.front();
    ready.pop_front();
    order.push_back(n);
    for (const Edge* e : n->out_edges_) {
      if (--pending[e->dst->id()] == 0) ready.push_back(e->dst);
    }
  }
  if (static_cast<int>(order.size()) != num_nodes_) {
    std::vector<std::string> cycle;
    for (const auto& n : nodes_) {
      if (n && pending[n->id()] > 0 && cycle.size() < 8) cycle.push_back(n->name());
    }
    return absl::InvalidArgumentError(
        absl::StrCat("graph has a cycle through nodes {", absl::StrJoin(cycle, ", "),
                     cycle.size() == 8 ? ", ..." : "", "}; a dataflow graph must be acyclic"));
  }
  return order;
}

void Graph::ToGraphDef(GraphDef* out) const {
  out->Clear();
  out->set_version(1);
  auto order = TopologicalOrder();
  std::vector<Node*> nodes = order.ok() ? *order : this->nodes();
  for (Node* n : nodes) {
    NodeDef* def = out->add_node();
    *def = n->def_;
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Edge* e = n->input_edges_[i];
      def->add_input(e ? TensorRefString(e->src->name(), e->src_output) : std::string("?"));
    }
    for (const Edge* e : n->in_edges_) {
      if (e->IsControl()) def->add_input(absl::StrCat("^", e->src->name()));
    }
  }
}

absl::StatusOr<TensorRef> ParseTensorRef(absl::string_view ref) {
  TensorRef r;
  if (!ref.empty() && ref[0] == '^') {
    r.node = std::string(ref.substr(1));
    r.index = Edge::kControlSlot;
  } else {
    size_t colon = ref.rfind(':');
    if (colon == absl::string_view::npos) {
      r.node = std::string(ref);
    } else {
      r.node = std::string(ref.substr(0, colon));
      if (!absl::SimpleAtoi(ref.substr(colon + 1), &r.index) || r.index < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "malformed tensor reference '", ref, "'; expected 'node', 'node:index' or '^node'"));
      }
    }
  }
  if (r.node.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed tensor reference '", ref, "': empty node name"));
  }
  return r;
}

std::string TensorRefString(const std::string& node, int index) {
  return absl::StrCat(node, ":", index);
}

absl::StatusOr<std::unique_ptr<Graph>> Graph::FromGraphDef(const GraphDef& def,
                                                           const OpRegistry* registry) {
  auto g = std::make_unique<Graph>(registry);
  for (const NodeDef& nd : def.node()) {
    SF_RETURN_IF_ERROR(g->AddNode(nd).status());
  }
  for (const NodeDef& nd : def.node()) {
    Node* dst = g->FindNode(nd.name());
    std::string prefix = NodeErrorPrefix(nd);
    int data_index = 0;
    bool seen_control = false;
    for (const std::string& in : nd.input()) {
      auto ref = ParseTensorRef(in);
      if (!ref.ok()) return WithContext(ref.status(), prefix);
      Node* src = g->FindNode(ref->node);
      if (src == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(prefix, "input '", in, "' refers to node '",
                                                       ref->node, "', which is not in the graph"));
      }
      if (ref->index == Edge::kControlSlot) {
        seen_control = true;
        g->AddControlEdge(src, dst);
        continue;
      }
      if (seen_control) {
        return absl::InvalidArgumentError(absl::StrCat(
            prefix, "data input '", in, "' comes after a control input; list '^' inputs last"));
      }
      if (data_index >= dst->num_inputs()) {
        return absl::InvalidArgumentError(
            absl::StrCat(prefix, "has ", nd.input_size(), " inputs listed but takes ",
                         dst->num_inputs(), "; signature: ", dst->op_def().Signature()));
      }
      SF_RETURN_IF_ERROR(g->AddEdge(src, ref->index, dst, data_index).status());
      ++data_index;
    }
    if (data_index != dst->num_inputs()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "has ", data_index,
                                                     " data input(s) but takes ", dst->num_inputs(),
                                                     "; signature: ", dst->op_def().Signature()));
    }
  }
  SF_ASSIGN_OR_RETURN(std::vector<Node*> order, g->TopologicalOrder());
  for (Node* n : order) SF_RETURN_IF_ERROR(g->InferShapes(n));
  return g;
}

}  // namespace shardflow
