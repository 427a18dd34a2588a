// OpDef and OpRegistry: what an op is (inputs, outputs, attrs, shape function) and where ops are
// looked up by name.
//
// Ops are registered once, at static-initialisation time, from a compact signature:
//
//   REGISTER_OP("MatMul")
//       .Input("a: T")
//       .Input("b: T")
//       .Output("product: T")
//       .Attr("transpose_a: bool = false")
//       .Attr("transpose_b: bool = false")
//       .Attr("T: {float, double, half, bfloat16}")
//       .SetShapeFn(MatMulShape)
//       .Doc("Matrix product of two rank-2 tensors.");
//
// Argument specs: "name: T" (type from attr T), "name: float" (fixed type), "name: N * T" (a list
// of N tensors of type T). Attr specs: "name: type", "name: int = 0", "name: {float, int32}"
// (a type attr restricted to those types), "name: int >= 1", "name: list(int) = []".
//
// Thread safety: the registry is filled before main() and read-only afterwards.
#ifndef SHARDFLOW_CORE_FRAMEWORK_OP_DEF_H_
#define SHARDFLOW_CORE_FRAMEWORK_OP_DEF_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/op_cost.h"
#include "core/framework/types.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

class InferenceContext;
using ShapeFn = std::function<absl::Status(InferenceContext*)>;

struct ArgDef {
  std::string name;
  DataType type = DT_INVALID;  // fixed type, or DT_INVALID when type_attr names it
  std::string type_attr;
  std::string number_attr;  // non-empty for a list of `number_attr` tensors
  // Non-empty for a list of tensors of different types: the list(type) attr naming them, one
  // type per tensor ("input: T" with "T: list(type)").
  std::string type_list_attr;
};

struct AttrDef {
  std::string name;
  std::string type;  // "type", "int", "float", "bool", "string", "shape", "tensor", "list(int)"...
  bool has_default = false;
  AttrValue default_value;
  std::vector<DataType> allowed_types;  // for "type" attrs; empty = any
  bool has_minimum = false;
  int64_t minimum = 0;
};

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;
  // The op's floating-point work for the cost model; null = a couple per element.
  FlopsFn flops_fn;
  // Stateful ops (variables, random) are never deduplicated or constant-folded.
  bool is_stateful = false;
  std::string doc;

  const AttrDef* FindAttr(const std::string& attr_name) const;
  // "MatMul(a: T, b: T) -> (product: T); T in {float, double}" for error messages and --help.
  std::string Signature() const;
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name);
  OpDefBuilder& Input(std::string spec);
  OpDefBuilder& Output(std::string spec);
  OpDefBuilder& Attr(std::string spec);
  OpDefBuilder& SetShapeFn(ShapeFn fn);
  OpDefBuilder& SetFlopsFn(FlopsFn fn);
  OpDefBuilder& SetIsStateful();
  OpDefBuilder& Doc(std::string doc);
  // Parses every spec; an error names the op and the bad spec.
  absl::StatusOr<OpDef> Finalize() const;

 private:
  OpDef def_;
  std::vector<std::string> inputs_, outputs_, attrs_;
};

class OpRegistry {
 public:
  static OpRegistry* Global();
  // Error when an op of that name exists already.
  absl::Status Register(OpDef def);
  // nullptr when unknown.
  const OpDef* LookUp(const std::string& name) const;
  // NotFound naming the op and suggesting similar names when unknown.
  absl::StatusOr<const OpDef*> Find(const std::string& name) const;
  std::vector<std::string> ListOpNames() const;

 private:
  std::map<std::string, std::unique_ptr<OpDef>> ops_;
};

// Registers at construction; a malformed registration is a bug in shardflow itself and aborts
// the process with the message.
struct OpRegistration {
  OpRegistration(const OpDefBuilder& builder);  // NOLINT: implicit for REGISTER_OP
};

#define SF_OP_UNIQ_HELPER(ctr, name) \
  static ::shardflow::OpRegistration sf_op_registration_##ctr = ::shardflow::OpDefBuilder(name)
#define SF_OP_UNIQ(ctr, name) SF_OP_UNIQ_HELPER(ctr, name)
#define REGISTER_OP(name) SF_OP_UNIQ(__COUNTER__, name)

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_OP_DEF_H_
