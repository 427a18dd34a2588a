// The C++ graph-building API: Scope, Output, Input and OpBuilder.
//
//   Scope root = Scope::NewRootScope();
//   Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, TensorShape({-1, 784}));
//   Scope layer = root.NewSubScope("dense");                 // names "dense/..."
//   Output w = ops::Const(layer, Tensor(DT_FLOAT, {784, 10}));
//   Output y = ops::Relu(layer, ops::MatMul(layer, x, w));   // dtype and shape inferred now
//   Output z = ops::Mul(root, y, 2.0f);                       // literals become Consts
//   if (!root.ok()) ...root.status() names the first bad node...
//   GraphDef def; SF_RETURN_IF_ERROR(root.ToGraphDef(&def));
//
// Every node is validated and shape-inferred as it is added; the first error is kept in the
// scope (shared by all scopes derived from one root) and later ops become no-ops, so a builder
// function can be written without checking every call.
//
// Thread safety: a Scope tree is not thread-safe; build a graph from one thread.
#ifndef SHARDFLOW_OPS_SCOPE_H_
#define SHARDFLOW_OPS_SCOPE_H_

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/framework/attr_value.h"
#include "core/graph/graph.h"

namespace shardflow {

class Scope;

// An operation in the graph being built (possibly invalid after an error).
class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* node) : node_(node) {}
  Node* node() const { return node_; }
  bool valid() const { return node_ != nullptr; }
  std::string name() const { return node_ ? node_->name() : "<invalid>"; }

 private:
  Node* node_ = nullptr;
};

// One output tensor of an operation.
class Output {
 public:
  Output() = default;
  Output(Node* node, int index) : node_(node), index_(index) {}
  explicit Output(const Operation& op, int index = 0) : node_(op.node()), index_(index) {}
  Node* node() const { return node_; }
  int index() const { return index_; }
  bool valid() const { return node_ != nullptr; }
  Operation op() const { return Operation(node_); }
  DataType dtype() const { return node_ ? node_->output_type(index_) : DT_INVALID; }
  // The shape inferred at build time (may have unknown dimensions).
  TensorShape shape() const { return node_ ? node_->output_shape(index_) : TensorShape::Unknown(); }
  // "name:index", the form Session::Run takes.
  std::string name() const;

 private:
  Node* node_ = nullptr;
  int index_ = 0;
};

// Anything usable as an op input: an Output, or a value that becomes a Const node. Literal
// numbers are converted to the dtype the op needs when another input fixes it
// (ops::Mul(s, x_float, 2) multiplies by 2.0f).
class Input {
 public:
  Input(const Output& output) : output_(output) {}                  // NOLINT: implicit by design
  Input(const Tensor& value) : value_(value), is_literal_(true) {}  // NOLINT
  Input(float v) : Input(Tensor::Scalar(v)) {}                      // NOLINT
  Input(double v) : Input(Tensor::Scalar(v)) {}                     // NOLINT
  Input(int v) : Input(Tensor::Scalar<int32_t>(v)) {}               // NOLINT
  Input(int64_t v) : Input(Tensor::Scalar<int64_t>(v)) {}           // NOLINT
  Input(bool v) : Input(Tensor::Scalar(v)) {}                       // NOLINT
  Input(std::initializer_list<float> v);
  Input(std::initializer_list<double> v);
  Input(std::initializer_list<int> v);
  Input(std::initializer_list<int64_t> v);
  Input(std::initializer_list<std::initializer_list<float>> rows);

  bool is_literal() const { return is_literal_; }
  const Output& output() const { return output_; }
  const Tensor& value() const { return value_; }

 private:
  Output output_;
  Tensor value_;
  bool is_literal_ = false;
};

// A variable created in a graph (see ops/training.h): its handle, its read, its initializer.
struct VariableInfo {
  Node* handle = nullptr;       // VarHandleOp
  Node* read = nullptr;         // ReadVariableOp, the value used by the model
  Node* initializer = nullptr;  // AssignVariableOp of the initial value
  bool trainable = true;        // false for optimizer slots and counters
};

class Scope {
 public:
  // A new, empty graph.
  static Scope NewRootScope();

  // The next op built gets exactly this name (inside the current name scope).
  Scope WithOpName(const std::string& name) const;
  // The next op is named exactly `name`, ignoring the current name scope.
  Scope WithAbsoluteOpName(const std::string& name) const;
  // Ops built under the result are named "<prefix>/<name>/...".
  Scope NewSubScope(const std::string& name) const;
  // Ops built under the result request this device (full or partial spec).
  Scope WithDevice(const std::string& device) const;
  // Ops built under the result share a device with `op` (its colocation group; see
  // partitioner/placer.h). They get the attr _class = ["loc:@<op name>"].
  Scope ColocateWith(const Operation& op) const;
  Scope ColocateWith(const Output& output) const { return ColocateWith(output.op()); }
  Scope ClearColocation() const;
  // Ops built under the result run after these (control edges).
  Scope WithControlDependencies(const std::vector<Operation>& ops) const;
  Scope WithControlDependencies(const Output& output) const;
  Scope WithNoControlDependencies() const;

  Graph* graph() const { return shared_->graph.get(); }
  bool ok() const { return shared_->status.ok(); }
  absl::Status status() const { return shared_->status; }
  // Keeps the first error.
  void UpdateStatus(const absl::Status& s) const;
  // The status of the build, and the graph as a GraphDef when ok.
  absl::Status ToGraphDef(GraphDef* def) const;

  // The name the next op of this type gets: the WithOpName name, else "<prefix>/<Op>[_k]".
  std::string UniqueNameForOp(const std::string& op_type) const;
  const std::string& device() const { return device_; }
  // Variables created anywhere in this scope's graph, in creation order.
  const std::vector<VariableInfo>& variables() const { return shared_->variables; }
  void AddVariable(const VariableInfo& info) const { shared_->variables.push_back(info); }
  const std::vector<Node*>& control_deps() const { return control_deps_; }
  const std::vector<std::string>& colocate_with() const { return colocate_with_; }

 private:
  struct Shared {
    std::unique_ptr<Graph> graph;
    absl::Status status;
    std::vector<VariableInfo> variables;
  };
  Scope() = default;

  std::shared_ptr<Shared> shared_;
  std::string prefix_;
  std::string op_name_;
  std::string device_;
  std::vector<Node*> control_deps_;
  std::vector<std::string> colocate_with_;  // "loc:@name" entries
};

// Builds one node: resolves type attrs from the inputs (T = dtype of the first input typed T,
// N = length of a list input), turns literals into Consts of the resolved type, adds the node,
// connects it, and infers its shapes. Errors go into the scope.
//
//   Operation op = OpBuilder(scope, "MatMul").Input(a).Input(b).Attr("transpose_b",
//   true).Finalize();
class OpBuilder {
 public:
  OpBuilder(const Scope& scope, std::string op_type);
  OpBuilder& Input(const ::shardflow::Input& input);
  OpBuilder& InputList(const std::vector<::shardflow::Input>& inputs);
  OpBuilder& ControlInput(const Operation& op);
  template <typename T>
  OpBuilder& Attr(const std::string& name, const T& value) {
    attrs_[name] = MakeAttr(value);
    return *this;
  }
  OpBuilder& Attr(const std::string& name, AttrValue value) {
    attrs_[name] = std::move(value);
    return *this;
  }
  // The new operation, or an invalid one after an error (then scope.status() says why).
  Operation Finalize();

 private:
  struct Arg {
    bool is_list = false;
    std::vector<::shardflow::Input> items;
  };
  const Scope& scope_;
  std::string op_type_;
  std::vector<Arg> args_;
  std::vector<Operation> control_inputs_;
  std::map<std::string, AttrValue> attrs_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_OPS_SCOPE_H_
