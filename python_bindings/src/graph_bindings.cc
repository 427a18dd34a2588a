// Python bindings for building graphs: GraphHandle, ops (by registered name), variables,
// initializers, gradients and optimizers. The Python package (shardflow/ops.py, ...) gives
// these their friendly names.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/op_def.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "python_bindings/src/graph_handle.h"
#include "python_bindings/src/status_exceptions.h"
#include "python_bindings/src/tensor_conversion.h"

namespace shardflow {
namespace python {
namespace {

namespace py = pybind11;
using GraphPtr = std::shared_ptr<GraphHandle>;

DataType ToDataType(py::handle v, const std::string& what) {
  if (py::isinstance<py::str>(v)) {
    SF_PY_ASSIGN_OR_THROW(DataType dt, ParseDataType(v.cast<std::string>()));
    return dt;
  }
  if (py::isinstance<py::int_>(v)) {
    int value = v.cast<int>();
    if (!DataType_IsValid(value) || value == DT_INVALID) {
      throw StatusError(absl::InvalidArgumentError(
          absl::StrCat(what, ": ", value, " is not a valid dtype enum value")));
    }
    return static_cast<DataType>(value);
  }
  if (py::hasattr(v, "_enum")) return ToDataType(v.attr("_enum"), what);
  throw py::type_error(absl::StrCat(what, ": expected a dtype (sf.float32, 'float32', ...), got ",
                                    std::string(py::str(v.get_type().attr("__name__")))));
}

TensorShape ToShape(py::handle v) {
  if (v.is_none()) return TensorShape::Unknown();
  TensorShape shape;
  for (py::handle d : v) shape.AddDim(d.is_none() ? -1 : d.cast<int64_t>());
  return shape;
}

AttrValue ToAttr(const OpDef& op, const std::string& name, py::handle v) {
  const AttrDef* def = op.FindAttr(name);
  if (def == nullptr) {
    std::vector<std::string> names;
    for (const AttrDef& a : op.attrs) names.push_back(a.name);
    throw StatusError(absl::InvalidArgumentError(absl::StrCat("op ", op.name, " has no attr '",
                                                              name, "'; its attrs are [",
                                                              absl::StrJoin(names, ", "), "]")));
  }
  const std::string what = absl::StrCat(op.name, " attr '", name, "'");
  try {
    if (def->type == "int") return MakeAttr(v.cast<int64_t>());
    if (def->type == "float") return MakeAttr(v.cast<float>());
    if (def->type == "bool") return MakeAttr(v.cast<bool>());
    if (def->type == "string") return MakeAttr(v.cast<std::string>());
    if (def->type == "type") return MakeAttr(ToDataType(v, what));
    if (def->type == "shape") return MakeAttr(ToShape(v));
    if (def->type == "tensor") return MakeAttr(ArrayToTensor(v, false, nullptr, what.c_str()));
    if (def->type == "list(int)") return MakeAttr(v.cast<std::vector<int64_t>>());
    if (def->type == "list(shape)") {
      std::vector<TensorShape> shapes;
      for (py::handle t : v) shapes.push_back(ToShape(t));
      return MakeAttr(shapes);
    }
    if (def->type == "func") {
      // (serialized GraphDef, [arg placeholder names], [returned tensor names])
      auto parts = v.cast<py::tuple>();
      if (parts.size() != 3) throw py::cast_error();
      GraphFunction f;
      if (!f.mutable_graph()->ParseFromString(parts[0].cast<std::string>())) {
        throw StatusError(absl::InvalidArgumentError(absl::StrCat(what, ": not a GraphDef")));
      }
      for (py::handle a : parts[1]) f.add_arg(a.cast<std::string>());
      for (py::handle r : parts[2]) f.add_ret(r.cast<std::string>());
      return MakeAttr(f);
    }
    if (def->type == "list(type)") {
      std::vector<DataType> types;
      for (py::handle t : v) types.push_back(ToDataType(t, what));
      return MakeAttr(types);
    }
  } catch (const py::cast_error&) {
    throw py::type_error(absl::StrCat(what, " takes a value of type ", def->type, ", not ",
                                      std::string(py::str(v.get_type().attr("__name__")))));
  }
  throw py::type_error(
      absl::StrCat(what, " has type ", def->type, ", which Python cannot set yet"));
}

Input ToInput(const GraphHandle& g, py::handle v, const std::string& what) {
  if (py::isinstance<OutputRef>(v)) return Input(g.ResolveOutput(v.cast<const OutputRef&>()));
  return Input(ArrayToTensor(v, false, nullptr, what.c_str()));
}

// add_op(op_type, inputs, attrs, ctx) -> (op name, [OutputRef per output]).
py::tuple AddOp(GraphHandle& g, const std::string& op_type, const py::list& inputs,
                const py::dict& attrs, const BuildContext& ctx) {
  SF_PY_ASSIGN_OR_THROW(const OpDef* op, OpRegistry::Global()->Find(op_type));
  if (inputs.size() != op->inputs.size()) {
    throw StatusError(absl::InvalidArgumentError(
        absl::StrCat(op_type, " takes ", op->inputs.size(), " input(s) but was given ",
                     inputs.size(), "; signature: ", op->Signature())));
  }
  OpBuilder b(g.ScopeFor(ctx), op_type);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ArgDef& arg = op->inputs[i];
    std::string what = absl::StrCat(op_type, " input '", arg.name, "'");
    if (!arg.number_attr.empty() || !arg.type_list_attr.empty()) {
      std::vector<Input> items;
      for (py::handle item : inputs[i]) items.push_back(ToInput(g, item, what));
      b.InputList(items);
    } else {
      b.Input(ToInput(g, inputs[i], what));
    }
  }
  for (auto [k, v] : attrs) {
    std::string name = k.cast<std::string>();
    // Internal attrs ("_gradient_op_type" from gradient_override_map) are strings outside the
    // op's signature.
    if (!name.empty() && name[0] == '_' && op->FindAttr(name) == nullptr) {
      b.Attr(name, MakeAttr(v.cast<std::string>()));
      continue;
    }
    b.Attr(name, ToAttr(*op, name, v));
  }
  Operation result = g.Build(ctx, [&](const Scope&) { return b.Finalize(); });
  std::vector<OutputRef> outs;
  for (int i = 0; i < result.node()->num_outputs(); ++i) {
    outs.push_back(g.MakeRef(Output(result.node(), i)));
  }
  return py::make_tuple(result.name(), outs);
}

std::unique_ptr<Optimizer> MakeOptimizer(const std::string& kind, const py::dict& p) {
  auto get = [&](const char* key, double def) {
    return p.contains(key) ? p[key].cast<double>() : def;
  };
  double lr = get("learning_rate", 0.001);
  std::unique_ptr<Optimizer> opt;
  if (kind == "sgd") {
    opt = std::make_unique<GradientDescentOptimizer>(lr);
  } else if (kind == "momentum") {
    bool nesterov = p.contains("use_nesterov") && p["use_nesterov"].cast<bool>();
    opt = std::make_unique<MomentumOptimizer>(lr, get("momentum", 0.9), nesterov);
  } else if (kind == "adam") {
    opt = std::make_unique<AdamOptimizer>(lr, get("beta1", 0.9), get("beta2", 0.999),
                                          get("epsilon", 1e-8));
  } else if (kind == "rmsprop") {
    opt = std::make_unique<RMSPropOptimizer>(lr, get("decay", 0.9), get("momentum", 0.0),
                                             get("epsilon", 1e-10));
  } else if (kind == "adagrad") {
    opt = std::make_unique<AdagradOptimizer>(lr, get("initial_accumulator_value", 0.1));
  } else {
    throw StatusError(absl::InvalidArgumentError(absl::StrCat(
        "unknown optimizer '", kind, "'; use sgd, momentum, adam, rmsprop or adagrad")));
  }
  return opt;
}

std::string Minimize(GraphHandle& g, const std::string& kind, const py::dict& params,
                     const std::optional<OutputRef>& lr_tensor, const OutputRef& loss,
                     const std::vector<std::string>& var_handles, const BuildContext& ctx,
                     const std::string& name) {
  std::unique_ptr<Optimizer> opt = MakeOptimizer(kind, params);
  if (lr_tensor) opt->set_learning_rate(g.ResolveOutput(*lr_tensor));
  opt->set_name(name);
  std::vector<Var> vars;
  for (const std::string& h : var_handles) vars.push_back(g.FindVariable(h));
  Output loss_out = g.ResolveOutput(loss);
  ThrowIfError(g.root().status());
  absl::StatusOr<Operation> op = opt->Minimize(g.ScopeFor(ctx), loss_out, vars);
  g.FailBuild(op.ok() ? g.root().status() : op.status());
  return op->name();
}

std::string ApplyGradients(GraphHandle& g, const std::string& kind, const py::dict& params,
                           const std::optional<OutputRef>& lr_tensor,
                           const std::vector<std::pair<OutputRef, std::string>>& grads_and_vars,
                           const BuildContext& ctx, const std::string& name) {
  std::unique_ptr<Optimizer> opt = MakeOptimizer(kind, params);
  if (lr_tensor) opt->set_learning_rate(g.ResolveOutput(*lr_tensor));
  opt->set_name(name);
  std::vector<std::pair<Output, Var>> pairs;
  for (const auto& [grad, handle] : grads_and_vars) {
    pairs.emplace_back(g.ResolveOutput(grad), g.FindVariable(handle));
  }
  ThrowIfError(g.root().status());
  absl::StatusOr<Operation> op = opt->ApplyGradients(g.ScopeFor(ctx), pairs);
  g.FailBuild(op.ok() ? g.root().status() : op.status());
  return op->name();
}

std::vector<std::optional<OutputRef>> Gradients(GraphHandle& g, const std::vector<OutputRef>& ys,
                                                const std::vector<OutputRef>& xs,
                                                const std::vector<OutputRef>& grad_ys,
                                                const std::vector<OutputRef>& stop_at,
                                                const BuildContext& ctx) {
  std::vector<Output> y, x, gy, stop, grads;
  for (const auto& r : ys) y.push_back(g.ResolveOutput(r));
  for (const auto& r : xs) x.push_back(g.ResolveOutput(r));
  for (const auto& r : grad_ys) gy.push_back(g.ResolveOutput(r));
  for (const auto& r : stop_at) stop.push_back(g.ResolveOutput(r));
  ThrowIfError(g.root().status());
  absl::Status s = AddGradients(g.ScopeFor(ctx), y, x, &grads, gy, stop);
  g.FailBuild(s.ok() ? g.root().status() : s);
  std::vector<std::optional<OutputRef>> out;
  for (const Output& o : grads) {
    out.push_back(o.valid() ? std::optional<OutputRef>(g.MakeRef(o)) : std::nullopt);
  }
  return out;
}

py::tuple CreateVariable(GraphHandle& g, py::handle initial_value, bool trainable,
                         const BuildContext& ctx, bool validate_shape) {
  Input init = ToInput(g, initial_value, "initial value of variable '" + ctx.name + "'");
  Var v =
      g.Build(ctx, [&](const Scope& s) { return Var::Create(s, init, trainable, validate_shape); });
  return py::make_tuple(g.MakeRef(v.handle()), g.MakeRef(v.value()), v.initializer().name(),
                        v.name());
}

OutputRef Initializer(GraphHandle& g, const std::string& kind, py::handle shape_obj, int64_t seed,
                      py::handle dtype_obj, float value, const BuildContext& ctx) {
  TensorShape shape = ToShape(shape_obj);
  if (!shape.IsFullyDefined()) {
    throw StatusError(absl::InvalidArgumentError(absl::StrCat(
        "initializer ", kind, " needs a fully defined shape, got ", shape.DebugString())));
  }
  DataType dtype = ToDataType(dtype_obj, "initializer dtype");
  Output out = g.Build(ctx, [&](const Scope& s) -> Output {
    if (kind == "zeros") return init::Zeros(s, shape, dtype);
    if (kind == "constant") return init::Constant(s, shape, value, dtype);
    if (kind == "glorot_uniform") return init::GlorotUniform(s, shape, seed, dtype);
    if (kind == "glorot_normal") return init::GlorotNormal(s, shape, seed, dtype);
    if (kind == "he_uniform") return init::HeUniform(s, shape, seed, dtype);
    if (kind == "he_normal") return init::HeNormal(s, shape, seed, dtype);
    if (kind == "truncated_normal") return init::TruncatedNormal(s, shape, value, seed, dtype);
    s.UpdateStatus(absl::InvalidArgumentError(absl::StrCat(
        "unknown initializer '", kind,
        "'; use zeros, constant, glorot_uniform, glorot_normal, he_uniform, he_normal or "
        "truncated_normal")));
    return Output();
  });
  return g.MakeRef(out);
}

py::dict NodeInfo(const GraphHandle& g, const std::string& name) {
  Node* n = g.FindNode(name);
  py::dict d;
  d["name"] = n->name();
  d["op"] = n->op();
  d["device"] = n->requested_device();
  std::vector<std::string> inputs, control;
  for (int i = 0; i < n->num_inputs(); ++i) {
    const Edge* e = n->input_edge(i);
    inputs.push_back(e ? TensorRefString(e->src->name(), e->src_output) : "?");
  }
  for (const Edge* e : n->in_edges()) {
    if (e->IsControl()) control.push_back(e->src->name());
  }
  d["inputs"] = inputs;
  d["control_inputs"] = control;
  d["num_outputs"] = n->num_outputs();
  return d;
}

}  // namespace

void RegisterGraphBindings(py::module_& m) {
  py::class_<OutputRef>(m, "OutputRef", "One output of a node: (node, index, dtype, shape).")
      .def_readonly("node", &OutputRef::node)
      .def_readonly("index", &OutputRef::index)
      .def_property_readonly("dtype", [](const OutputRef& r) { return static_cast<int>(r.dtype); })
      .def_property_readonly("shape",
                             [](const OutputRef& r) -> py::object {
                               if (r.unknown_rank) return py::none();
                               py::list dims;
                               for (int64_t d : r.dims) {
                                 dims.append(d < 0 ? py::object(py::none()) : py::int_(d));
                               }
                               return py::tuple(dims);
                             })
      .def_property_readonly("name", &OutputRef::name)
      .def("__repr__", [](const OutputRef& r) { return "<OutputRef " + r.name() + ">"; });

  py::class_<BuildContext>(m, "BuildContext")
      .def(py::init<std::string, std::string, std::string, std::vector<std::string>,
                    std::vector<std::string>>(),
           py::arg("name") = "", py::arg("name_scope") = "", py::arg("device") = "",
           py::arg("control_inputs") = std::vector<std::string>{},
           py::arg("colocate_with") = std::vector<std::string>{});

  py::class_<GraphHandle, GraphPtr>(m, "GraphHandle", "The C++ graph behind shardflow.Graph.")
      .def(py::init<>())
      .def_property_readonly("generation", &GraphHandle::generation)
      .def_property_readonly("num_nodes",
                             [](const GraphHandle& g) { return g.graph()->num_nodes(); })
      .def("add_op", &AddOp, py::arg("op_type"), py::arg("inputs"), py::arg("attrs"),
           py::arg("ctx"))
      .def("create_variable", &CreateVariable, py::arg("initial_value"), py::arg("trainable"),
           py::arg("ctx"), py::arg("validate_shape") = true)
      .def("initializer", &Initializer)
      .def("initialize_all_variables",
           [](GraphHandle& g, const BuildContext& ctx) {
             return g.Build(ctx, [](const Scope& s) { return InitializeAllVariables(s); }).name();
           })
      .def("variables",
           [](const GraphHandle& g, bool trainable_only) {
             std::vector<std::string> names;
             for (const Var& v : AllVariables(g.root(), trainable_only)) {
               names.push_back(v.handle().node()->name());
             }
             return names;
           })
      .def("variable_info",
           [](const GraphHandle& g, const std::string& handle_name) {
             Var v = g.FindVariable(handle_name);
             return py::make_tuple(g.MakeRef(v.handle()), g.MakeRef(v.value()),
                                   v.initializer().name(), v.name(), v.info().trainable);
           })
      .def("gradients", &Gradients)
      .def("minimize", &Minimize)
      .def("apply_gradients", &ApplyGradients)
      .def("node_names",
           [](const GraphHandle& g) {
             std::vector<std::string> names;
             for (Node* n : g.graph()->nodes()) names.push_back(n->name());
             return names;
           })
      .def("has_node", [](const GraphHandle& g,
                          const std::string& name) { return g.graph()->FindNode(name) != nullptr; })
      .def("node_info", &NodeInfo)
      // Makes `dst` run after `src` (TF's Operation._add_control_input): for wrappers that
      // must order their ops before ops another builder made (loss_scale.py's snapshots).
      .def("add_control_edge",
           [](GraphHandle& g, const std::string& src, const std::string& dst) {
             Node* from = g.FindNode(src);
             Node* to = g.FindNode(dst);
             g.graph()->AddControlEdge(from, to);
           })
      // The node's NodeDef, serialized (Python's Operation.node_def / get_attr).
      .def("node_def",
           [](const GraphHandle& g, const std::string& name) {
             return py::bytes(g.FindNode(name)->def().SerializeAsString());
           })
      .def("output_ref",
           [](const GraphHandle& g, const std::string& node, int index) {
             return g.MakeRef(g.ResolveOutput(OutputRef{node, index}));
           })
      .def("import_graph_def",
           [](GraphHandle& g, const py::bytes& data, const std::string& prefix,
              const std::vector<std::pair<std::string, OutputRef>>& input_map,
              const std::vector<std::string>& control_inputs) {
             GraphDef def;
             if (!def.ParseFromString(std::string(data))) {
               throw StatusError(absl::InvalidArgumentError(
                   "import_graph_def: the bytes are not a serialized GraphDef"));
             }
             return g.ImportGraphDef(def, prefix, input_map, control_inputs);
           })
      .def("as_graph_def", [](const GraphHandle& g) {
        GraphDef def;
        g.graph()->ToGraphDef(&def);
        return py::bytes(def.SerializeAsString());
      });

  // Python gradient functions (sf.RegisterGradient): `fn(node_name, [(node, index) of the
  // gradient of each output])` returns, per input of the node, (node, index) of its gradient or
  // None. Registered for the process, as REGISTER_GRADIENT is; the function is kept alive.
  m.def("register_python_gradient", [](const std::string& name, py::function fn) {
    auto* f = new py::function(std::move(fn));  // lives as long as the registry
    GradientRegistry::Global()->Register(
        name,
        [f, name](const Scope& s, const Operation& op, const std::vector<Output>& dy,
                  std::vector<Output>* dx) -> absl::Status {
          py::gil_scoped_acquire gil;
          py::list grads;
          for (const Output& o : dy) grads.append(py::make_tuple(o.node()->name(), o.index()));
          py::object result;
          try {
            result = (*f)(op.node()->name(), grads);
          } catch (py::error_already_set& e) {
            return absl::InvalidArgumentError(
                absl::StrCat("the Python gradient '", name, "' raised: ", e.what()));
          }
          for (py::handle item : result) {
            if (item.is_none()) {
              dx->push_back(Output());
              continue;
            }
            auto ref = item.cast<std::pair<std::string, int>>();
            Node* n = s.graph()->FindNode(ref.first);
            if (n == nullptr || ref.second < 0 || ref.second >= n->num_outputs()) {
              return absl::NotFoundError(absl::StrCat("the Python gradient '", name, "' returned ",
                                                      ref.first, ":", ref.second,
                                                      ", which is not in the graph"));
            }
            dx->push_back(Output(n, ref.second));
          }
          return absl::OkStatus();
        });
  });
  m.def("register_no_gradient",
        [](const std::string& op) { GradientRegistry::Global()->RegisterNoGradient(op); });

  m.def("dtype_name", [](int dtype) { return DataTypeString(static_cast<DataType>(dtype)); });
  m.def("parse_dtype", [](const std::string& name) {
    SF_PY_ASSIGN_OR_THROW(DataType dt, ParseDataType(name));
    return static_cast<int>(dt);
  });
}

}  // namespace python
}  // namespace shardflow
