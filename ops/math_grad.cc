// Gradient functions of the math ops (see ops/gradients.h for the contract).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

using Grads = std::vector<Output>;

#define SF_GRAD(NAME) \
  absl::Status NAME##Grad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx)

// ---- binary, with broadcasting ----
SF_GRAD(Add) {
  dx->push_back(ReduceLike(s, dy[0], GradInput(op, 0)));
  dx->push_back(ReduceLike(s, dy[0], GradInput(op, 1)));
  return absl::OkStatus();
}
SF_GRAD(Sub) {
  dx->push_back(ReduceLike(s, dy[0], GradInput(op, 0)));
  dx->push_back(ReduceLike(s, ops::Neg(s, dy[0]), GradInput(op, 1)));
  return absl::OkStatus();
}
SF_GRAD(Mul) {
  Output x = GradInput(op, 0), y = GradInput(op, 1);
  dx->push_back(ReduceLike(s, ops::Mul(s, dy[0], y), x));
  dx->push_back(ReduceLike(s, ops::Mul(s, x, dy[0]), y));
  return absl::OkStatus();
}
SF_GRAD(Div) {
  Output x = GradInput(op, 0), y = GradInput(op, 1);
  dx->push_back(ReduceLike(s, ops::Div(s, dy[0], y), x));
  // d(x/y)/dy = -x / y^2
  dx->push_back(
      ReduceLike(s, ops::Neg(s, ops::Div(s, ops::Mul(s, dy[0], x), ops::Square(s, y))), y));
  return absl::OkStatus();
}
// FloorMod: x - floor(x / y) * y, so dx = dy and dy_y = -floor(x / y) dy (almost everywhere).
SF_GRAD(FloorMod) {
  Output x = GradInput(op, 0), y = GradInput(op, 1);
  dx->push_back(ReduceLike(s, dy[0], x));
  dx->push_back(ReduceLike(s, ops::Neg(s, ops::Mul(s, dy[0], ops::FloorDiv(s, x, y))), y));
  return absl::OkStatus();
}
SF_GRAD(SquaredDifference) {
  Output x = GradInput(op, 0), y = GradInput(op, 1);
  Output two_diff = ops::Mul(s, ops::Mul(s, 2, ops::Sub(s, x, y)), dy[0]);
  dx->push_back(ReduceLike(s, two_diff, x));
  dx->push_back(ReduceLike(s, ops::Neg(s, two_diff), y));
  return absl::OkStatus();
}
// Maximum/Minimum: the gradient goes to the input that was chosen (x on ties).
absl::Status ChosenInputGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx,
                             bool max) {
  Output x = GradInput(op, 0), y = GradInput(op, 1);
  Output pick_x = max ? ops::GreaterEqual(s, x, y) : ops::LessEqual(s, x, y);
  Output mask = ops::Cast(s, pick_x, dy[0].dtype());
  dx->push_back(ReduceLike(s, ops::Mul(s, dy[0], mask), x));
  dx->push_back(ReduceLike(s, ops::Mul(s, dy[0], ops::Sub(s, 1, mask)), y));
  return absl::OkStatus();
}
SF_GRAD(Maximum) { return ChosenInputGrad(s, op, dy, dx, true); }
SF_GRAD(Minimum) { return ChosenInputGrad(s, op, dy, dx, false); }
// Select/SelectV2: the gradient goes to the operand that was chosen; the condition gets none.
SF_GRAD(Select) {
  Output cond = GradInput(op, 0), zeros = ops::ZerosLike(s, dy[0]);
  dx->push_back(Output());
  dx->push_back(ops::Select(s, cond, dy[0], zeros));
  dx->push_back(ops::Select(s, cond, zeros, dy[0]));
  return absl::OkStatus();
}
SF_GRAD(SelectV2) {
  Output cond = GradInput(op, 0), zeros = ops::ZerosLike(s, dy[0]);
  dx->push_back(Output());
  dx->push_back(ReduceLike(s, ops::SelectV2(s, cond, dy[0], zeros), GradInput(op, 1)));
  dx->push_back(ReduceLike(s, ops::SelectV2(s, cond, zeros, dy[0]), GradInput(op, 2)));
  return absl::OkStatus();
}
SF_GRAD(Pow) {
  Output x = GradInput(op, 0), y = GradInput(op, 1), z = GradOutput(op, 0);
  // dz/dx = y * x^(y-1); dz/dy = z * log(x), taken as 0 where x <= 0.
  dx->push_back(
      ReduceLike(s, ops::Mul(s, dy[0], ops::Mul(s, y, ops::Pow(s, x, ops::Sub(s, y, 1)))), x));
  Output positive = ops::Cast(s, ops::Greater(s, x, 0), x.dtype());
  Output safe_x = ops::Add(s, ops::Mul(s, x, positive), ops::Sub(s, 1, positive));
  dx->push_back(ReduceLike(
      s, ops::Mul(s, dy[0], ops::Mul(s, z, ops::Mul(s, ops::Log(s, safe_x), positive))), y));
  return absl::OkStatus();
}

// ---- unary ----
SF_GRAD(Neg) {
  dx->push_back(ops::Neg(s, dy[0]));
  return absl::OkStatus();
}
SF_GRAD(Abs) {
  dx->push_back(ops::Mul(s, dy[0], ops::Sign(s, GradInput(op, 0))));
  return absl::OkStatus();
}
SF_GRAD(Square) {
  dx->push_back(ops::Mul(s, dy[0], ops::Mul(s, 2, GradInput(op, 0))));
  return absl::OkStatus();
}
SF_GRAD(Sqrt) {  // 0.5 / sqrt(x)
  dx->push_back(ops::Div(s, ops::Mul(s, dy[0], 0.5), GradOutput(op, 0)));
  return absl::OkStatus();
}
SF_GRAD(Rsqrt) {  // -0.5 * x^-1.5 = -0.5 * y^3
  Output y = GradOutput(op, 0);
  dx->push_back(ops::Mul(s, dy[0], ops::Mul(s, -0.5, ops::Mul(s, y, ops::Square(s, y)))));
  return absl::OkStatus();
}
SF_GRAD(Exp) {
  dx->push_back(ops::Mul(s, dy[0], GradOutput(op, 0)));
  return absl::OkStatus();
}
SF_GRAD(Log) {
  dx->push_back(ops::Div(s, dy[0], GradInput(op, 0)));
  return absl::OkStatus();
}
SF_GRAD(Tanh) {
  Output y = GradOutput(op, 0);
  dx->push_back(ops::Mul(s, dy[0], ops::Sub(s, 1, ops::Square(s, y))));
  return absl::OkStatus();
}
SF_GRAD(Sigmoid) {
  Output y = GradOutput(op, 0);
  dx->push_back(ops::Mul(s, dy[0], ops::Mul(s, y, ops::Sub(s, 1, y))));
  return absl::OkStatus();
}
SF_GRAD(Reciprocal) {  // -1/x^2 = -y^2
  dx->push_back(ops::Neg(s, ops::Mul(s, dy[0], ops::Square(s, GradOutput(op, 0)))));
  return absl::OkStatus();
}
SF_GRAD(Sin) {
  dx->push_back(ops::Mul(s, dy[0], ops::Cos(s, GradInput(op, 0))));
  return absl::OkStatus();
}
SF_GRAD(Cos) {
  dx->push_back(ops::Neg(s, ops::Mul(s, dy[0], ops::Sin(s, GradInput(op, 0)))));
  return absl::OkStatus();
}
SF_GRAD(Log1p) {
  dx->push_back(ops::Div(s, dy[0], ops::Add(s, 1, GradInput(op, 0))));
  return absl::OkStatus();
}
SF_GRAD(Expm1) {  // e^x = y + 1
  dx->push_back(ops::Mul(s, dy[0], ops::Add(s, GradOutput(op, 0), 1)));
  return absl::OkStatus();
}
SF_GRAD(Erf) {  // 2 / sqrt(pi) * exp(-x^2)
  Output x = GradInput(op, 0);
  dx->push_back(ops::Mul(
      s, dy[0], ops::Mul(s, 1.1283791670955126, ops::Exp(s, ops::Neg(s, ops::Square(s, x))))));
  return absl::OkStatus();
}
// The new unary ops' gradients, through UnaryOf for those without an ops:: builder.
Output UnaryOf(const Scope& s, const char* op, const Output& x) {
  return Output(OpBuilder(s, op).Input(x).Finalize().node(), 0);
}
Output PolygammaOf(const Scope& s, const Output& order, const Output& x) {
  return Output(OpBuilder(s, "Polygamma").Input(order).Input(x).Finalize().node(), 0);
}
SF_GRAD(Lgamma) {  // digamma(x)
  dx->push_back(ops::Mul(s, dy[0], UnaryOf(s, "Digamma", GradInput(op, 0))));
  return absl::OkStatus();
}
SF_GRAD(Digamma) {  // polygamma(1, x)
  Output x = GradInput(op, 0);
  dx->push_back(ops::Mul(s, dy[0], PolygammaOf(s, ops::OnesLike(s, x), x)));
  return absl::OkStatus();
}
SF_GRAD(Polygamma) {  // d/dx polygamma(n, x) = polygamma(n + 1, x); the order has none (as TF)
  Output n = GradInput(op, 0), x = GradInput(op, 1);
  Output dz = ops::Mul(s, dy[0], PolygammaOf(s, ops::Add(s, n, ops::OnesLike(s, n)), x));
  dx->push_back(ReduceLike(s, ops::ZerosLike(s, dz), n));
  dx->push_back(ReduceLike(s, dz, x));
  return absl::OkStatus();
}
SF_GRAD(Tan) {  // 1 + tan^2
  dx->push_back(ops::Mul(s, dy[0], ops::Add(s, 1, ops::Square(s, GradOutput(op, 0)))));
  return absl::OkStatus();
}
SF_GRAD(Asin) {  // 1 / sqrt(1 - x^2)
  Output x = GradInput(op, 0);
  dx->push_back(ops::Mul(s, dy[0], ops::Rsqrt(s, ops::Sub(s, 1, ops::Square(s, x)))));
  return absl::OkStatus();
}
SF_GRAD(Acos) {  // -1 / sqrt(1 - x^2)
  Output x = GradInput(op, 0);
  dx->push_back(ops::Neg(s, ops::Mul(s, dy[0], ops::Rsqrt(s, ops::Sub(s, 1, ops::Square(s, x))))));
  return absl::OkStatus();
}
SF_GRAD(Atan) {  // 1 / (1 + x^2)
  dx->push_back(ops::Div(s, dy[0], ops::Add(s, 1, ops::Square(s, GradInput(op, 0)))));
  return absl::OkStatus();
}
SF_GRAD(Sinh) {
  dx->push_back(ops::Mul(s, dy[0], UnaryOf(s, "Cosh", GradInput(op, 0))));
  return absl::OkStatus();
}
SF_GRAD(Cosh) {
  dx->push_back(ops::Mul(s, dy[0], UnaryOf(s, "Sinh", GradInput(op, 0))));
  return absl::OkStatus();
}
SF_GRAD(Asinh) {  // 1 / sqrt(x^2 + 1)
  Output x = GradInput(op, 0);
  dx->push_back(ops::Mul(s, dy[0], ops::Rsqrt(s, ops::Add(s, ops::Square(s, x), 1))));
  return absl::OkStatus();
}
SF_GRAD(Acosh) {  // 1 / sqrt(x^2 - 1)
  Output x = GradInput(op, 0);
  dx->push_back(ops::Mul(s, dy[0], ops::Rsqrt(s, ops::Sub(s, ops::Square(s, x), 1))));
  return absl::OkStatus();
}
SF_GRAD(Atanh) {  // 1 / (1 - x^2)
  dx->push_back(ops::Div(s, dy[0], ops::Sub(s, 1, ops::Square(s, GradInput(op, 0)))));
  return absl::OkStatus();
}
SF_GRAD(Atan2) {  // z = atan2(a, b): dz/da = b / (a^2 + b^2), dz/db = -a / (a^2 + b^2)
  Output a = GradInput(op, 0), b = GradInput(op, 1);
  Output scale = ops::Div(s, dy[0], ops::Add(s, ops::Square(s, a), ops::Square(s, b)));
  dx->push_back(ReduceLike(s, ops::Mul(s, scale, b), a));
  dx->push_back(ReduceLike(s, ops::Neg(s, ops::Mul(s, scale, a)), b));
  return absl::OkStatus();
}
SF_GRAD(Sign) {
  dx->push_back(ops::ZerosLike(s, GradInput(op, 0)));
  return absl::OkStatus();
}

// ---- n-ary, casts, matmul ----
SF_GRAD(AddN) {
  for (int i = 0; i < op.node()->num_inputs(); ++i) dx->push_back(dy[0]);
  return absl::OkStatus();
}
SF_GRAD(Cast) {
  DataType src = op.node()->input_type(0);
  bool differentiable = DataTypeIsFloating(src) && DataTypeIsFloating(op.node()->output_type(0));
  dx->push_back(differentiable ? ops::Cast(s, dy[0], src) : Output());
  return absl::OkStatus();
}
SF_GRAD(MatMul) {
  bool ta, tb;
  absl::Status st = GetAttr(op.node()->attrs(), "transpose_a", &ta);
  if (st.ok()) st = GetAttr(op.node()->attrs(), "transpose_b", &tb);
  if (!st.ok()) return st;
  Output a = GradInput(op, 0), b = GradInput(op, 1), g = dy[0];
  if (!ta && !tb) {
    dx->push_back(ops::MatMul(s, g, b, false, true));
    dx->push_back(ops::MatMul(s, a, g, true, false));
  } else if (ta && !tb) {
    dx->push_back(ops::MatMul(s, b, g, false, true));
    dx->push_back(ops::MatMul(s, a, g, false, false));
  } else if (!ta && tb) {
    dx->push_back(ops::MatMul(s, g, b, false, false));
    dx->push_back(ops::MatMul(s, g, a, true, false));
  } else {
    dx->push_back(ops::MatMul(s, b, g, true, true));
    dx->push_back(ops::MatMul(s, g, a, true, true));
  }
  return absl::OkStatus();
}

// As MatMul's, on the last two dimensions; then summed over the batch dimensions an input was
// broadcast along.
SF_GRAD(BatchMatMulV2) {
  bool ax, ay;
  absl::Status st = GetAttr(op.node()->attrs(), "adj_x", &ax);
  if (st.ok()) st = GetAttr(op.node()->attrs(), "adj_y", &ay);
  if (!st.ok()) return st;
  Output x = GradInput(op, 0), y = GradInput(op, 1), g = dy[0];
  Output gx, gy;
  if (!ax && !ay) {
    gx = ops::BatchMatMul(s, g, y, false, true);
    gy = ops::BatchMatMul(s, x, g, true, false);
  } else if (!ax && ay) {
    gx = ops::BatchMatMul(s, g, y, false, false);
    gy = ops::BatchMatMul(s, g, x, true, false);
  } else if (ax && !ay) {
    gx = ops::BatchMatMul(s, y, g, false, true);
    gy = ops::BatchMatMul(s, x, g, false, false);
  } else {
    gx = ops::BatchMatMul(s, y, g, true, true);
    gy = ops::BatchMatMul(s, g, x, true, true);
  }
  dx->push_back(ReduceLike(s, gx, x));
  dx->push_back(ReduceLike(s, gy, y));
  return absl::OkStatus();
}

// ---- reductions ----
// The constant, normalised, sorted reduction axes of `op`, or an error naming the node.
absl::StatusOr<std::vector<int64_t>> ConstantAxes(const Operation& op) {
  Output axes = GradInput(op, 1);
  const Tensor* t = axes.node()->constant_value();
  int rank = GradInput(op, 0).shape().rank();
  if (t == nullptr || rank < 0) {
    return absl::UnimplementedError(absl::StrCat(
        "the gradient of ", op.node()->op(), " needs constant axes and an input of known rank"));
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    int64_t a = t->dtype() == DT_INT32 ? t->data<int32_t>()[i] : t->data<int64_t>()[i];
    out.push_back(a < 0 ? a + rank : a);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// dy (reduced) brought back to x's rank with size-1 reduced dims.
absl::StatusOr<Output> KeepDims(const Scope& s, const Operation& op, const Output& g) {
  bool keep;
  absl::Status st = GetAttr(op.node()->attrs(), "keep_dims", &keep);
  if (!st.ok()) return st;
  auto axes = ConstantAxes(op);
  if (!axes.ok()) return axes.status();
  if (keep) return g;
  Output out = g;
  for (int64_t a : *axes) out = ops::ExpandDims(s, out, static_cast<int32_t>(a));
  return out;
}

// Broadcasts `g` (x's rank, size-1 reduced dims) to x's shape.
Output BroadcastLike(const Scope& s, const Output& g, const Output& x) {
  return ops::Add(s, ops::ZerosLike(s, x), g);
}

SF_GRAD(Sum) {
  auto g = KeepDims(s, op, dy[0]);
  if (!g.ok()) return g.status();
  dx->push_back(BroadcastLike(s, *g, GradInput(op, 0)));
  dx->push_back(Output());
  return absl::OkStatus();
}
SF_GRAD(Mean) {
  auto g = KeepDims(s, op, dy[0]);
  if (!g.ok()) return g.status();
  Output x = GradInput(op, 0);
  // count = size(x) / size(y), computed at run time so unknown dims work.
  Output sx = ops::Prod(s, ops::Shape(s, x), 0);
  Output sy = ops::Prod(s, ops::Shape(s, GradOutput(op, 0)), 0);
  Output count = ops::Cast(s, ops::Div(s, sx, ops::Maximum(s, sy, 1)), x.dtype());
  dx->push_back(ops::Div(s, BroadcastLike(s, *g, x), count));
  dx->push_back(Output());
  return absl::OkStatus();
}
// Max/Min: the gradient is shared equally by the elements equal to the result.
SF_GRAD(MaxMin) {
  auto g = KeepDims(s, op, dy[0]);
  if (!g.ok()) return g.status();
  auto y = KeepDims(s, op, GradOutput(op, 0));
  if (!y.ok()) return y.status();
  Output x = GradInput(op, 0);
  Output mask = ops::Cast(s, ops::Equal(s, x, *y), x.dtype());
  auto axes = ConstantAxes(op);
  std::vector<int32_t> axes32(axes->begin(), axes->end());
  Output ties = ops::Sum(s, mask, Tensor::FromVector(axes32), true);
  dx->push_back(ops::Div(s, ops::Mul(s, mask, *g), ties));
  dx->push_back(Output());
  return absl::OkStatus();
}

// Prod: each element's gradient is the product of the others, computed without dividing (so
// zeros are exact, as TF): the reduced dimensions are moved first and flattened into one, and
// the exclusive products from both ends multiplied.
SF_GRAD(Prod) {
  auto g = KeepDims(s, op, dy[0]);
  if (!g.ok()) return g.status();
  auto axes = ConstantAxes(op);
  if (!axes.ok()) return axes.status();
  Output x = GradInput(op, 0);
  const int rank = x.shape().rank();
  std::vector<int32_t> perm, inverse(rank);
  for (int64_t a : *axes) perm.push_back(static_cast<int32_t>(a));
  for (int d = 0; d < rank; ++d) {
    if (std::find(axes->begin(), axes->end(), d) == axes->end()) perm.push_back(d);
  }
  for (int d = 0; d < rank; ++d) inverse[perm[d]] = d;
  Output moved = ops::Transpose(s, x, Tensor::FromVector(perm));
  Output moved_shape = ops::Shape(s, moved);
  Output reduced =
      ops::Prod(s,
                ops::Slice(s, moved_shape, Tensor::FromVector<int32_t>({0}),
                           Tensor::FromVector<int32_t>({static_cast<int32_t>(axes->size())})),
                Tensor::FromVector<int32_t>({0}), true);
  Output flat = ops::Reshape(
      s, moved, ops::Concat(s, {reduced, ops::Const(s, Tensor::FromVector<int32_t>({-1}))}, 0));
  auto products = [&](bool reverse) {
    return Output(OpBuilder(s, "Cumprod")
                      .Input(flat)
                      .Input(ops::Const(s, Tensor::Scalar<int32_t>(0)))
                      .Attr("exclusive", true)
                      .Attr("reverse", reverse)
                      .Finalize()
                      .node(),
                  0);
  };
  Output others = ops::Mul(s, products(false), products(true));
  Output back =
      ops::Transpose(s, ops::Reshape(s, others, moved_shape), Tensor::FromVector(inverse));
  dx->push_back(ops::Mul(s, back, BroadcastLike(s, *g, x)));
  dx->push_back(Output());
  return absl::OkStatus();
}

// SumToShape sums a broadcast gradient back to an operand's shape (ops/gradients.cc, when shapes
// are known only at run time); its own gradient broadcasts back: a second derivative through any
// broadcasting op with a None dimension (a gradient penalty over a placeholder batch) needs it.
absl::Status SumToShapeGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  dx->push_back(ops::Add(s, ops::ZerosLike(s, GradInput(op, 0)), dy[0]));
  dx->push_back(Output());  // shape
  return absl::OkStatus();
}

REGISTER_GRADIENT("SumToShape", SumToShapeGrad);
REGISTER_GRADIENT("Add", AddGrad);
REGISTER_GRADIENT("Sub", SubGrad);
REGISTER_GRADIENT("Mul", MulGrad);
REGISTER_GRADIENT("Div", DivGrad);
REGISTER_GRADIENT("FloorMod", FloorModGrad);
REGISTER_GRADIENT("SquaredDifference", SquaredDifferenceGrad);
REGISTER_GRADIENT("Maximum", MaximumGrad);
REGISTER_GRADIENT("Select", SelectGrad);
REGISTER_GRADIENT("SelectV2", SelectV2Grad);
REGISTER_GRADIENT("Minimum", MinimumGrad);
REGISTER_GRADIENT("Pow", PowGrad);
REGISTER_GRADIENT("Neg", NegGrad);
REGISTER_GRADIENT("Abs", AbsGrad);
REGISTER_GRADIENT("Square", SquareGrad);
REGISTER_GRADIENT("Sqrt", SqrtGrad);
REGISTER_GRADIENT("Rsqrt", RsqrtGrad);
REGISTER_GRADIENT("Exp", ExpGrad);
REGISTER_GRADIENT("Log", LogGrad);
REGISTER_GRADIENT("Tanh", TanhGrad);
REGISTER_GRADIENT("Sigmoid", SigmoidGrad);
REGISTER_GRADIENT("Sin", SinGrad);
REGISTER_GRADIENT("Cos", CosGrad);
REGISTER_GRADIENT("Log1p", Log1pGrad);
REGISTER_GRADIENT("Expm1", Expm1Grad);
REGISTER_GRADIENT("Erf", ErfGrad);
REGISTER_GRADIENT("Tan", TanGrad);
REGISTER_GRADIENT("Asin", AsinGrad);
REGISTER_GRADIENT("Acos", AcosGrad);
REGISTER_GRADIENT("Atan", AtanGrad);
REGISTER_GRADIENT("Sinh", SinhGrad);
REGISTER_GRADIENT("Cosh", CoshGrad);
REGISTER_GRADIENT("Asinh", AsinhGrad);
REGISTER_GRADIENT("Acosh", AcoshGrad);
REGISTER_GRADIENT("Atanh", AtanhGrad);
REGISTER_GRADIENT("Atan2", Atan2Grad);
REGISTER_GRADIENT("Lgamma", LgammaGrad);
REGISTER_GRADIENT("Digamma", DigammaGrad);
REGISTER_GRADIENT("Polygamma", PolygammaGrad);
REGISTER_GRADIENT("Reciprocal", ReciprocalGrad);
REGISTER_GRADIENT("Sign", SignGrad);
REGISTER_GRADIENT("AddN", AddNGrad);
REGISTER_GRADIENT("Cast", CastGrad);
REGISTER_GRADIENT("MatMul", MatMulGrad);
REGISTER_GRADIENT("BatchMatMulV2", BatchMatMulV2Grad);
REGISTER_GRADIENT("Sum", SumGrad);
REGISTER_GRADIENT("Prod", ProdGrad);
REGISTER_GRADIENT("Mean", MeanGrad);
REGISTER_GRADIENT("Max", MaxMinGrad);
REGISTER_GRADIENT("Min", MaxMinGrad);

// Outputs that are integers, booleans or piecewise constant: no gradient flows.
REGISTER_NO_GRADIENT("Equal");
REGISTER_NO_GRADIENT("FloorDiv");  // piecewise constant
REGISTER_NO_GRADIENT("NotEqual");
REGISTER_NO_GRADIENT("Less");
REGISTER_NO_GRADIENT("LessEqual");
REGISTER_NO_GRADIENT("Greater");
REGISTER_NO_GRADIENT("GreaterEqual");
REGISTER_NO_GRADIENT("LogicalAnd");
REGISTER_NO_GRADIENT("LogicalOr");
REGISTER_NO_GRADIENT("LogicalNot");
// Bitwise ops: integer in, integer out (TF1 registers them not differentiable too).
REGISTER_NO_GRADIENT("BitwiseAnd");
REGISTER_NO_GRADIENT("BitwiseOr");
REGISTER_NO_GRADIENT("BitwiseXor");
REGISTER_NO_GRADIENT("LeftShift");
REGISTER_NO_GRADIENT("RightShift");
REGISTER_NO_GRADIENT("Invert");
REGISTER_NO_GRADIENT("PopulationCount");
REGISTER_NO_GRADIENT("RegexReplace");
REGISTER_NO_GRADIENT("RegexFullMatch");
REGISTER_NO_GRADIENT("StringToHashBucketFast");
REGISTER_NO_GRADIENT("StringToHashBucketStrong");
REGISTER_NO_GRADIENT("StringToHashBucket");
// Piecewise constant (TF1 gives them no gradient either) and predicates.
REGISTER_NO_GRADIENT("Floor");
REGISTER_NO_GRADIENT("Ceil");
REGISTER_NO_GRADIENT("Round");
REGISTER_NO_GRADIENT("IsNan");
REGISTER_NO_GRADIENT("IsInf");
REGISTER_NO_GRADIENT("IsFinite");
REGISTER_NO_GRADIENT("ArgMax");

}  // namespace
}  // namespace shardflow
