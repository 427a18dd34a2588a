#include "ops/scope.h"

#include "absl/strings/str_cat.h"
#include "core/framework/tensor_util.h"
#include "core/platform/status.h"

namespace shardflow {

std::string Output::name() const {
  return node_ ? TensorRefString(node_->name(), index_) : std::string("<invalid>");
}

namespace {
template <typename T, typename V>
Tensor VectorTensor(std::initializer_list<V> v) {
  std::vector<T> values(v.begin(), v.end());
  return Tensor::FromVector(values);
}
}  // namespace

Input::Input(std::initializer_list<float> v) : Input(VectorTensor<float>(v)) {}
Input::Input(std::initializer_list<double> v) : Input(VectorTensor<double>(v)) {}
Input::Input(std::initializer_list<int> v) : Input(VectorTensor<int32_t>(v)) {}
Input::Input(std::initializer_list<int64_t> v) : Input(VectorTensor<int64_t>(v)) {}
Input::Input(std::initializer_list<std::initializer_list<float>> rows) {
  is_literal_ = true;
  int64_t cols = rows.size() == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
  std::vector<float> values;
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != cols) return;  // ragged: invalid literal, caught later
    values.insert(values.end(), row.begin(), row.end());
  }
  value_ = Tensor::FromVector(values, TensorShape({static_cast<int64_t>(rows.size()), cols}));
}

Scope Scope::NewRootScope() {
  Scope s;
  s.shared_ = std::make_shared<Shared>();
  s.shared_->graph = std::make_unique<Graph>();
  return s;
}

Scope Scope::WithOpName(const std::string& name) const {
  Scope s = *this;
  s.op_name_ = name;
  return s;
}

Scope Scope::WithAbsoluteOpName(const std::string& name) const {
  Scope s = *this;
  s.prefix_.clear();
  s.op_name_ = name;
  return s;
}

Scope Scope::NewSubScope(const std::string& name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (!name.empty()) s.prefix_ = prefix_.empty() ? name : absl::StrCat(prefix_, "/", name);
  return s;
}

Scope Scope::WithDevice(const std::string& device) const {
  Scope s = *this;
  s.device_ = device;
  return s;
}

Scope Scope::ColocateWith(const Operation& op) const {
  Scope s = *this;
  if (op.valid()) s.colocate_with_.push_back(absl::StrCat("loc:@", op.node()->name()));
  return s;
}

Scope Scope::ClearColocation() const {
  Scope s = *this;
  s.colocate_with_.clear();
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Operation>& ops) const {
  Scope s = *this;
  for (const Operation& op : ops) {
    if (op.valid()) s.control_deps_.push_back(op.node());
  }
  return s;
}

Scope Scope::WithControlDependencies(const Output& output) const {
  return WithControlDependencies(std::vector<Operation>{output.op()});
}

Scope Scope::WithNoControlDependencies() const {
  Scope s = *this;
  s.control_deps_.clear();
  return s;
}

void Scope::UpdateStatus(const absl::Status& s) const {
  if (shared_->status.ok() && !s.ok()) shared_->status = s;
}

absl::Status Scope::ToGraphDef(GraphDef* def) const {
  SF_RETURN_IF_ERROR(shared_->status);
  graph()->ToGraphDef(def);
  return absl::OkStatus();
}

std::string Scope::UniqueNameForOp(const std::string& op_type) const {
  std::string base = op_name_.empty() ? op_type : op_name_;
  if (!prefix_.empty()) base = absl::StrCat(prefix_, "/", base);
  return graph()->UniqueName(base);
}

OpBuilder::OpBuilder(const Scope& scope, std::string op_type)
    : scope_(scope), op_type_(std::move(op_type)) {}

OpBuilder& OpBuilder::Input(const ::shardflow::Input& input) {
  args_.push_back(Arg{false, {input}});
  return *this;
}

OpBuilder& OpBuilder::InputList(const std::vector<::shardflow::Input>& inputs) {
  args_.push_back(Arg{true, inputs});
  return *this;
}

OpBuilder& OpBuilder::ControlInput(const Operation& op) {
  control_inputs_.push_back(op);
  return *this;
}

Operation OpBuilder::Finalize() {
  if (!scope_.ok()) return Operation();
  Graph* g = scope_.graph();
  NodeDef def;
  def.set_name(scope_.UniqueNameForOp(op_type_));
  def.set_op(op_type_);
  def.set_device(scope_.device());
  if (!scope_.colocate_with().empty()) {
    AttrValue& classes = (*def.mutable_attr())["_class"];
    for (const std::string& entry : scope_.colocate_with()) classes.mutable_list()->add_s(entry);
  }
  std::string prefix = NodeErrorPrefix(def);
  auto op = g->registry()->Find(op_type_);
  if (!op.ok()) {
    scope_.UpdateStatus(op.status());
    return Operation();
  }
  const OpDef& op_def = **op;
  if (args_.size() != op_def.inputs.size()) {
    scope_.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat(prefix, "given ", args_.size(), " input argument(s) but takes ",
                     op_def.inputs.size(), "; signature: ", op_def.Signature())));
    return Operation();
  }
  for (auto& [name, value] : attrs_) (*def.mutable_attr())[name] = value;
  // Resolve type and length attrs from the non-literal inputs.
  for (size_t a = 0; a < args_.size(); ++a) {
    const ArgDef& arg = op_def.inputs[a];
    if (!arg.type_list_attr.empty() && !def.attr().contains(arg.type_list_attr)) {
      AttrValue types;
      types.mutable_list();  // an empty list is still a list
      for (const auto& item : args_[a].items) {
        DataType t = item.is_literal()       ? item.value().dtype()
                     : item.output().valid() ? item.output().dtype()
                                             : DT_INVALID;
        types.mutable_list()->add_type(t);
      }
      (*def.mutable_attr())[arg.type_list_attr] = types;
    }
    if (!arg.number_attr.empty() && !def.attr().contains(arg.number_attr)) {
      (*def.mutable_attr())[arg.number_attr] =
          MakeAttr(static_cast<int64_t>(args_[a].items.size()));
    }
    if (arg.type_attr.empty() || def.attr().contains(arg.type_attr)) continue;
    for (const auto& item : args_[a].items) {
      if (!item.is_literal()) {
        if (!item.output().valid()) {
          scope_.UpdateStatus(absl::InvalidArgumentError(
              absl::StrCat(prefix, "input '", arg.name, "' is an invalid Output")));
          return Operation();
        }
        (*def.mutable_attr())[arg.type_attr] = MakeAttr(item.output().dtype());
        break;
      }
    }
  }
  // Then from literals, for attrs no other input fixed.
  for (size_t a = 0; a < args_.size(); ++a) {
    const ArgDef& arg = op_def.inputs[a];
    if (arg.type_attr.empty() || def.attr().contains(arg.type_attr)) continue;
    if (!args_[a].items.empty() && args_[a].items[0].value().IsInitialized()) {
      (*def.mutable_attr())[arg.type_attr] = MakeAttr(args_[a].items[0].value().dtype());
    }
  }
  // Materialise the inputs, literals as Consts of the expected type.
  std::vector<Output> inputs;
  for (size_t a = 0; a < args_.size(); ++a) {
    const ArgDef& arg = op_def.inputs[a];
    DataType want = arg.type;
    if (!arg.type_attr.empty() && def.attr().contains(arg.type_attr)) {
      want = def.attr().at(arg.type_attr).type();
    }
    for (const auto& item : args_[a].items) {
      if (!item.is_literal()) {
        if (!item.output().valid()) {
          scope_.UpdateStatus(absl::InvalidArgumentError(
              absl::StrCat(prefix, "input '", arg.name, "' is an invalid Output")));
          return Operation();
        }
        inputs.push_back(item.output());
        continue;
      }
      Tensor value = item.value();
      if (!value.IsInitialized()) {
        scope_.UpdateStatus(absl::InvalidArgumentError(
            absl::StrCat(prefix, "input '", arg.name, "' is a malformed literal (ragged rows?)")));
        return Operation();
      }
      if (want != DT_INVALID && want != value.dtype()) {
        auto cast = CastTensor(value, want);
        if (!cast.ok()) {
          scope_.UpdateStatus(WithContext(cast.status(), prefix));
          return Operation();
        }
        value = *cast;
      }
      Scope const_scope =
          scope_.WithOpName(absl::StrCat(def.name(), "/", arg.name)).WithNoControlDependencies();
      Operation c = OpBuilder(const_scope, "Const")
                        .Attr("value", value)
                        .Attr("dtype", value.dtype())
                        .Finalize();
      if (!c.valid()) return Operation();
      inputs.push_back(Output(c.node(), 0));
    }
  }
  auto node = g->AddNode(def);
  if (!node.ok()) {
    scope_.UpdateStatus(node.status());
    return Operation();
  }
  Node* n = *node;
  auto fail = [&](const absl::Status& s) {
    g->RemoveNode(n);
    scope_.UpdateStatus(s);
    return Operation();
  };
  if (static_cast<int>(inputs.size()) != n->num_inputs()) {
    return fail(absl::InvalidArgumentError(absl::StrCat(prefix, "got ", inputs.size(),
                                                        " inputs but takes ", n->num_inputs(),
                                                        "; signature: ", op_def.Signature())));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto e = g->AddEdge(inputs[i].node(), inputs[i].index(), n, static_cast<int>(i));
    if (!e.ok()) return fail(e.status());
  }
  for (Node* dep : scope_.control_deps()) g->AddControlEdge(dep, n);
  for (const Operation& dep : control_inputs_) {
    if (dep.valid()) g->AddControlEdge(dep.node(), n);
  }
  absl::Status s = g->InferShapes(n);
  if (!s.ok()) return fail(s);
  return Operation(n);
}

}  // namespace shardflow
