#include "ops/gradients.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/shape_inference.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

Tensor RandomDouble(const TensorShape& shape, double lo, double hi, uint32_t seed) {
  Tensor t(DT_DOUBLE, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<double>()[i] = dist(gen);
  return t;
}

// Checks d op(x)/dx for a unary op on x in [lo, hi].
void CheckUnary(const std::string& op, double lo, double hi) {
  SCOPED_TRACE(op);
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
  Output y(OpBuilder(s, op).Input(x).Finalize().node(), 0);
  auto err = test::MaxGradientError(s, {x}, {RandomDouble({2, 3}, lo, hi, 1)}, y, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

// A deliberately wrong gradient (claims d exp(x)/dx = 2 exp(x)): the checker must catch it.
REGISTER_OP("TestWrongGradExp").Input("x: double").Output("y: double").SetShapeFn(UnchangedShape);
class WrongGradExpOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, ctx->input(0).shape(), &y));
    for (int64_t i = 0; i < y->NumElements(); ++i)
      y->data<double>()[i] = std::exp(ctx->input(0).data<double>()[i]);
  }
};
REGISTER_KERNEL(KernelDef("TestWrongGradExp").Device(kDeviceCpu), WrongGradExpOp);
REGISTER_GRADIENT("TestWrongGradExp", [](const Scope& s, const Operation& op,
                                         const std::vector<Output>& dy, std::vector<Output>* dx) {
  dx->push_back(ops::Mul(s, ops::Mul(s, dy[0], GradOutput(op, 0)), 2.0));
  return absl::OkStatus();
});

TEST(GradientsTest, CheckerCatchesAWrongGradient) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({4}));
  Output y(OpBuilder(s, "TestWrongGradExp").Input(x).Finalize().node(), 0);
  auto err = test::MaxGradientError(s, {x}, {RandomDouble({4}, -1, 1, 11)}, y, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_GT(*err, 0.1);
}

TEST(GradientsTest, UnaryOps) {
  for (const char* op : {"Neg", "Abs", "Square", "Exp", "Tanh", "Sigmoid"}) CheckUnary(op, -2, 2);
  for (const char* op : {"Sqrt", "Rsqrt", "Log", "Reciprocal"}) CheckUnary(op, 0.5, 3);
  for (const char* op : {"Sin", "Cos", "Expm1", "Erf"}) CheckUnary(op, -2, 2);
  CheckUnary("Log1p", -0.5, 3);
  for (const char* op : {"Tan", "Asin", "Acos", "Atanh"}) CheckUnary(op, -0.8, 0.8);
  for (const char* op : {"Atan", "Sinh", "Cosh", "Asinh"}) CheckUnary(op, -2, 2);
  CheckUnary("Acosh", 1.2, 3);
  for (const char* op : {"Lgamma", "Digamma"}) CheckUnary(op, 0.3, 4);
}

// The unsorted segment reductions; the product also with one zero in a segment (its gradient is
// the product of the others) and two (nothing flows).
TEST(GradientsTest, UnsortedSegmentReductions) {
  const Tensor with_zeros =
      Tensor::FromVector<double>({0, 0, 3, 1, 0, 2, 4, 0, 1.5, 2, 1, 0}, {4, 3});
  const std::vector<std::pair<const char*, bool>> cases = {{"UnsortedSegmentSum", false},
                                                           {"UnsortedSegmentMax", false},
                                                           {"UnsortedSegmentMin", false},
                                                           {"UnsortedSegmentProd", false},
                                                           {"UnsortedSegmentProd", true}};
  for (const auto& [op, zeros] : cases) {
    SCOPED_TRACE(absl::StrCat(op, zeros ? " with zeros" : ""));
    Scope s = Scope::NewRootScope();
    auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({4, 3}));
    Output y(OpBuilder(s, op)
                 .Input(x)
                 .Input(Tensor::FromVector<int32_t>({0, 2, 0, 1}))
                 .Input(Tensor::Scalar<int32_t>(3))
                 .Finalize()
                 .node(),
             0);
    auto err = test::MaxGradientError(
        s, {x}, {zeros ? with_zeros : RandomDouble({4, 3}, 0.5, 1.5, 61)}, ops::Square(s, y), 1e-6);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, 1e-6);
  }
}

// TopKV2: the values' gradient goes back to the positions they were taken from (k = 2 of 5 and
// k = n, the whole row sorted); the entries not taken get none.
TEST(GradientsTest, TopKV2) {
  for (int k : {2, 5}) {
    SCOPED_TRACE(absl::StrCat("k=", k));
    Scope s = Scope::NewRootScope();
    auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3, 5}));
    Output values(
        OpBuilder(s, "TopKV2").Input(x).Input(Tensor::Scalar<int32_t>(k)).Finalize().node(), 0);
    // Weights by rank, so a value landing in the wrong place would change the gradient.
    auto weights = ops::Const(s, Tensor::FromVector<double>({1.0, -2.0, 3.0, 0.5, 4.0}));
    Output ranked(OpBuilder(s, "Slice")
                      .Input(weights)
                      .Input(Tensor::FromVector<int32_t>({0}))
                      .Input(Tensor::FromVector<int32_t>({k}))
                      .Finalize()
                      .node(),
                  0);
    auto err = test::MaxGradientError(s, {x}, {RandomDouble({3, 5}, -1, 1, 71)},
                                      ops::Mul(s, ops::Square(s, values), ranked), 1e-6);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, 1e-6);
  }
}

// Polygamma(n, x): the gradient in x is polygamma(n + 1, x); the order has none.
TEST(GradientsTest, Polygamma) {
  Scope s = Scope::NewRootScope();
  auto n = ops::Const(s, Tensor::FromVector<double>({1, 2, 0}));
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
  Output y(OpBuilder(s, "Polygamma").Input(n).Input(x).Finalize().node(), 0);
  auto err = test::MaxGradientError(s, {x}, {RandomDouble({2, 3}, 0.5, 3, 4)}, y, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-5);
}

// Binary ops with broadcasting: [2,3] with [3], [2,1] and a scalar.
TEST(GradientsTest, BinaryOpsWithBroadcasting) {
  for (const char* op :
       {"Add", "Sub", "Mul", "Div", "SquaredDifference", "Maximum", "Minimum", "Pow", "Atan2"}) {
    for (TensorShape ys :
         {TensorShape({2, 3}), TensorShape({3}), TensorShape({2, 1}), TensorShape()}) {
      SCOPED_TRACE(std::string(op) + " with y " + ys.DebugString());
      Scope s = Scope::NewRootScope();
      auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
      auto y = ops::Placeholder(s.WithOpName("y"), DT_DOUBLE, ys);
      Output z(OpBuilder(s, op).Input(x).Input(y).Finalize().node(), 0);
      // Keep x and y apart so Maximum/Minimum have no ties, and positive for Pow/Div.
      auto err = test::MaxGradientError(
          s, {x, y}, {RandomDouble({2, 3}, 0.5, 1.5, 2), RandomDouble(ys, 2.0, 3.0, 3)}, z, 1e-6);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LT(*err, 1e-5);
    }
  }
}

// Select and SelectV2: each operand gets the gradient where it was chosen. Select's condition
// is full-shape or a vector over rows; SelectV2 broadcasts t ([2,3]) against e ([3]) and a
// condition of [2,1].
TEST(GradientsTest, SelectAndSelectV2) {
  struct Case {
    const char* op;
    std::vector<bool> cond;
    TensorShape cond_shape, e_shape;
  };
  for (const Case& c :
       {Case{"Select", {true, false, false, true, true, false}, {2, 3}, {2, 3}},
        Case{"Select", {false, true}, {2}, {2, 3}}, Case{"SelectV2", {true, false}, {2, 1}, {3}},
        Case{"SelectV2", {true, false, true}, {3}, {2, 3}}}) {
    SCOPED_TRACE(std::string(c.op) + " condition " + c.cond_shape.DebugString());
    Scope s = Scope::NewRootScope();
    Tensor cond(DT_BOOL, c.cond_shape);
    for (size_t i = 0; i < c.cond.size(); ++i) cond.data<bool>()[i] = c.cond[i];
    auto t = ops::Placeholder(s.WithOpName("t"), DT_DOUBLE, TensorShape({2, 3}));
    auto e = ops::Placeholder(s.WithOpName("e"), DT_DOUBLE, c.e_shape);
    Output z = std::string(c.op) == "Select" ? ops::Select(s, ops::Const(s, cond), t, e)
                                             : ops::SelectV2(s, ops::Const(s, cond), t, e);
    // Square the result so the gradient depends on the values chosen.
    auto err = test::MaxGradientError(
        s, {t, e}, {RandomDouble({2, 3}, -1, 1, 31), RandomDouble(c.e_shape, -1, 1, 32)},
        ops::Square(s, z), 1e-6);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, 1e-6);
  }
}

TEST(GradientsTest, CumsumCumprodAndReverse) {
  for (const char* op : {"Cumsum", "Cumprod"}) {
    for (bool exclusive : {false, true}) {
      for (bool reverse : {false, true}) {
        for (int axis : {0, 1}) {
          SCOPED_TRACE(
              absl::StrCat(op, " exclusive ", exclusive, " reverse ", reverse, " axis ", axis));
          Scope s = Scope::NewRootScope();
          auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3, 4}));
          Output y(OpBuilder(s, op)
                       .Input(x)
                       .Input(Tensor::Scalar<int32_t>(axis))
                       .Attr("exclusive", exclusive)
                       .Attr("reverse", reverse)
                       .Finalize()
                       .node(),
                   0);
          // Square so the gradient depends on where each sum goes; Cumprod's gradient divides
          // by x (undefined at 0, as in TF), so its inputs stay away from it.
          const bool prod = std::string(op) == "Cumprod";
          auto err = test::MaxGradientError(
              s, {x}, {RandomDouble({3, 4}, prod ? 0.5 : -1, prod ? 1.5 : 1, 51)},
              ops::Square(s, y), 1e-6);
          ASSERT_TRUE(err.ok()) << err.status();
          EXPECT_LT(*err, 1e-6);
        }
      }
    }
  }
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3, 2}));
  Output y(OpBuilder(s, "ReverseV2")
               .Input(x)
               .Input(Tensor::FromVector<int32_t>({0, 2}))
               .Finalize()
               .node(),
           0);
  auto w = ops::Const(s, RandomDouble({2, 3, 2}, -1, 1, 52));
  auto err =
      test::MaxGradientError(s, {x}, {RandomDouble({2, 3, 2}, -1, 1, 53)}, ops::Mul(s, y, w), 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

// FloorMod is x - floor(x / y) * y: away from the jumps (x / y in (2.1, 2.7) here) its
// gradient is (1, -floor(x / y)).
TEST(GradientsTest, FloorModAwayFromItsJumps) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
  auto y = ops::Placeholder(s.WithOpName("y"), DT_DOUBLE, TensorShape({3}));
  auto z = ops::FloorMod(s, x, y);
  auto err = test::MaxGradientError(
      s, {x, y}, {RandomDouble({2, 3}, 5.1, 5.4, 21), RandomDouble({3}, 2.0, 2.4, 22)}, z, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-5);
}

TEST(GradientsTest, UnknownBatchDimUsesRuntimeReduction) {
  // x: [?,3] + b: [3] — the gradient of b sums over a batch only known at run time.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({-1, 3}));
  auto b = ops::Placeholder(s.WithOpName("b"), DT_DOUBLE, TensorShape({-1, 1}));
  auto y = ops::Mul(s, x, b);
  auto err = test::MaxGradientError(
      s, {x, b}, {RandomDouble({4, 3}, -1, 1, 4), RandomDouble({4, 1}, -1, 1, 5)}, y, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

TEST(GradientsTest, MatMulAllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::to_string(ta) + std::to_string(tb));
      Scope s = Scope::NewRootScope();
      TensorShape as = ta ? TensorShape({4, 2}) : TensorShape({2, 4});
      TensorShape bs = tb ? TensorShape({3, 4}) : TensorShape({4, 3});
      auto a = ops::Placeholder(s.WithOpName("a"), DT_DOUBLE, as);
      auto b = ops::Placeholder(s.WithOpName("b"), DT_DOUBLE, bs);
      auto c = ops::MatMul(s, a, b, ta, tb);
      auto err = test::MaxGradientError(
          s, {a, b}, {RandomDouble(as, -1, 1, 6), RandomDouble(bs, -1, 1, 7)}, c, 1e-6);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LT(*err, 1e-6);
    }
  }
}

// BatchMatMulV2 with every adjoint pair, and batch dimensions that broadcast (x's leading 2
// against y's missing one, y's size-1 against x's 3): the gradient of a broadcast input sums
// over the items it was reused for.
TEST(GradientsTest, BatchMatMulAllAdjointsAndBroadcasts) {
  for (bool ax : {false, true}) {
    for (bool ay : {false, true}) {
      SCOPED_TRACE(std::to_string(ax) + std::to_string(ay));
      Scope s = Scope::NewRootScope();
      TensorShape xs = ax ? TensorShape({2, 3, 4, 2}) : TensorShape({2, 3, 2, 4});
      TensorShape ys = ay ? TensorShape({1, 5, 4}) : TensorShape({1, 4, 5});
      auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, xs);
      auto y = ops::Placeholder(s.WithOpName("y"), DT_DOUBLE, ys);
      auto z = ops::BatchMatMul(s, x, y, ax, ay);
      ASSERT_EQ(z.shape(), TensorShape({2, 3, 2, 5}));
      auto err = test::MaxGradientError(
          s, {x, y}, {RandomDouble(xs, -1, 1, 16), RandomDouble(ys, -1, 1, 17)}, z, 1e-6);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LT(*err, 1e-6);
    }
  }
}

TEST(GradientsTest, Reductions) {
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    for (bool keep : {false, true}) {
      for (std::vector<int32_t> axes : {std::vector<int32_t>{1}, {0, 2}, {-1}}) {
        SCOPED_TRACE(std::string(op) + (keep ? " keep" : "") + " axes " + std::to_string(axes[0]));
        Scope s = Scope::NewRootScope();
        auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3, 4}));
        Output y(OpBuilder(s, op)
                     .Input(x)
                     .Input(Tensor::FromVector(axes))
                     .Attr("keep_dims", keep)
                     .Finalize()
                     .node(),
                 0);
        auto err = test::MaxGradientError(s, {x}, {RandomDouble({2, 3, 4}, -1, 1, 8)}, y, 1e-6);
        ASSERT_TRUE(err.ok()) << err.status();
        EXPECT_LT(*err, 1e-6);
      }
    }
  }
}

TEST(GradientsTest, ArrayOps) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
  auto y = ops::Placeholder(s.WithOpName("y"), DT_DOUBLE, TensorShape({2, 2}));
  auto r = ops::Reshape(s, ops::Transpose(s, x, {1, 0}), {2, 3});
  auto c = ops::Concat(s, {r, y, ops::Identity(s, x)}, 1);
  auto e = ops::Squeeze(s, ops::ExpandDims(s, ops::Cast(s, c, DT_DOUBLE), 0), {0});
  auto total = ops::AddN(s, {e, e});
  auto err = test::MaxGradientError(
      s, {x, y}, {RandomDouble({2, 3}, -1, 1, 9), RandomDouble({2, 2}, -1, 1, 10)}, total, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

TEST(GradientsTest, IdentityNPassesEachGradientThrough) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
  auto y = ops::Placeholder(s.WithOpName("y"), DT_DOUBLE, TensorShape({3}));
  Node* n = OpBuilder(s, "IdentityN")
                .InputList({x, y})
                .Attr("T", MakeAttr(std::vector<DataType>{DT_DOUBLE, DT_DOUBLE}))
                .Finalize()
                .node();
  auto total = ops::Add(s, ops::Mul(s, Output(n, 0), Output(n, 0)), Output(n, 1));
  auto err = test::MaxGradientError(
      s, {x, y}, {RandomDouble({2, 3}, -1, 1, 11), RandomDouble({3}, -1, 1, 12)}, total, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

// A node's _gradient_op_type attr picks the gradient registered under that name instead of its
// op's (Python's gradient_override_map); an unregistered name is an error naming it.
REGISTER_GRADIENT("TestTimesThreeGrad", [](const Scope& s, const Operation&,
                                           const std::vector<Output>& dy, std::vector<Output>* dx) {
  dx->push_back(ops::Mul(s, dy[0], 3.0));
  return absl::OkStatus();
});

TEST(GradientsTest, GradientOpTypeAttrOverridesTheOpsGradient) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2}));
  auto id = ops::Identity(s.WithOpName("id"), x);
  id.node()->SetAttr(kGradientOpTypeAttr, MakeAttr("TestTimesThreeGrad"));
  auto y = ops::Sum(s, id, 0);
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {y}, {x}, &grads).ok());
  auto out =
      test::RunScope(s, {{"x", Tensor::FromVector<double>({1, 2}, TensorShape({2}))}}, {grads[0]});
  ASSERT_TRUE(out.ok()) << out.status();
  test::ExpectValues<double>((*out)[0], {3.0, 3.0});

  Scope t = Scope::NewRootScope();
  auto x2 = ops::Placeholder(t.WithOpName("x"), DT_DOUBLE, TensorShape({2}));
  auto id2 = ops::Identity(t.WithOpName("id"), x2);
  id2.node()->SetAttr(kGradientOpTypeAttr, MakeAttr("NoSuchGradient"));
  std::vector<Output> none;
  absl::Status st = AddGradients(t, {ops::Sum(t, id2, 0)}, {x2}, &none);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find("'NoSuchGradient'"), std::string::npos) << st;
  EXPECT_NE(st.message().find("RegisterGradient"), std::string::npos) << st;
}

TEST(GradientsTest, SliceGoesBackIntoZerosAroundTheSlice) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3, 4, 2}));
  // Interior, open-ended (-1) and whole-dimension slices.
  auto a = ops::Slice(s, x, {1, 1, 0}, {1, 2, -1});
  auto b = ops::Slice(s, x, {0, 2, 1}, {-1, -1, 1});
  auto total = ops::Concat(s, {ops::Reshape(s, a, {-1}), ops::Reshape(s, b, {-1})}, 0);
  auto err = test::MaxGradientError(s, {x}, {RandomDouble({3, 4, 2}, -1, 1, 12)}, total, 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

// Repeated indices add their rows back twice; GatherV2Grad's own gradient gathers again.
TEST(GradientsTest, GatherAddsRowsBackWhereTheyCameFrom) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3, 4, 2}));
  auto g = Output(OpBuilder(s, "GatherV2").Input(x).Input({3, 0, 3}).Input(1).Finalize());
  auto err =
      test::MaxGradientError(s, {x}, {RandomDouble({3, 4, 2}, -1, 1, 31)}, ops::Mul(s, g, g), 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);

  Scope s2 = Scope::NewRootScope();
  auto dy = ops::Placeholder(s2.WithOpName("dy"), DT_DOUBLE, TensorShape({2, 3}));
  auto back = Output(
      OpBuilder(s2, "GatherV2Grad").Input(dy).Input({1, 1, 0}).Input(1).Input({2, 4}).Finalize());
  err = test::MaxGradientError(s2, {dy}, {RandomDouble({2, 3}, -1, 1, 32)},
                               ops::Mul(s2, back, back), 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

// A loop h = tanh(h * w + x) run 5 times: gradients for the initial h, for the captured w and
// x, through the backward While (more in tests/runtime/while_test.cc).
TEST(GradientsTest, WhileLoopAgainstFiniteDifferences) {
  Scope rc = Scope::NewRootScope();
  std::vector<Output> cargs = {ops::Placeholder(rc.WithOpName("i"), DT_INT32, TensorShape({})),
                               ops::Placeholder(rc.WithOpName("h"), DT_DOUBLE, TensorShape({2})),
                               ops::Placeholder(rc.WithOpName("w"), DT_DOUBLE, TensorShape({2})),
                               ops::Placeholder(rc.WithOpName("x"), DT_DOUBLE, TensorShape({2}))};
  auto cond = ops::MakeFunction(rc, cargs, {ops::Less(rc, cargs[0], 5)});
  Scope rb = Scope::NewRootScope();
  std::vector<Output> b = {ops::Placeholder(rb.WithOpName("i"), DT_INT32, TensorShape({})),
                           ops::Placeholder(rb.WithOpName("h"), DT_DOUBLE, TensorShape({2})),
                           ops::Placeholder(rb.WithOpName("w"), DT_DOUBLE, TensorShape({2})),
                           ops::Placeholder(rb.WithOpName("x"), DT_DOUBLE, TensorShape({2}))};
  auto next = ops::Tanh(rb, ops::Add(rb, ops::Mul(rb, b[1], b[2]), b[3]));
  auto body = ops::MakeFunction(rb, b, {ops::Add(rb, b[0], 1), next});
  ASSERT_TRUE(cond.ok() && body.ok());
  Scope s = Scope::NewRootScope();
  auto h0 = ops::Placeholder(s.WithOpName("h0"), DT_DOUBLE, TensorShape({2}));
  auto w = ops::Placeholder(s.WithOpName("w"), DT_DOUBLE, TensorShape({2}));
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2}));
  auto out = ops::While(s, {0, h0}, {w, x}, *cond, *body);
  auto err = test::MaxGradientError(
      s, {h0, w, x},
      {RandomDouble({2}, -1, 1, 33), RandomDouble({2}, 0.5, 1.5, 34), RandomDouble({2}, -1, 1, 35)},
      out[1], 1e-6);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-7);
}

// If(pred, x, w): tanh(x * w) or x * x + w; the gradient of the branch taken, each way.
TEST(GradientsTest, IfAgainstFiniteDifferences) {
  GraphFunction branches[2];
  for (int b = 0; b < 2; ++b) {
    Scope r = Scope::NewRootScope();
    auto x = ops::Placeholder(r.WithOpName("x"), DT_DOUBLE, TensorShape({2}));
    auto w = ops::Placeholder(r.WithOpName("w"), DT_DOUBLE, TensorShape({2}));
    auto out = b == 0 ? ops::Tanh(r, ops::Mul(r, x, w)) : ops::Add(r, ops::Mul(r, x, x), w);
    auto f = ops::MakeFunction(r, {x, w}, {out});
    ASSERT_TRUE(f.ok()) << f.status();
    branches[b] = *f;
  }
  for (bool taken : {true, false}) {
    Scope s = Scope::NewRootScope();
    auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2}));
    auto w = ops::Placeholder(s.WithOpName("w"), DT_DOUBLE, TensorShape({2}));
    auto out = ops::If(s, ops::Const(s, taken), {x, w}, branches[0], branches[1], {DT_DOUBLE},
                       {TensorShape({2})});
    auto err = test::MaxGradientError(
        s, {x, w}, {RandomDouble({2}, -1, 1, 41), RandomDouble({2}, 0.5, 1.5, 42)}, out[0], 1e-6);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, 1e-7) << (taken ? "then" : "else");
  }
}

// Regression: the gradients of Slice and Concat worked only with every shape known at build
// time; an LSTM's gate split on a batch of unknown size had none (dynamic_rnn, issue 14).
TEST(GradientsTest, SliceAndConcatWithAnUnknownBatch) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({-1, 4}));
  auto part =
      ops::Slice(s, x, Tensor::FromVector<int32_t>({0, 1}), Tensor::FromVector<int32_t>({-1, 2}));
  auto y = ops::Concat(s, {part, x}, 1);  // [?, 6]
  auto w = ops::Const(s, Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}));
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {ops::Mul(s, y, w)}, {x}, &grads).ok()) << s.status();
  auto out = test::RunScope(
      s, {{"x", Tensor::FromVector<double>({0, 0, 0, 0, 0, 0, 0, 0}, TensorShape({2, 4}))}},
      {grads[0]});
  ASSERT_TRUE(out.ok()) << out.status();
  // x[:, 1] gets w[0] + w[3], x[:, 2] gets w[1] + w[4], x[:, 0] w[2], x[:, 3] w[5].
  test::ExpectValues<double>((*out)[0], {3, 5, 7, 6, 3, 5, 7, 6}, 1e-12);
}

TEST(GradientsTest, SharedTensorsSumAndStopGradientStops) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3}));
  // y = x*x + stop(x)*x : dy/dx = 2x + stop(x) (the stopped path contributes no gradient).
  auto y = ops::Add(s, ops::Mul(s, x, x), ops::Mul(s, ops::StopGradient(s, x), x));
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {y}, {x}, &grads).ok());
  auto out = test::RunScope(s, {{"x", Tensor::FromVector<double>({1, 2, 3})}}, {grads[0]});
  ASSERT_TRUE(out.ok()) << out.status();
  test::ExpectValues<double>((*out)[0], {3, 6, 9}, 1e-12);
}

TEST(GradientsTest, UnreachableAndMissingGradients) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({3}));
  auto z = ops::Placeholder(s.WithOpName("z"), DT_FLOAT, TensorShape({3}));
  auto y = ops::Exp(s, x);
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {y}, {x, z}, &grads).ok());
  EXPECT_TRUE(grads[0].valid());
  EXPECT_FALSE(grads[1].valid());  // y does not depend on z
  // MaxPoolGradWithArgmax has no gradient function (no second derivatives through
  // max_pool_with_argmax): the error names the node and the way out.
  auto image = ops::Placeholder(s.WithOpName("image"), DT_FLOAT, TensorShape({1, 2, 2, 1}));
  auto pooled = ops::Placeholder(s.WithOpName("pooled"), DT_FLOAT, TensorShape({1, 1, 1, 1}));
  auto argmax = ops::Placeholder(s.WithOpName("argmax"), DT_INT64, TensorShape({1, 1, 1, 1}));
  Output p(OpBuilder(s.WithOpName("argmax_grad"), "MaxPoolGradWithArgmax")
               .Input(image)
               .Input(pooled)
               .Input(argmax)
               .Attr("ksize", std::vector<int64_t>{1, 2, 2, 1})
               .Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
               .Attr("padding", std::string("VALID"))
               .Finalize()
               .node(),
           0);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::Status st = AddGradients(s, {p}, {pooled}, &grads);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(
                "no gradient is registered for op 'MaxPoolGradWithArgmax' (node 'argmax_grad')"),
            std::string::npos)
      << st;
}

}  // namespace
}  // namespace shardflow
