// While: TF1's tf.while_loop as one op whose cond and body are graph functions, and its gradient.
//
// Note [While as a function call]. TF1 builds loops from Enter/Merge/Switch/NextIteration/Exit
// nodes and gives the executor frames and iterations. shardflow keeps the executor's one-pass
// dataflow and makes the loop an op instead (as TF2's functional While does): its cond and body
// are GraphFunctions (core/protos/graph.proto) that the kernel (runtime/while_op.cc) calls
// through the FunctionLibrary of the step, once per iteration. Why this design:
//   - Placement and partitioning stay what they are: the body is placed and partitioned when it
//     is instantiated, so a body that spans devices gets its own _Send/_Recv pairs, and every
//     call has its own rendezvous, so one iteration's tensors can never meet another's.
//   - The profiler needs nothing new: the body's nodes are recorded under their own names
//     ("while/body/...") on their own devices, once per iteration, inside the While's span.
//   - Gradients need no stacks in the executor: with `Thistory` = `T` (back_prop=True) the loop
//     also returns each loop variable as it entered every iteration (a [n, ...] tensor), and
//     the gradient is a second While that runs the body's gradient backwards over that history,
//     reading row i with GatherV2. The body's forward ops are recomputed inside the backward
//     body (one extra forward per iteration) in exchange for keeping only the loop variables.
// What it gives up: iterations never overlap (TF1's parallel_iterations), and a loop variable
// must keep its shape (or declare `output_shapes`, TF1's shape_invariants) when it has history.
//
// A function's arguments are the loop variables followed by the captured tensors (the outer
// tensors cond and body use); cond returns one bool scalar, body the next loop variables.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/node_def_util.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

absl::Status WhileShape(InferenceContext* c) {
  std::vector<DataType> types, history;
  std::vector<TensorShape> shapes;
  SF_RETURN_IF_ERROR(c->GetAttr("T", &types));
  SF_RETURN_IF_ERROR(c->GetAttr("Thistory", &history));
  SF_RETURN_IF_ERROR(c->GetAttr("output_shapes", &shapes));
  const size_t n = types.size();
  if (!shapes.empty() && shapes.size() != n) {
    return c->InvalidArgument(
        absl::StrCat("output_shapes has ", shapes.size(), " entries for ", n, " loop variables"));
  }
  if (!history.empty() && history != types) {
    return c->InvalidArgument("Thistory must be empty or equal to T");
  }
  for (size_t i = 0; i < n; ++i) {
    TensorShape out = shapes.empty() ? c->input(static_cast<int>(i)) : shapes[i];
    c->set_output(static_cast<int>(i), out);
    if (history.empty()) continue;
    TensorShape h = TensorShape::Unknown();
    if (!out.unknown_rank()) {
      h = TensorShape();
      h.AddDim(-1);
      for (int d = 0; d < out.rank(); ++d) h.AddDim(out.dim(d));
    }
    c->set_output(static_cast<int>(n + 1 + i), h);
  }
  c->set_output(static_cast<int>(n), TensorShape());
  return absl::OkStatus();
}

bool IsFloat(DataType t) {
  return t == DT_FLOAT || t == DT_DOUBLE || t == DT_HALF || t == DT_BFLOAT16;
}

bool IsRandom(const Node* n) {
  const std::string& op = n->op();
  return op.rfind("Random", 0) == 0 || op == "TruncatedNormal" || op == "Multinomial" ||
         op == "Dropout";
}

// Note [Recomputing a function for its gradient]. The gradients of While and If run the body
// (or branch) again, from the values that entered it, to differentiate it. Its side effects
// must not happen twice and its values must be the same as the first time, so the copy drops
// every stateful node whose outputs no node reads (an assign, an optimizer step, a summary
// write: what reaches the rest only through control edges), and refuses random ops whose value
// is read (a dropout mask drawn again would differ): draw those outside the loop or cond and
// pass them in. (The Python API builds Dropout and the uniform and normal draws there as their
// stateless twins, keyed per run and per iteration: Note [Random ops in functions] in
// python_bindings/shardflow/framework.py.) Reads of variables are recomputed (a variable that the
// body itself changes is refused the same way as a random op).

// Copies the nodes of `function` into `scope`'s graph under `prefix`, its arguments replaced by
// `args`; returns its results. `for_gradient`: Note [Recomputing a function for its gradient].
absl::StatusOr<std::vector<Output>> Inline(const Scope& scope, const GraphFunction& function,
                                           const std::vector<Output>& args,
                                           const std::string& prefix, bool for_gradient = false) {
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> src, Graph::FromGraphDef(function.graph()));
  SF_ASSIGN_OR_RETURN(std::vector<Node*> order, src->TopologicalOrder());
  Graph* g = scope.graph();
  std::map<std::string, Output> arg_of;
  for (int i = 0; i < function.arg_size() && i < static_cast<int>(args.size()); ++i) {
    arg_of[function.arg(i)] = args[i];
  }
  std::set<const Node*> dropped;
  if (for_gradient) {
    std::set<std::string> returned;
    for (const std::string& r : function.ret()) {
      absl::StatusOr<TensorRef> ref = ParseTensorRef(r);
      if (ref.ok()) returned.insert(ref->node);
    }
    bool updates = false;
    for (Node* n : order) {
      if (!n->op_def().is_stateful || arg_of.count(n->name())) continue;
      bool read = returned.count(n->name()) > 0;
      for (const Edge* e : n->out_edges()) read |= !e->IsControl();
      if (!read) {
        dropped.insert(n);
        updates = true;
      } else if (IsRandom(n)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "its gradient recomputes the function, and '", n->name(), "' (", n->op(),
            ") would draw different numbers the second time; draw them outside the loop or "
            "cond and pass them in (Note [Recomputing a function for its gradient])"));
      }
    }
    for (Node* n : order) {
      if (!updates || !n->op_def().is_stateful || dropped.count(n) ||
          n->op().find("Read") == std::string::npos) {
        continue;
      }
      for (const Edge* e : n->in_edges()) {
        // A read that waits for an update of the function itself sees the updated value.
        if (e->IsControl() && dropped.count(e->src)) {
          return absl::InvalidArgumentError(
              absl::StrCat("its gradient recomputes the function, and '", n->name(),
                           "' reads a variable "
                           "after '",
                           e->src->name(),
                           "' changed it, which the recomputation would not see; "
                           "compute the gradient of a value taken before the update"));
        }
      }
    }
  }
  std::map<const Node*, Node*> copy_of;
  for (Node* n : order) {
    if (arg_of.count(n->name()) || dropped.count(n)) continue;
    NodeDef def = n->def();
    def.set_name(prefix + def.name());
    def.clear_input();
    def.clear_assigned_device();
    def.mutable_attr()->erase("_class");  // colocation names the original nodes
    SF_ASSIGN_OR_RETURN(Node * copy, g->AddNode(def));
    copy_of[n] = copy;
    for (const Edge* e : n->in_edges()) {
      auto arg = arg_of.find(e->src->name());
      if (dropped.count(e->src)) continue;  // only control edges leave a dropped node
      Node* from = arg != arg_of.end() ? arg->second.node() : copy_of[e->src];
      int from_output = arg != arg_of.end() ? arg->second.index() : e->src_output;
      if (e->IsControl()) {
        g->AddControlEdge(from, copy);
      } else {
        SF_RETURN_IF_ERROR(g->AddEdge(from, from_output, copy, e->dst_input).status());
      }
    }
    SF_RETURN_IF_ERROR(g->InferShapes(copy));
  }
  std::vector<Output> rets;
  for (const std::string& name : function.ret()) {
    SF_ASSIGN_OR_RETURN(TensorRef ref, ParseTensorRef(name));
    auto arg = arg_of.find(ref.node);
    if (arg != arg_of.end()) {
      rets.push_back(arg->second);
      continue;
    }
    Node* n = src->FindNode(ref.node);
    if (n == nullptr || !copy_of.count(n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the function returns '", name, "', which is not in its graph"));
    }
    rets.push_back(Output(copy_of[n], ref.index));
  }
  return rets;
}

struct BackwardLoop {
  // Argument layout of both functions: k, dvars (float loop variables), accumulators (float
  // captures), every loop variable's history, every capture, the gradients that reached the
  // history of float loop variables (only those that some op uses).
  std::vector<DataType> types;
  std::vector<TensorShape> shapes;
  std::vector<std::string> names;
};

absl::StatusOr<GraphFunction> Finish(const Scope& root, const std::vector<std::string>& args,
                                     const std::vector<Output>& rets) {
  GraphFunction f;
  SF_RETURN_IF_ERROR(root.ToGraphDef(f.mutable_graph()));
  for (const std::string& a : args) f.add_arg(a);
  for (const Output& r : rets) f.add_ret(absl::StrCat(r.node()->name(), ":", r.index()));
  return f;
}

// The gradient: a While over k = iterations .. 1 whose body recomputes iteration k-1 from the
// history and adds its gradient (Note [While as a function call]).
absl::Status WhileGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
                       std::vector<Output>* dx) {
  const Node* fwd = op.node();
  std::vector<DataType> types, captured, history;
  GraphFunction body;
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "T", &types));
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "Tcaptured", &captured));
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "Thistory", &history));
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "body", &body));
  const int n = static_cast<int>(types.size()), m = static_cast<int>(captured.size());
  if (static_cast<int>(history.size()) != n) {
    return absl::FailedPreconditionError(absl::StrCat(
        NodeErrorPrefix(fwd->def()),
        "this loop keeps no history, so it has no gradient; build it with back_prop=True"));
  }
  std::vector<int> float_vars, float_caps;
  for (int j = 0; j < n; ++j) {
    if (IsFloat(types[j])) float_vars.push_back(j);
  }
  for (int c = 0; c < m; ++c) {
    if (IsFloat(captured[c])) float_caps.push_back(c);
  }
  const std::string name = s.UniqueNameForOp("While");
  BackwardLoop layout;
  auto add = [&](const std::string& arg, DataType t, const TensorShape& shape) {
    layout.names.push_back(absl::StrCat(name, "/", arg));
    layout.types.push_back(t);
    layout.shapes.push_back(shape);
  };
  add("k", DT_INT32, TensorShape());
  for (int j : float_vars) add(absl::StrCat("dvar_", j), types[j], fwd->output_shape(j));
  for (int c : float_caps) {
    Output x = GradInput(op, n + c);
    add(absl::StrCat("dcaptured_", c), captured[c], x.node()->output_shape(x.index()));
  }
  for (int j = 0; j < n; ++j) {
    add(absl::StrCat("history_", j), types[j], fwd->output_shape(n + 1 + j));
  }
  for (int c = 0; c < m; ++c) {
    Output x = GradInput(op, n + c);
    add(absl::StrCat("captured_", c), captured[c], x.node()->output_shape(x.index()));
  }
  // The history is an output too (dynamic_rnn reads its outputs from it): gradients that
  // reach it join the backward loop at their row. Zeros filled in for an unused output are
  // skipped.
  std::vector<int> used_history;
  for (int j : float_vars) {
    const Output& g = dy[n + 1 + j];
    if (g.node()->op() == "ZerosLike") continue;
    used_history.push_back(j);
    add(absl::StrCat("dhistory_", j), types[j], fwd->output_shape(n + 1 + j));
  }
  auto placeholders = [&](const Scope& root) {
    std::vector<Output> args;
    for (size_t i = 0; i < layout.names.size(); ++i) {
      args.push_back(ops::Placeholder(root.WithAbsoluteOpName(layout.names[i]), layout.types[i],
                                      layout.shapes[i]));
    }
    return args;
  };
  const size_t first_hist = 1 + float_vars.size() + float_caps.size();

  // cond: k > 0
  Scope cond_root = Scope::NewRootScope();
  std::vector<Output> cond_args = placeholders(cond_root);
  Output more = ops::Greater(cond_root.WithAbsoluteOpName(name + "/cond/more"), cond_args[0], 0);
  SF_ASSIGN_OR_RETURN(GraphFunction cond_fn, Finish(cond_root, layout.names, {more}));

  // body: row k-1 of each history, the forward body on it, its gradient.
  Scope root = Scope::NewRootScope();
  std::vector<Output> args = placeholders(root);
  Scope b = root.NewSubScope(name + "/body");
  Output i = ops::Sub(b, args[0], 1);
  std::vector<Output> inputs;  // of the forward body: loop variables, then captures
  for (int j = 0; j < n; ++j) {
    inputs.push_back(
        Output(OpBuilder(b, "GatherV2").Input(args[first_hist + j]).Input(i).Input(0).Finalize()));
  }
  for (int c = 0; c < m; ++c) inputs.push_back(args[first_hist + n + c]);
  SF_RETURN_IF_ERROR(root.status());
  absl::StatusOr<std::vector<Output>> inlined =
      Inline(root, body, inputs, name + "/body/forward/", true);
  if (!inlined.ok()) return WithContext(inlined.status(), NodeErrorPrefix(fwd->def()));
  std::vector<Output> outs = *std::move(inlined);
  if (static_cast<int>(outs.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(NodeErrorPrefix(fwd->def()), "the body returns ",
                                                   outs.size(), " values for ", n,
                                                   " loop variables"));
  }
  std::vector<Output> ys, grad_ys, xs;
  for (size_t p = 0; p < float_vars.size(); ++p) {
    ys.push_back(outs[float_vars[p]]);
    grad_ys.push_back(args[1 + p]);
    xs.push_back(inputs[float_vars[p]]);
  }
  for (int c : float_caps) xs.push_back(inputs[n + c]);
  std::vector<Output> grads;
  if (!ys.empty()) SF_RETURN_IF_ERROR(AddGradients(b, ys, xs, &grads, grad_ys));
  std::vector<Output> rets = {i};
  const size_t first_dhist = first_hist + n + m;
  for (size_t p = 0; p < float_vars.size(); ++p) {
    Output g =
        p < grads.size() && grads[p].valid() ? grads[p] : ops::ZerosLike(b, inputs[float_vars[p]]);
    auto u = std::find(used_history.begin(), used_history.end(), float_vars[p]);
    if (u != used_history.end()) {
      Output row(OpBuilder(b, "GatherV2")
                     .Input(args[first_dhist + (u - used_history.begin())])
                     .Input(i)
                     .Input(0)
                     .Finalize());
      g = ops::Add(b, g, row);
    }
    rets.push_back(g);
  }
  for (size_t p = 0; p < float_caps.size(); ++p) {
    Output acc = args[1 + float_vars.size() + p];
    size_t g = float_vars.size() + p;
    rets.push_back(g < grads.size() && grads[g].valid() ? ops::Add(b, acc, grads[g])
                                                        : ops::Identity(b, acc));
  }
  SF_ASSIGN_OR_RETURN(GraphFunction body_fn, Finish(root, layout.names, rets));

  // The backward loop itself, in the gradient's scope. A loop variable whose shape invariant
  // lets it change shape has no rows of history when it did (runtime/while_op.cc): the step
  // then fails here, naming it, rather than reading rows that are not there.
  Output iterations(const_cast<Node*>(fwd), n);
  std::vector<TensorShape> invariants;
  if (GetAttr(fwd->attrs(), "output_shapes", &invariants).ok() &&
      static_cast<int>(invariants.size()) == n) {
    std::vector<Operation> checks;
    for (int j = 0; j < n; ++j) {
      if (invariants[j].IsFullyDefined()) continue;
      Output hist(const_cast<Node*>(fwd), n + 1 + j);
      Output rows = ops::Slice(s, ops::Shape(s, hist), Tensor::FromVector<int32_t>({0}),
                               Tensor::FromVector<int32_t>({1}));
      Output same =
          ops::Equal(s, ops::Reshape(s, rows, Tensor::FromVector<int32_t>({})), iterations);
      Output poison = ops::Select(
          s, same, ops::Const(s, Tensor::Scalar<float>(0.0f)),
          ops::Const(s, Tensor::Scalar<float>(std::numeric_limits<float>::quiet_NaN())));
      checks.push_back(Operation(
          OpBuilder(s, "CheckNumerics")
              .Input(poison)
              .Attr("message",
                    absl::StrCat("gradient of ", fwd->name(), ": loop variable ", j,
                                 " changed shape between iterations (its shape invariant lets "
                                 "it); gradients through while_loop need loop variables of one "
                                 "shape per run, or build the loop with back_prop=False"))
              .Finalize()
              .node()));
    }
    if (!checks.empty()) iterations = ops::Identity(s.WithControlDependencies(checks), iterations);
  }
  std::vector<Input> loop = {iterations};
  for (int j : float_vars) loop.push_back(dy[j]);
  for (int c : float_caps) loop.push_back(ops::ZerosLike(s, GradInput(op, n + c)));
  std::vector<Input> carried;
  for (int j = 0; j < n; ++j) carried.push_back(Output(const_cast<Node*>(fwd), n + 1 + j));
  for (int c = 0; c < m; ++c) carried.push_back(GradInput(op, n + c));
  for (int j : used_history) carried.push_back(dy[n + 1 + j]);
  AttrValue no_history;
  no_history.mutable_list();
  Operation back = OpBuilder(s.WithAbsoluteOpName(name), "While")
                       .InputList(loop)
                       .InputList(carried)
                       .Attr("cond", cond_fn)
                       .Attr("body", body_fn)
                       .Attr("Thistory", no_history)
                       .Finalize();
  if (!back.valid()) return s.status();
  for (int j = 0; j < n; ++j) {
    auto p = std::find(float_vars.begin(), float_vars.end(), j);
    dx->push_back(p == float_vars.end() ? Output()
                                        : Output(back.node(), 1 + (p - float_vars.begin())));
  }
  for (int c = 0; c < m; ++c) {
    auto p = std::find(float_caps.begin(), float_caps.end(), c);
    dx->push_back(p == float_caps.end()
                      ? Output()
                      : Output(back.node(),
                               static_cast<int>(1 + float_vars.size() + (p - float_caps.begin()))));
  }
  return absl::OkStatus();
}

absl::Status IfShape(InferenceContext* c) {
  std::vector<DataType> types;
  std::vector<TensorShape> shapes;
  SF_RETURN_IF_ERROR(c->GetAttr("Tout", &types));
  SF_RETURN_IF_ERROR(c->GetAttr("output_shapes", &shapes));
  if (!shapes.empty() && shapes.size() != types.size()) {
    return c->InvalidArgument(absl::StrCat("output_shapes has ", shapes.size(), " entries for ",
                                           types.size(), " outputs"));
  }
  if (!c->input(0).unknown_rank() && c->input(0).rank() != 0) {
    return c->InvalidArgument(
        absl::StrCat("cond must be a bool scalar, not of shape ", c->input(0).DebugString()));
  }
  for (size_t i = 0; i < types.size(); ++i) {
    c->set_output(static_cast<int>(i), shapes.empty() ? TensorShape::Unknown() : shapes[i]);
  }
  return absl::OkStatus();
}

// The gradient of If: an If on the same cond whose branches are the gradients of then_branch
// and else_branch (each recomputes its branch: Note [Recomputing a function for its gradient]).
// Both take (dy of each float output, the inputs) and return a gradient, or zeros, for each
// float input.
absl::Status IfGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
                    std::vector<Output>* dx) {
  const Node* fwd = op.node();
  std::vector<DataType> tin, tout;
  GraphFunction branches[2];
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "Tin", &tin));
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "Tout", &tout));
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "then_branch", &branches[0]));
  SF_RETURN_IF_ERROR(GetAttr(fwd->attrs(), "else_branch", &branches[1]));
  std::vector<int> float_in, float_out;
  for (size_t i = 0; i < tin.size(); ++i) {
    if (IsFloat(tin[i])) float_in.push_back(static_cast<int>(i));
  }
  for (size_t i = 0; i < tout.size(); ++i) {
    if (IsFloat(tout[i])) float_out.push_back(static_cast<int>(i));
  }
  dx->assign(1 + tin.size(), Output());
  if (float_in.empty() || float_out.empty()) return absl::OkStatus();
  const std::string name = s.UniqueNameForOp("If");
  std::vector<std::string> names;
  std::vector<DataType> types;
  std::vector<TensorShape> shapes;
  for (int o : float_out) {
    names.push_back(absl::StrCat(name, "/dy_", o));
    types.push_back(tout[o]);
    shapes.push_back(fwd->output_shape(o));
  }
  std::vector<Input> inputs;
  for (int o : float_out) inputs.push_back(dy[o]);
  for (size_t i = 0; i < tin.size(); ++i) {
    names.push_back(absl::StrCat(name, "/x_", i));
    types.push_back(tin[i]);
    Output x = GradInput(op, static_cast<int>(1 + i));
    shapes.push_back(x.node()->output_shape(x.index()));
    inputs.push_back(x);
  }
  GraphFunction grads[2];
  for (int b = 0; b < 2; ++b) {
    Scope root = Scope::NewRootScope();
    std::vector<Output> args;
    for (size_t i = 0; i < names.size(); ++i) {
      args.push_back(ops::Placeholder(root.WithAbsoluteOpName(names[i]), types[i], shapes[i]));
    }
    const char* which = b == 0 ? "then" : "else";
    Scope body = root.NewSubScope(absl::StrCat(name, "/", which));
    std::vector<Output> xs(args.begin() + static_cast<long>(float_out.size()), args.end());
    absl::StatusOr<std::vector<Output>> outs =
        Inline(root, branches[b], xs, absl::StrCat(name, "/", which, "/forward/"), true);
    if (!outs.ok()) return WithContext(outs.status(), NodeErrorPrefix(fwd->def()));
    if (outs->size() != tout.size()) {
      return absl::InvalidArgumentError(absl::StrCat(NodeErrorPrefix(fwd->def()), "the ", which,
                                                     " branch returns ", outs->size(),
                                                     " values for ", tout.size(), " outputs"));
    }
    std::vector<Output> ys, grad_ys, wrt, g;
    for (size_t p = 0; p < float_out.size(); ++p) {
      ys.push_back((*outs)[float_out[p]]);
      grad_ys.push_back(args[p]);
    }
    for (int i : float_in) wrt.push_back(xs[i]);
    SF_RETURN_IF_ERROR(AddGradients(body, ys, wrt, &g, grad_ys));
    std::vector<Output> rets;
    for (size_t p = 0; p < float_in.size(); ++p) {
      rets.push_back(p < g.size() && g[p].valid() ? g[p] : ops::ZerosLike(body, wrt[p]));
    }
    SF_ASSIGN_OR_RETURN(grads[b], Finish(root, names, rets));
  }
  AttrValue out_types, out_shapes;
  out_types.mutable_list();
  out_shapes.mutable_list();
  for (int i : float_in) {
    out_types.mutable_list()->add_type(tin[i]);
    Output x = GradInput(op, 1 + i);
    x.node()->output_shape(x.index()).AsProto(out_shapes.mutable_list()->add_shape());
  }
  Operation back = OpBuilder(s.WithAbsoluteOpName(name), "If")
                       .Input(GradInput(op, 0))
                       .InputList(inputs)
                       .Attr("Tout", out_types)
                       .Attr("then_branch", grads[0])
                       .Attr("else_branch", grads[1])
                       .Attr("output_shapes", out_shapes)
                       .Finalize();
  if (!back.valid()) return s.status();
  for (size_t p = 0; p < float_in.size(); ++p) {
    (*dx)[1 + float_in[p]] = Output(back.node(), static_cast<int>(p));
  }
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("If")
    .Input("cond: bool")
    .Input("input: Tin")
    .Output("output: Tout")
    .Attr("Tin: list(type) = []")
    .Attr("Tout: list(type) = []")
    .Attr("then_branch: func")
    .Attr("else_branch: func")
    .Attr("output_shapes: list(shape) = []")
    .SetIsStateful()
    .SetShapeFn(IfShape)
    .Doc(
        "TF1's cond as one op (Note [While as a function call] in ops/control_flow_ops.cc): "
        "calls then_branch(input) when cond is true, else else_branch(input), and returns its "
        "results. Only the branch taken runs, side effects included.");

REGISTER_GRADIENT("If", IfGrad);

REGISTER_OP("While")
    .Input("input: T")
    .Input("captured: Tcaptured")
    .Output("output: T")
    .Output("iterations: int32")
    .Output("history: Thistory")
    .Attr("T: list(type)")
    .Attr("Tcaptured: list(type) = []")
    .Attr("Thistory: list(type) = []")
    .Attr("cond: func")
    .Attr("body: func")
    .Attr("output_shapes: list(shape) = []")
    .Attr("maximum_iterations: int = -1")
    .SetIsStateful()
    .SetShapeFn(WhileShape)
    .Doc(
        "TF1's while_loop (Note [While as a function call] in ops/control_flow_ops.cc): while "
        "cond(vars, captured) is true (and fewer than maximum_iterations have run, when that "
        "is >= 0), vars = body(vars, captured). Returns the final vars, the number of "
        "iterations and, when Thistory = T, each variable as it entered every iteration.");

REGISTER_GRADIENT("While", WhileGrad);

namespace ops {

absl::StatusOr<GraphFunction> MakeFunction(const Scope& root, const std::vector<Output>& args,
                                           const std::vector<Output>& rets) {
  std::vector<std::string> names;
  for (const Output& a : args) {
    if (!a.valid())
      return root.status().ok() ? absl::InvalidArgumentError("an invalid arg") : root.status();
    names.push_back(a.node()->name());
  }
  for (const Output& r : rets) {
    if (!r.valid())
      return root.status().ok() ? absl::InvalidArgumentError("an invalid ret") : root.status();
  }
  return Finish(root, names, rets);
}

std::vector<Output> If(const Scope& s, const Input& cond, const std::vector<Input>& inputs,
                       const GraphFunction& then_branch, const GraphFunction& else_branch,
                       const std::vector<DataType>& out_types,
                       const std::vector<TensorShape>& output_shapes) {
  OpBuilder b(s, "If");
  b.Input(cond)
      .InputList(inputs)
      .Attr("then_branch", then_branch)
      .Attr("else_branch", else_branch)
      .Attr("Tout", out_types);
  if (!output_shapes.empty()) b.Attr("output_shapes", output_shapes);
  Operation op = b.Finalize();
  std::vector<Output> out;
  for (size_t i = 0; i < out_types.size(); ++i) {
    out.push_back(op.valid() ? Output(op.node(), static_cast<int>(i)) : Output());
  }
  return out;
}

std::vector<Output> While(const Scope& s, const std::vector<Input>& vars,
                          const std::vector<Input>& captured, const GraphFunction& cond,
                          const GraphFunction& body, bool keep_history) {
  OpBuilder b(s, "While");
  b.InputList(vars).InputList(captured).Attr("cond", cond).Attr("body", body);
  AttrValue history;
  history.mutable_list();
  if (keep_history) {
    for (const Input& v : vars) {
      history.mutable_list()->add_type(v.is_literal()       ? v.value().dtype()
                                       : v.output().valid() ? v.output().dtype()
                                                            : DT_INVALID);
    }
  }
  b.Attr("Thistory", history);
  Operation op = b.Finalize();
  std::vector<Output> out;
  for (size_t i = 0; i < vars.size(); ++i) {
    out.push_back(op.valid() ? Output(op.node(), static_cast<int>(i)) : Output());
  }
  return out;
}

}  // namespace ops

}  // namespace shardflow
