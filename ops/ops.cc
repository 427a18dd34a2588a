#include "ops/ops.h"

namespace shardflow {
namespace ops {
namespace {
Output First(const Operation& op) { return op.valid() ? Output(op.node(), 0) : Output(); }
Output Unary(const Scope& s, const char* op, const Input& x) {
  return First(OpBuilder(s, op).Input(x).Finalize());
}
Output Binary(const Scope& s, const char* op, const Input& x, const Input& y) {
  return First(OpBuilder(s, op).Input(x).Input(y).Finalize());
}
Output Reduction(const Scope& s, const char* op, const Input& x, const Input& axes,
                 bool keep_dims) {
  return First(OpBuilder(s, op).Input(x).Input(axes).Attr("keep_dims", keep_dims).Finalize());
}
}  // namespace

Output Const(const Scope& s, const Input& value) {
  if (!value.is_literal()) return Identity(s, value);
  if (!value.value().IsInitialized()) {
    s.UpdateStatus(absl::InvalidArgumentError("Const: malformed literal (ragged rows?)"));
    return Output();
  }
  return First(OpBuilder(s, "Const")
                   .Attr("value", value.value())
                   .Attr("dtype", value.value().dtype())
                   .Finalize());
}

Output Placeholder(const Scope& s, DataType dtype, const TensorShape& shape) {
  return First(OpBuilder(s, "Placeholder").Attr("dtype", dtype).Attr("shape", shape).Finalize());
}

Output Identity(const Scope& s, const Input& x) { return Unary(s, "Identity", x); }
Output StopGradient(const Scope& s, const Input& x) { return Unary(s, "StopGradient", x); }
Operation NoOp(const Scope& s) { return OpBuilder(s, "NoOp").Finalize(); }
Output Reshape(const Scope& s, const Input& x, const Input& shape) {
  return Binary(s, "Reshape", x, shape);
}
Output Transpose(const Scope& s, const Input& x, const Input& perm) {
  return Binary(s, "Transpose", x, perm);
}
Output Concat(const Scope& s, const std::vector<Input>& values, const Input& axis) {
  return First(OpBuilder(s, "Concat").InputList(values).Input(axis).Finalize());
}
Output Slice(const Scope& s, const Input& x, const Input& begin, const Input& size) {
  return First(OpBuilder(s, "Slice").Input(x).Input(begin).Input(size).Finalize());
}
Output Cast(const Scope& s, const Input& x, DataType dtype) {
  return First(OpBuilder(s, "Cast").Input(x).Attr("DstT", dtype).Finalize());
}
Output Fill(const Scope& s, const Input& dims, const Input& value) {
  return Binary(s, "Fill", dims, value);
}
Output Shape(const Scope& s, const Input& x, DataType out_type) {
  return First(OpBuilder(s, "Shape").Input(x).Attr("out_type", out_type).Finalize());
}
Output ZerosLike(const Scope& s, const Input& x) { return Unary(s, "ZerosLike", x); }
Output OnesLike(const Scope& s, const Input& x) { return Unary(s, "OnesLike", x); }
Output ExpandDims(const Scope& s, const Input& x, const Input& axis) {
  return Binary(s, "ExpandDims", x, axis);
}
Output Squeeze(const Scope& s, const Input& x, const std::vector<int64_t>& dims) {
  return First(OpBuilder(s, "Squeeze").Input(x).Attr("squeeze_dims", dims).Finalize());
}

#define SF_UNARY_BUILDER(NAME) \
  Output NAME(const Scope& s, const Input& x) { return Unary(s, #NAME, x); }
#define SF_BINARY_BUILDER(NAME) \
  Output NAME(const Scope& s, const Input& x, const Input& y) { return Binary(s, #NAME, x, y); }
#define SF_REDUCTION_BUILDER(NAME)                                                 \
  Output NAME(const Scope& s, const Input& x, const Input& axes, bool keep_dims) { \
    return Reduction(s, #NAME, x, axes, keep_dims);                                \
  }
SF_UNARY_BUILDER(Neg)
SF_UNARY_BUILDER(Abs)
SF_UNARY_BUILDER(Square)
SF_UNARY_BUILDER(Sign)
SF_UNARY_BUILDER(Relu)
SF_UNARY_BUILDER(Sqrt)
SF_UNARY_BUILDER(Rsqrt)
SF_UNARY_BUILDER(Exp)
SF_UNARY_BUILDER(Log)
SF_UNARY_BUILDER(Tanh)
SF_UNARY_BUILDER(Sigmoid)
SF_UNARY_BUILDER(Reciprocal)
SF_UNARY_BUILDER(Floor)
SF_UNARY_BUILDER(Ceil)
SF_UNARY_BUILDER(Round)
SF_UNARY_BUILDER(Sin)
SF_UNARY_BUILDER(Cos)
SF_UNARY_BUILDER(Log1p)
SF_UNARY_BUILDER(Expm1)
SF_UNARY_BUILDER(Erf)
SF_UNARY_BUILDER(IsNan)
SF_UNARY_BUILDER(IsInf)
SF_UNARY_BUILDER(IsFinite)
SF_UNARY_BUILDER(LogicalNot)
Output Select(const Scope& s, const Input& condition, const Input& t, const Input& e) {
  return First(OpBuilder(s, "Select").Input(condition).Input(t).Input(e).Finalize());
}
Output SelectV2(const Scope& s, const Input& condition, const Input& t, const Input& e) {
  return First(OpBuilder(s, "SelectV2").Input(condition).Input(t).Input(e).Finalize());
}
SF_BINARY_BUILDER(Add)
SF_BINARY_BUILDER(Sub)
SF_BINARY_BUILDER(Mul)
SF_BINARY_BUILDER(Div)
SF_BINARY_BUILDER(FloorDiv)
SF_BINARY_BUILDER(FloorMod)
SF_BINARY_BUILDER(Maximum)
SF_BINARY_BUILDER(Minimum)
SF_BINARY_BUILDER(Pow)
SF_BINARY_BUILDER(SquaredDifference)
SF_BINARY_BUILDER(Equal)
SF_BINARY_BUILDER(NotEqual)
SF_BINARY_BUILDER(Less)
SF_BINARY_BUILDER(LessEqual)
SF_BINARY_BUILDER(Greater)
SF_BINARY_BUILDER(GreaterEqual)
SF_BINARY_BUILDER(LogicalAnd)
SF_BINARY_BUILDER(LogicalOr)
SF_REDUCTION_BUILDER(Sum)
SF_REDUCTION_BUILDER(Mean)
SF_REDUCTION_BUILDER(Max)
SF_REDUCTION_BUILDER(Min)
SF_REDUCTION_BUILDER(Prod)

Output AddN(const Scope& s, const std::vector<Input>& inputs) {
  return First(OpBuilder(s, "AddN").InputList(inputs).Finalize());
}
Output ArgMax(const Scope& s, const Input& x, const Input& dimension, DataType out_type) {
  return First(
      OpBuilder(s, "ArgMax").Input(x).Input(dimension).Attr("output_type", out_type).Finalize());
}
Output MatMul(const Scope& s, const Input& a, const Input& b, bool transpose_a, bool transpose_b) {
  return First(OpBuilder(s, "MatMul")
                   .Input(a)
                   .Input(b)
                   .Attr("transpose_a", transpose_a)
                   .Attr("transpose_b", transpose_b)
                   .Finalize());
}
Output BatchMatMul(const Scope& s, const Input& x, const Input& y, bool adj_x, bool adj_y) {
  return First(OpBuilder(s, "BatchMatMulV2")
                   .Input(x)
                   .Input(y)
                   .Attr("adj_x", adj_x)
                   .Attr("adj_y", adj_y)
                   .Finalize());
}

Output CollectiveReduce(const Scope& s, const Input& x, int group_size, int64_t group_key,
                        int64_t instance_key, const std::string& merge_op,
                        const std::string& final_op) {
  return First(OpBuilder(s, "CollectiveReduce")
                   .Input(x)
                   .Attr("group_size", group_size)
                   .Attr("group_key", group_key)
                   .Attr("instance_key", instance_key)
                   .Attr("merge_op", merge_op)
                   .Attr("final_op", final_op)
                   .Finalize());
}
Output CollectiveBcastSend(const Scope& s, const Input& x, int group_size, int64_t group_key,
                           int64_t instance_key, const TensorShape& shape) {
  return First(OpBuilder(s, "CollectiveBcastSend")
                   .Input(x)
                   .Attr("group_size", group_size)
                   .Attr("group_key", group_key)
                   .Attr("instance_key", instance_key)
                   .Attr("shape", shape)
                   .Finalize());
}
Output CollectiveBcastRecv(const Scope& s, DataType dtype, const TensorShape& shape, int group_size,
                           int64_t group_key, int64_t instance_key) {
  return First(OpBuilder(s, "CollectiveBcastRecv")
                   .Attr("T", dtype)
                   .Attr("shape", shape)
                   .Attr("group_size", group_size)
                   .Attr("group_key", group_key)
                   .Attr("instance_key", instance_key)
                   .Finalize());
}
Output CollectiveGather(const Scope& s, const Input& x, int group_size, int64_t group_key,
                        int64_t instance_key) {
  return First(OpBuilder(s, "CollectiveGather")
                   .Input(x)
                   .Attr("group_size", group_size)
                   .Attr("group_key", group_key)
                   .Attr("instance_key", instance_key)
                   .Finalize());
}

}  // namespace ops
}  // namespace shardflow
