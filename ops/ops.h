// The C++ op API: one function per op, building a node in a Scope.
//
//   Scope s = Scope::NewRootScope();
//   auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, {-1, 3});
//   auto y = ops::Sum(s, ops::Square(s, x), {1}, /*keep_dims=*/true);
//
// Each returns an Output (or Operation for ops without outputs). After an error every later
// call returns an invalid Output and scope.status() holds the first error.
#ifndef SHARDFLOW_OPS_OPS_H_
#define SHARDFLOW_OPS_OPS_H_

#include <vector>

#include "ops/scope.h"

namespace shardflow {
namespace ops {

// ---- array ----
Output Const(const Scope& s, const Input& value);
Output Placeholder(const Scope& s, DataType dtype,
                   const TensorShape& shape = TensorShape::Unknown());
Output Identity(const Scope& s, const Input& x);
Output StopGradient(const Scope& s, const Input& x);
Operation NoOp(const Scope& s);
Output Reshape(const Scope& s, const Input& x, const Input& shape);
Output Transpose(const Scope& s, const Input& x, const Input& perm);
Output Concat(const Scope& s, const std::vector<Input>& values, const Input& axis);
Output Slice(const Scope& s, const Input& x, const Input& begin, const Input& size);
Output Cast(const Scope& s, const Input& x, DataType dtype);
Output Fill(const Scope& s, const Input& dims, const Input& value);
Output Shape(const Scope& s, const Input& x, DataType out_type = DT_INT32);
Output ZerosLike(const Scope& s, const Input& x);
Output OnesLike(const Scope& s, const Input& x);
Output ExpandDims(const Scope& s, const Input& x, const Input& axis);
Output Squeeze(const Scope& s, const Input& x, const std::vector<int64_t>& dims = {});

// ---- element-wise ----
Output Neg(const Scope& s, const Input& x);
Output Abs(const Scope& s, const Input& x);
Output Square(const Scope& s, const Input& x);
Output Sign(const Scope& s, const Input& x);
Output Relu(const Scope& s, const Input& x);
Output Sqrt(const Scope& s, const Input& x);
Output Rsqrt(const Scope& s, const Input& x);
Output Exp(const Scope& s, const Input& x);
Output Log(const Scope& s, const Input& x);
Output Tanh(const Scope& s, const Input& x);
Output Sigmoid(const Scope& s, const Input& x);
Output Reciprocal(const Scope& s, const Input& x);
Output Floor(const Scope& s, const Input& x);
Output Ceil(const Scope& s, const Input& x);
Output Round(const Scope& s, const Input& x);
Output Sin(const Scope& s, const Input& x);
Output Cos(const Scope& s, const Input& x);
Output Log1p(const Scope& s, const Input& x);
Output Expm1(const Scope& s, const Input& x);
Output Erf(const Scope& s, const Input& x);
Output IsNan(const Scope& s, const Input& x);
Output IsInf(const Scope& s, const Input& x);
Output IsFinite(const Scope& s, const Input& x);
Output LogicalNot(const Scope& s, const Input& x);

Output Add(const Scope& s, const Input& x, const Input& y);
Output Sub(const Scope& s, const Input& x, const Input& y);
Output Mul(const Scope& s, const Input& x, const Input& y);
Output Div(const Scope& s, const Input& x, const Input& y);
// Rounding toward minus infinity, as Python's // and %.
Output FloorDiv(const Scope& s, const Input& x, const Input& y);
Output FloorMod(const Scope& s, const Input& x, const Input& y);
Output Maximum(const Scope& s, const Input& x, const Input& y);
Output Minimum(const Scope& s, const Input& x, const Input& y);
Output Pow(const Scope& s, const Input& x, const Input& y);
Output SquaredDifference(const Scope& s, const Input& x, const Input& y);
Output Equal(const Scope& s, const Input& x, const Input& y);
Output NotEqual(const Scope& s, const Input& x, const Input& y);
Output Less(const Scope& s, const Input& x, const Input& y);
Output LessEqual(const Scope& s, const Input& x, const Input& y);
Output Greater(const Scope& s, const Input& x, const Input& y);
Output GreaterEqual(const Scope& s, const Input& x, const Input& y);
Output LogicalAnd(const Scope& s, const Input& x, const Input& y);
Output LogicalOr(const Scope& s, const Input& x, const Input& y);
Output AddN(const Scope& s, const std::vector<Input>& inputs);
// t where `condition` is true, else e. Select: t and e of one shape, condition of that shape,
// a vector over its first dimension, or a scalar (TF1's tf.where). SelectV2 broadcasts all three.
Output Select(const Scope& s, const Input& condition, const Input& t, const Input& e);
Output SelectV2(const Scope& s, const Input& condition, const Input& t, const Input& e);

// ---- reductions ----
Output Sum(const Scope& s, const Input& x, const Input& axes, bool keep_dims = false);
Output Mean(const Scope& s, const Input& x, const Input& axes, bool keep_dims = false);
Output Max(const Scope& s, const Input& x, const Input& axes, bool keep_dims = false);
Output Min(const Scope& s, const Input& x, const Input& axes, bool keep_dims = false);
Output Prod(const Scope& s, const Input& x, const Input& axes, bool keep_dims = false);
Output ArgMax(const Scope& s, const Input& x, const Input& dimension, DataType out_type = DT_INT64);

// ---- collectives (ops/collective_ops.cc; docs/distributed.md "Collectives") ----
// One op per device of a group of group_size devices, each with the same group_key and
// instance_key; a session runs every member in one step (in-graph replication).
// merge_op: "Add", "Mul", "Min", "Max"; final_op: "Id" or "Div" (with Add: the mean).
Output CollectiveReduce(const Scope& s, const Input& x, int group_size, int64_t group_key,
                        int64_t instance_key, const std::string& merge_op = "Add",
                        const std::string& final_op = "Id");
// A broadcast: one member sends `x`, the others receive a tensor of `shape`.
Output CollectiveBcastSend(const Scope& s, const Input& x, int group_size, int64_t group_key,
                           int64_t instance_key, const TensorShape& shape);
Output CollectiveBcastRecv(const Scope& s, DataType dtype, const TensorShape& shape, int group_size,
                           int64_t group_key, int64_t instance_key);
// All-gather: the members' inputs (one shape) concatenated along dimension 0, in rank order.
Output CollectiveGather(const Scope& s, const Input& x, int group_size, int64_t group_key,
                        int64_t instance_key);

// ---- linear algebra ----
Output MatMul(const Scope& s, const Input& a, const Input& b, bool transpose_a = false,
              bool transpose_b = false);
// [..., m, k] x [..., k, n], batch dimensions broadcast (BatchMatMulV2).
Output BatchMatMul(const Scope& s, const Input& x, const Input& y, bool adj_x = false,
                   bool adj_y = false);

// ---- control flow (ops/control_flow_ops.cc) ----
// A graph function from ops built in their own root scope: `args` are its Placeholders, in
// order; `rets` what it returns. Errors: the scope's build error.
absl::StatusOr<GraphFunction> MakeFunction(const Scope& root, const std::vector<Output>& args,
                                           const std::vector<Output>& rets);
// while cond(vars..., captured...): vars = body(vars..., captured...). Returns the final value of
// each loop variable. `keep_history` (TF1's back_prop) makes the loop differentiable.
std::vector<Output> While(const Scope& s, const std::vector<Input>& vars,
                          const std::vector<Input>& captured, const GraphFunction& cond,
                          const GraphFunction& body, bool keep_history = true);
// then_branch(inputs...) when `cond` (a bool scalar) is true, else else_branch(inputs...); both
// return values of `out_types` (of `output_shapes`, when given). Only the branch taken runs.
std::vector<Output> If(const Scope& s, const Input& cond, const std::vector<Input>& inputs,
                       const GraphFunction& then_branch, const GraphFunction& else_branch,
                       const std::vector<DataType>& out_types,
                       const std::vector<TensorShape>& output_shapes = {});

}  // namespace ops
}  // namespace shardflow

#endif  // SHARDFLOW_OPS_OPS_H_
