// Math ops: element-wise unary and binary (NumPy broadcasting), comparisons, reductions, MatMul.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/fused_ops.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

#define SF_UNARY_OP(NAME, TYPES, DOC) \
  REGISTER_OP(NAME)                   \
      .Input("x: T")                  \
      .Output("y: T")                 \
      .Attr("T: " TYPES)              \
      .SetShapeFn(UnchangedShape)     \
      .Doc(DOC)

#define SF_BINARY_OP(NAME, TYPES, DOC)  \
  REGISTER_OP(NAME)                     \
      .Input("x: T")                    \
      .Input("y: T")                    \
      .Output("z: T")                   \
      .Attr("T: " TYPES)                \
      .SetShapeFn(BroadcastBinaryShape) \
      .Doc(DOC)

#define SF_COMPARE_OP(NAME, TYPES, DOC) \
  REGISTER_OP(NAME)                     \
      .Input("x: T")                    \
      .Input("y: T")                    \
      .Output("z: bool")                \
      .Attr("T: " TYPES)                \
      .SetShapeFn(BroadcastBinaryShape) \
      .Doc(DOC)

#define SF_FLOAT_TYPES "{float, double, half, bfloat16}"
#define SF_SIGNED_TYPES "{float, double, half, bfloat16, int32, int64}"
#define SF_REAL_TYPES "{float, double, half, bfloat16, int8, uint8, int32, int64}"
#define SF_INT_TYPES "{int8, uint8, int32, int64}"

absl::Status ReductionShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  bool keep_dims;
  SF_RETURN_IF_ERROR(c->GetAttr("keep_dims", &keep_dims));
  std::vector<int64_t> axes;
  if (!c->GetConstantInts(1, &axes) || in.unknown_rank()) {
    c->set_output(0, keep_dims && !in.unknown_rank() ? TensorShape::UnknownOfRank(in.rank())
                                                     : TensorShape::Unknown());
    return absl::OkStatus();
  }
  int rank = in.rank();
  std::vector<bool> reduce(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return c->InvalidArgument(absl::StrCat("reduction axis ", a, " is out of range for rank ",
                                             rank, "; valid: [", -rank, ", ", rank, ")"));
    }
    reduce[a < 0 ? a + rank : a] = true;
  }
  TensorShape out;
  for (int i = 0; i < rank; ++i) {
    if (!reduce[i]) {
      out.AddDim(in.dim(i));
    } else if (keep_dims) {
      out.AddDim(1);
    }
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status ArgMaxShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  std::vector<int64_t> axis;
  if (in.unknown_rank() || !c->GetConstantInts(1, &axis)) {
    c->set_output(
        0, in.unknown_rank() ? TensorShape::Unknown() : TensorShape::UnknownOfRank(in.rank() - 1));
    return absl::OkStatus();
  }
  if (axis.size() != 1) return c->InvalidArgument("dimension must be a scalar");
  int64_t a = axis[0];
  if (a < -in.rank() || a >= in.rank()) {
    return c->InvalidArgument(
        absl::StrCat("dimension ", a, " is out of range for rank ", in.rank()));
  }
  if (a < 0) a += in.rank();
  TensorShape out = in;
  out.RemoveDim(static_cast<int>(a));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status MatMulShape(InferenceContext* c) {
  TensorShape a, b;
  SF_RETURN_IF_ERROR(c->WithRank(0, 2, &a));
  SF_RETURN_IF_ERROR(c->WithRank(1, 2, &b));
  bool ta, tb;
  SF_RETURN_IF_ERROR(c->GetAttr("transpose_a", &ta));
  SF_RETURN_IF_ERROR(c->GetAttr("transpose_b", &tb));
  int64_t m = a.dim(ta ? 1 : 0), ka = a.dim(ta ? 0 : 1);
  int64_t kb = b.dim(tb ? 1 : 0), n = b.dim(tb ? 0 : 1);
  if (ka >= 0 && kb >= 0 && ka != kb) {
    return c->InvalidArgument(absl::StrCat("inner dimensions differ: a is ", a.DebugString(),
                                           ta ? " (transposed)" : "", ", b is ", b.DebugString(),
                                           tb ? " (transposed)" : "", "; a's columns (", ka,
                                           ") must equal b's rows (", kb, ")"));
  }
  c->set_output(0, TensorShape({m, n}));
  return absl::OkStatus();
}

// [m, k] x [k, n]: a multiply and an add per (m, n, k).
double MatMulFlops(const OpCostContext& c) {
  bool ta = false, tb = false;
  c.GetAttr("transpose_a", &ta);
  c.GetAttr("transpose_b", &tb);
  const TensorShape& a = c.input(0);
  const TensorShape& b = c.input(1);
  return 2 * c.Dim(a, ta ? 1 : 0) * c.Dim(a, ta ? 0 : 1) * c.Dim(b, tb ? 0 : 1);
}

// BatchMatMulV2: [..., m, k] x [..., k, n] -> [broadcast(...), m, n] (adj_x / adj_y transpose
// the last two dimensions of x / y first); batch dimensions broadcast as NumPy's.
absl::Status BatchMatMulShape(InferenceContext* c) {
  TensorShape x, y;
  SF_RETURN_IF_ERROR(c->WithRankAtLeast(0, 2, &x));
  SF_RETURN_IF_ERROR(c->WithRankAtLeast(1, 2, &y));
  if (x.unknown_rank() || y.unknown_rank()) {
    c->set_output(0, TensorShape::Unknown());
    return absl::OkStatus();
  }
  bool adj_x, adj_y;
  SF_RETURN_IF_ERROR(c->GetAttr("adj_x", &adj_x));
  SF_RETURN_IF_ERROR(c->GetAttr("adj_y", &adj_y));
  const int rx = x.rank(), ry = y.rank();
  const int64_t m = x.dim(adj_x ? rx - 1 : rx - 2), kx = x.dim(adj_x ? rx - 2 : rx - 1);
  const int64_t ky = y.dim(adj_y ? ry - 1 : ry - 2), n = y.dim(adj_y ? ry - 2 : ry - 1);
  if (kx >= 0 && ky >= 0 && kx != ky) {
    return c->InvalidArgument(absl::StrCat("inner dimensions differ: x is ", x.DebugString(),
                                           adj_x ? " (adjoint)" : "", ", y is ", y.DebugString(),
                                           adj_y ? " (adjoint)" : "", "; x's columns (", kx,
                                           ") must equal y's rows (", ky, ")"));
  }
  const std::vector<int64_t> xd(x.dims().begin(), x.dims().end() - 2);
  const std::vector<int64_t> yd(y.dims().begin(), y.dims().end() - 2);
  auto batch =
      BroadcastShapes(TensorShape(absl::MakeConstSpan(xd)), TensorShape(absl::MakeConstSpan(yd)));
  if (!batch.ok()) {
    return c->InvalidArgument(absl::StrCat("batch dimensions of x ", x.DebugString(), " and y ",
                                           y.DebugString(), ": ", batch.status().message()));
  }
  TensorShape out = *batch;
  out.AddDim(m);
  out.AddDim(n);
  c->set_output(0, out);
  return absl::OkStatus();
}

// A multiply and an add per (batch, m, n, k).
double BatchMatMulFlops(const OpCostContext& c) {
  bool adj_x = false, adj_y = false;
  c.GetAttr("adj_x", &adj_x);
  c.GetAttr("adj_y", &adj_y);
  const TensorShape& x = c.input(0);
  const TensorShape& y = c.input(1);
  if (x.unknown_rank() || y.unknown_rank() || x.rank() < 2 || y.rank() < 2) return 0;
  const int rx = x.rank(), ry = y.rank();
  double batch = 1;
  for (int d = 0; d < std::max(rx, ry) - 2; ++d) {
    const int ix = rx - std::max(rx, ry) + d, iy = ry - std::max(rx, ry) + d;
    batch *= std::max(ix >= 0 ? c.Dim(x, ix) : 1, iy >= 0 ? c.Dim(y, iy) : 1);
  }
  return 2 * batch * c.Dim(x, adj_x ? rx - 1 : rx - 2) * c.Dim(x, adj_x ? rx - 2 : rx - 1) *
         c.Dim(y, adj_y ? ry - 2 : ry - 1);
}

absl::Status FusedMatMulShape(InferenceContext* c) {
  SF_RETURN_IF_ERROR(MatMulShape(c));
  return CheckFusedBiasAndActivation(c, c->output(0).dim(1));
}

absl::Status AddNShape(InferenceContext* c) {
  TensorShape out = c->input(0);
  for (int i = 1; i < c->num_inputs(); ++i) {
    auto merged = out.Merge(c->input(i));
    if (!merged.ok()) {
      return c->InvalidArgument(absl::StrCat("input ", i, ": ", merged.status().message(),
                                             "; AddN needs inputs of one shape"));
    }
    out = *merged;
  }
  c->set_output(0, out);
  return absl::OkStatus();
}

}  // namespace

SF_UNARY_OP("Neg", SF_SIGNED_TYPES, "-x");
SF_UNARY_OP("Abs", SF_SIGNED_TYPES, "|x|");
SF_UNARY_OP("Square", SF_SIGNED_TYPES, "x * x");
SF_UNARY_OP("Sign", SF_SIGNED_TYPES, "-1, 0 or 1");
SF_UNARY_OP("Relu", SF_SIGNED_TYPES, "max(x, 0)");
SF_UNARY_OP("Sqrt", SF_FLOAT_TYPES, "square root");
SF_UNARY_OP("Rsqrt", SF_FLOAT_TYPES, "1 / sqrt(x)");
SF_UNARY_OP("Exp", SF_FLOAT_TYPES, "e^x");
SF_UNARY_OP("Log", SF_FLOAT_TYPES, "natural logarithm");
SF_UNARY_OP("Tanh", SF_FLOAT_TYPES, "hyperbolic tangent");
SF_UNARY_OP("Sigmoid", SF_FLOAT_TYPES, "1 / (1 + e^-x)");
SF_UNARY_OP("Reciprocal", SF_FLOAT_TYPES, "1 / x");
SF_UNARY_OP("Floor", SF_FLOAT_TYPES, "the largest integer not above x");
SF_UNARY_OP("Ceil", SF_FLOAT_TYPES, "the smallest integer not below x");
SF_UNARY_OP("Round", SF_FLOAT_TYPES, "x rounded to the nearest integer, halves to even");
SF_UNARY_OP("Sin", SF_FLOAT_TYPES, "sine");
SF_UNARY_OP("Cos", SF_FLOAT_TYPES, "cosine");
SF_UNARY_OP("Log1p", SF_FLOAT_TYPES, "log(1 + x), accurate for small x");
SF_UNARY_OP("Expm1", SF_FLOAT_TYPES, "e^x - 1, accurate for small x");
SF_UNARY_OP("Erf", SF_FLOAT_TYPES, "the error function");
SF_UNARY_OP("Lgamma", SF_FLOAT_TYPES, "log |gamma(x)|");
SF_UNARY_OP("Digamma", SF_FLOAT_TYPES,
            "the derivative of lgamma (psi); NaN at the poles 0, -1, -2, ...");
SF_UNARY_OP("Tan", SF_FLOAT_TYPES, "tangent");
SF_UNARY_OP("Asin", SF_FLOAT_TYPES, "arcsine (NaN outside [-1, 1])");
SF_UNARY_OP("Acos", SF_FLOAT_TYPES, "arccosine (NaN outside [-1, 1])");
SF_UNARY_OP("Atan", SF_FLOAT_TYPES, "arctangent");
SF_UNARY_OP("Sinh", SF_FLOAT_TYPES, "hyperbolic sine");
SF_UNARY_OP("Cosh", SF_FLOAT_TYPES, "hyperbolic cosine");
SF_UNARY_OP("Asinh", SF_FLOAT_TYPES, "inverse hyperbolic sine");
SF_UNARY_OP("Acosh", SF_FLOAT_TYPES, "inverse hyperbolic cosine (NaN below 1)");
SF_UNARY_OP("Atanh", SF_FLOAT_TYPES, "inverse hyperbolic tangent (NaN outside [-1, 1])");

#define SF_FLOAT_PREDICATE_OP(NAME, DOC) \
  REGISTER_OP(NAME)                      \
      .Input("x: T")                     \
      .Output("y: bool")                 \
      .Attr("T: " SF_FLOAT_TYPES)        \
      .SetShapeFn(UnchangedShape)        \
      .Doc(DOC)
SF_FLOAT_PREDICATE_OP("IsNan", "whether x is NaN");
SF_FLOAT_PREDICATE_OP("IsInf", "whether x is +Inf or -Inf");
SF_FLOAT_PREDICATE_OP("IsFinite", "whether x is neither NaN nor infinite");

SF_BINARY_OP("Add", SF_REAL_TYPES, "x + y");
SF_BINARY_OP("Sub", SF_REAL_TYPES, "x - y");
SF_BINARY_OP("Mul", SF_REAL_TYPES, "x * y");
SF_BINARY_OP("Div", SF_REAL_TYPES,
             "x / y (integer division truncates; division by zero is an error for integers)");
SF_BINARY_OP("FloorDiv", SF_REAL_TYPES,
             "floor(x / y), rounding toward minus infinity as Python's // (integer division by "
             "zero is an error)");
SF_BINARY_OP("FloorMod", SF_REAL_TYPES,
             "x - floor(x / y) * y: the remainder with the divisor's sign, as Python's %");
SF_BINARY_OP("Maximum", SF_REAL_TYPES, "max(x, y)");
SF_BINARY_OP("Minimum", SF_REAL_TYPES, "min(x, y)");
SF_BINARY_OP("Pow", SF_SIGNED_TYPES,
             "x ^ y (integers exact, wrapping on overflow; a negative integer exponent is an "
             "error)");
SF_BINARY_OP("BitwiseAnd", SF_INT_TYPES, "x & y");
SF_BINARY_OP("BitwiseOr", SF_INT_TYPES, "x | y");
SF_BINARY_OP("BitwiseXor", SF_INT_TYPES, "x ^ y (exclusive or)");
SF_BINARY_OP("LeftShift", SF_INT_TYPES,
             "x << y, the shift clamped to [0, bits - 1]; bits shifted out are lost");
SF_BINARY_OP("RightShift", SF_INT_TYPES,
             "x >> y, the shift clamped to [0, bits - 1]; arithmetic for signed types");
SF_UNARY_OP("Invert", SF_INT_TYPES, "~x, every bit flipped");
REGISTER_OP("PopulationCount")
    .Input("x: T")
    .Output("y: uint8")
    .Attr("T: " SF_INT_TYPES)
    .SetShapeFn(UnchangedShape)
    .Doc("the number of bits set in each value");
SF_BINARY_OP("Polygamma", SF_FLOAT_TYPES,
             "polygamma(x, y): the x-th derivative of digamma at y (tf.polygamma(a, x)); x must "
             "be a non-negative integer value, else NaN");
SF_BINARY_OP("Atan2", SF_FLOAT_TYPES,
             "std::atan2(x, y): the angle in [-pi, pi] of the point whose y coordinate is x and x "
             "coordinate is y (tf.atan2(y, x))");
SF_BINARY_OP("SquaredDifference", SF_SIGNED_TYPES, "(x - y)^2");

SF_COMPARE_OP("Equal", "{float, double, half, bfloat16, int8, uint8, int32, int64, bool}",
              "x == y");
SF_COMPARE_OP("NotEqual", "{float, double, half, bfloat16, int8, uint8, int32, int64, bool}",
              "x != y");
SF_COMPARE_OP("Less", SF_REAL_TYPES, "x < y");
SF_COMPARE_OP("LessEqual", SF_REAL_TYPES, "x <= y");
SF_COMPARE_OP("Greater", SF_REAL_TYPES, "x > y");
SF_COMPARE_OP("GreaterEqual", SF_REAL_TYPES, "x >= y");

REGISTER_OP("LogicalAnd")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetShapeFn(BroadcastBinaryShape)
    .Doc("x && y");
REGISTER_OP("LogicalOr")
    .Input("x: bool")
    .Input("y: bool")
    .Output("z: bool")
    .SetShapeFn(BroadcastBinaryShape)
    .Doc("x || y");
REGISTER_OP("LogicalNot").Input("x: bool").Output("y: bool").SetShapeFn(UnchangedShape).Doc("!x");

#define SF_REDUCTION_OP(NAME, DOC)          \
  REGISTER_OP(NAME)                         \
      .Input("input: T")                    \
      .Input("axis: Tidx")                  \
      .Output("output: T")                  \
      .Attr("T: " SF_REAL_TYPES)            \
      .Attr("Tidx: {int32, int64} = int32") \
      .Attr("keep_dims: bool = false")      \
      .SetShapeFn(ReductionShape)           \
      .Doc(DOC                              \
           " over the dimensions in `axis` (a scalar or vector; negative counts from the end)")
SF_REDUCTION_OP("Sum", "Sum");
SF_REDUCTION_OP("Mean", "Mean");
SF_REDUCTION_OP("Max", "Maximum");
SF_REDUCTION_OP("Min", "Minimum");
SF_REDUCTION_OP("Prod", "Product");

REGISTER_OP("ArgMax")
    .Input("input: T")
    .Input("dimension: Tidx")
    .Output("output: output_type")
    .Attr("T: " SF_REAL_TYPES)
    .Attr("Tidx: {int32, int64} = int32")
    .Attr("output_type: {int32, int64} = int64")
    .SetShapeFn(ArgMaxShape)
    .Doc("Index of the largest value along `dimension` (the first one on ties).");

REGISTER_OP("MatMul")
    .Input("a: T")
    .Input("b: T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {float, double, bfloat16, half, int32, int64}")
    .SetShapeFn(MatMulShape)
    .SetFlopsFn(MatMulFlops)
    .Doc("Matrix product of rank-2 tensors, optionally transposing either.");

REGISTER_OP("BatchMatMulV2")
    .Input("x: T")
    .Input("y: T")
    .Output("output: T")
    .Attr("T: {float, double, int32, int64}")
    .Attr("adj_x: bool = false")
    .Attr("adj_y: bool = false")
    .SetShapeFn(BatchMatMulShape)
    .SetFlopsFn(BatchMatMulFlops)
    .Doc(
        "Batched matrix product, TensorFlow's BatchMatMulV2 (tf.matmul of rank > 2): "
        "[..., m, k] x [..., k, n] -> [..., m, n], the batch dimensions broadcast; adj_x / adj_y "
        "transpose the last two dimensions of x / y first.");

// Made by the graph optimizer's remapping pass (partitioner/optimizer/) from MatMul + BiasAdd
// (+ activation): one GEMM accumulating onto the bias, the activation applied in cache.
REGISTER_OP("_FusedMatMul")
    .Input("a: T")
    .Input("b: T")
    .Input("bias: T")
    .Output("product: T")
    .Attr("transpose_a: bool = false")
    .Attr("transpose_b: bool = false")
    .Attr("T: {float}")
    .Attr("activation: string = ''")
    .SetShapeFn(FusedMatMulShape)
    .SetFlopsFn(MatMulFlops)
    .Doc("activation(MatMul(a, b) + bias); activation \"\", Relu, Tanh or Sigmoid.");

REGISTER_OP("AddN")
    .Input("inputs: N * T")
    .Output("sum: T")
    .Attr("N: int >= 1")
    .Attr("T: " SF_REAL_TYPES)
    .SetShapeFn(AddNShape)
    .Doc("Element-wise sum of N tensors of one shape.");

}  // namespace shardflow

namespace shardflow {
namespace {
absl::Status SumToShapeShape(InferenceContext* c) {
  SF_ASSIGN_OR_RETURN(TensorShape shape, c->ConstantInputAsShape(1));
  c->set_output(0, shape);
  return absl::OkStatus();
}
}  // namespace

REGISTER_OP("SumToShape")
    .Input("input: T")
    .Input("shape: int32")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16, int32, int64}")
    .SetShapeFn(SumToShapeShape)
    .Doc(
        "Sums `input` over the dimensions that broadcasting to it from `shape` would add or "
        "stretch (the gradient of a broadcast).");
}  // namespace shardflow

namespace shardflow {
REGISTER_OP("CheckNumerics")
    .Input("tensor: T")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16}")
    .Attr("message: string = ''")
    .SetShapeFn(UnchangedShape)
    .Doc("Passes `tensor` through; fails with `message` when it holds NaN or Inf.");
}  // namespace shardflow

namespace shardflow {
namespace {

// Two dims that may be unknown (-1) agree when either is unknown or they are equal.
bool DimsAgree(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

// Select (TF1's tf.where): t and e have one shape; condition has that shape, is a vector over
// its first dimension, or is a scalar.
absl::Status SelectShape(InferenceContext* c) {
  const TensorShape &cond = c->input(0), &t = c->input(1), &e = c->input(2);
  TensorShape out = t.unknown_rank() ? e : t;
  if (!t.unknown_rank() && !e.unknown_rank()) {
    bool same = t.rank() == e.rank();
    for (int i = 0; same && i < t.rank(); ++i) {
      same = DimsAgree(t.dim(i), e.dim(i));
      if (same && out.dim(i) < 0) out.set_dim(i, e.dim(i));
    }
    if (!same) {
      return c->InvalidArgument(absl::StrCat("Select needs t and e of one shape, got ",
                                             t.DebugString(), " and ", e.DebugString(),
                                             "; use SelectV2 (tf.where_v2) to broadcast"));
    }
  }
  if (!cond.unknown_rank() && !out.unknown_rank() && cond.rank() != 0) {
    bool ok;
    if (cond.rank() == 1 && out.rank() > 1) {
      ok = DimsAgree(cond.dim(0), out.dim(0));
    } else {
      ok = cond.rank() == out.rank();
      for (int i = 0; ok && i < out.rank(); ++i) ok = DimsAgree(cond.dim(i), out.dim(i));
    }
    if (!ok) {
      return c->InvalidArgument(absl::StrCat(
          "Select's condition ", cond.DebugString(), " must be a scalar, have t's shape ",
          out.DebugString(), ", or be a vector over t's first dimension"));
    }
  }
  c->set_output(0, std::move(out));
  return absl::OkStatus();
}

// SelectV2: the NumPy broadcast of all three inputs.
absl::Status SelectV2Shape(InferenceContext* c) {
  auto te = BroadcastShapes(c->input(1), c->input(2));
  if (!te.ok()) return te.status();
  auto out = BroadcastShapes(c->input(0), *te);
  if (!out.ok()) return out.status();
  c->set_output(0, *std::move(out));
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Select")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16, int8, uint8, int32, int64, bool}")
    .SetShapeFn(SelectShape)
    .Doc(
        "t where condition is true, else e (TF1's tf.where). t and e have one shape; condition "
        "has it too, or is a vector choosing whole rows along t's first dimension, or a scalar. "
        "Only the chosen value is read, so NaN or Inf in the other does not leak.");
REGISTER_OP("SelectV2")
    .Input("condition: bool")
    .Input("t: T")
    .Input("e: T")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16, int8, uint8, int32, int64, bool}")
    .SetShapeFn(SelectV2Shape)
    .Doc("t where condition is true, else e, with all three broadcast like NumPy (tf.where_v2).");
}  // namespace shardflow
