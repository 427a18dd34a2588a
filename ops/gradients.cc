#include "ops/gradients.h"

#include <deque>
#include <map>

#include "absl/strings/str_cat.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"
#include "ops/ops.h"

namespace shardflow {

GradientRegistry* GradientRegistry::Global() {
  static GradientRegistry* registry = new GradientRegistry();
  return registry;
}

void GradientRegistry::Register(const std::string& op, GradFunc fn) {
  absl::MutexLock lock(&mu_);
  fns_[op] = std::move(fn);
}
void GradientRegistry::RegisterNoGradient(const std::string& op) {
  absl::MutexLock lock(&mu_);
  none_[op] = true;
}

const GradFunc* GradientRegistry::Lookup(const std::string& op, bool* no_gradient) const {
  absl::MutexLock lock(&mu_);
  *no_gradient = none_.count(op) > 0;
  auto it = fns_.find(op);
  return it == fns_.end() ? nullptr : &it->second;
}

Output GradInput(const Operation& op, int i) {
  const Edge* e = op.node()->input_edge(i);
  return e == nullptr ? Output() : Output(e->src, e->src_output);
}

Output ReduceLike(const Scope& scope, const Output& grad, const Output& like) {
  const TensorShape& gs = grad.shape();
  const TensorShape& ls = like.shape();
  if (gs == ls && gs.IsFullyDefined()) return grad;
  if (ls.IsFullyDefined() && !gs.unknown_rank() && gs.rank() >= ls.rank()) {
    // Leading dims broadcasting added, and dims where `like` has size 1.
    std::vector<int32_t> axes;
    int offset = gs.rank() - ls.rank();
    for (int d = 0; d < gs.rank(); ++d) {
      if (d < offset || (ls.dim(d - offset) == 1 && gs.dim(d) != 1)) axes.push_back(d);
    }
    if (axes.empty()) {
      bool same = true;
      for (int d = 0; d < ls.rank(); ++d) same &= gs.dim(d) == ls.dim(d);
      if (same) return grad;
    }
    Output summed = axes.empty() ? grad : ops::Sum(scope, grad, Tensor::FromVector(axes));
    std::vector<int32_t> dims(ls.dims().begin(), ls.dims().end());
    return ops::Reshape(scope, summed, Tensor::FromVector(dims));
  }
  return Output(
      OpBuilder(scope, "SumToShape").Input(grad).Input(ops::Shape(scope, like)).Finalize().node(),
      0);
}

namespace {

using TensorKey = std::pair<int, int>;  // node id, output index

}  // namespace

absl::Status AddGradients(const Scope& scope, const std::vector<Output>& ys,
                          const std::vector<Output>& xs, std::vector<Output>* grads,
                          const std::vector<Output>& grad_ys, const std::vector<Output>& stop_at) {
  SF_RETURN_IF_ERROR(scope.status());
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AddGradients: ", ys.size(), " ys but ", grad_ys.size(), " grad_ys"));
  }
  for (const Output& o : ys) {
    if (!o.valid()) return absl::InvalidArgumentError("AddGradients: an Output in ys is invalid");
  }
  for (const Output& o : xs) {
    if (!o.valid()) return absl::InvalidArgumentError("AddGradients: an Output in xs is invalid");
  }
  Graph* g = scope.graph();
  SF_ASSIGN_OR_RETURN(std::vector<Node*> order, g->TopologicalOrder());
  const int n = g->num_node_ids();
  // Nodes on a data path from some x to some y.
  std::vector<bool> from_x(n, false), to_y(n, false);
  std::deque<Node*> queue;
  for (const Output& x : xs) {
    if (!from_x[x.node()->id()]) {
      from_x[x.node()->id()] = true;
      queue.push_back(x.node());
    }
  }
  while (!queue.empty()) {
    Node* node = queue.front();
    queue.pop_front();
    for (const Edge* e : node->out_edges()) {
      if (!e->IsControl() && !from_x[e->dst->id()]) {
        from_x[e->dst->id()] = true;
        queue.push_back(e->dst);
      }
    }
  }
  for (const Output& y : ys) {
    if (!to_y[y.node()->id()]) {
      to_y[y.node()->id()] = true;
      queue.push_back(y.node());
    }
  }
  while (!queue.empty()) {
    Node* node = queue.front();
    queue.pop_front();
    for (const Edge* e : node->in_edges()) {
      if (!e->IsControl() && !to_y[e->src->id()]) {
        to_y[e->src->id()] = true;
        queue.push_back(e->src);
      }
    }
  }
  std::vector<bool> stopped(n, false);
  for (const Output& o : stop_at) {
    if (!o.valid())
      return absl::InvalidArgumentError("AddGradients: an Output in stop_at is invalid");
    stopped[o.node()->id()] = true;
  }
  Scope gs = scope.NewSubScope("gradients").WithNoControlDependencies();
  std::map<TensorKey, std::vector<Output>> pending;
  for (size_t i = 0; i < ys.size(); ++i) {
    Output seed = grad_ys.empty() ? ops::OnesLike(gs, ys[i]) : grad_ys[i];
    pending[{ys[i].node()->id(), ys[i].index()}].push_back(seed);
  }
  std::map<TensorKey, Output> summed;
  auto sum_of = [&](const Scope& s, const std::vector<Output>& parts) {
    if (parts.size() == 1) return parts[0];
    std::vector<Input> inputs(parts.begin(), parts.end());
    return ops::AddN(s, inputs);
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    if (!from_x[node->id()] || !to_y[node->id()]) continue;
    Scope ns = gs.WithDevice(node->requested_device());
    std::vector<Output> dy(node->num_outputs());
    bool any = false;
    for (int i = 0; i < node->num_outputs(); ++i) {
      auto p = pending.find({node->id(), i});
      if (p != pending.end()) {
        dy[i] = sum_of(ns, p->second);
        summed[{node->id(), i}] = dy[i];
        any = true;
      }
    }
    if (!any) continue;
    bool no_gradient = false;
    // A node may name the gradient it takes instead of its op's (attr _gradient_op_type: TF's
    // gradient_override_map and custom_gradient in Python).
    std::string override_name;
    const bool overridden = node->attrs().count(kGradientOpTypeAttr) > 0 &&
                            GetAttr(node->attrs(), kGradientOpTypeAttr, &override_name).ok() &&
                            !override_name.empty();
    const GradFunc* fn =
        GradientRegistry::Global()->Lookup(overridden ? override_name : node->op(), &no_gradient);
    if (overridden && fn == nullptr && !no_gradient) {
      return absl::NotFoundError(absl::StrCat(
          "node '", node->name(), "' (", node->op(), ") takes the gradient registered as '",
          override_name, "' (its ", kGradientOpTypeAttr,
          " attr), and none is registered under that name (Python: @sf.RegisterGradient(\"",
          override_name, "\") before sf.gradients)"));
    }
    if (node->op() == kStopGradientOp || stopped[node->id()] || no_gradient ||
        node->num_inputs() == 0) {
      continue;
    }
    bool needs_inputs = false;
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Edge* e = node->input_edge(i);
      needs_inputs |= e != nullptr && from_x[e->src->id()];
    }
    if (!needs_inputs) continue;  // x itself: nothing upstream of it needs a gradient
    if (fn == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "no gradient is registered for op '", node->op(), "' (node '", node->name(),
          "'); cut the path with stop_gradient (Python sf.stop_gradient, C++ "
          "ops::StopGradient), or register a gradient for the op (C++ REGISTER_GRADIENT; "
          "docs/extending.md)"));
    }
    for (int i = 0; i < node->num_outputs(); ++i) {
      if (!dy[i].valid()) dy[i] = ops::ZerosLike(ns, Output(node, i));
    }
    std::vector<Output> dx;
    SF_RETURN_IF_ERROR(WithContext((*fn)(ns, Operation(node), dy, &dx),
                                   absl::StrCat("gradient of node '", node->name(), "': ")));
    SF_RETURN_IF_ERROR(ns.status());
    if (static_cast<int>(dx.size()) != node->num_inputs()) {
      return absl::InternalError(absl::StrCat("gradient function of ", node->op(), " returned ",
                                              dx.size(), " gradients for ", node->num_inputs(),
                                              " inputs"));
    }
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Edge* e = node->input_edge(i);
      if (dx[i].valid() && from_x[e->src->id()] && to_y[e->src->id()]) {
        pending[{e->src->id(), e->src_output}].push_back(dx[i]);
      }
    }
  }
  grads->clear();
  for (const Output& x : xs) {
    TensorKey key{x.node()->id(), x.index()};
    auto s = summed.find(key);
    if (s != summed.end()) {
      grads->push_back(s->second);
      continue;
    }
    auto p = pending.find(key);
    grads->push_back(p == pending.end() ? Output() : sum_of(gs, p->second));
  }
  return scope.status();
}

}  // namespace shardflow
