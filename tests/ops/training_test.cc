#include "ops/training.h"

#include <cmath>

#include "gtest/gtest.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

std::unique_ptr<Session> Open(const Scope& s) {
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE((*session)->Create(def).ok());
  return *std::move(session);
}

TEST(VariableTest, InitializeReadAssignAndErrors) {
  Scope s = Scope::NewRootScope();
  Var w = Var::Create(s.WithOpName("w"), {1.0f, 2.0f});
  auto assign = OpBuilder(s.WithOpName("set"), "AssignVariableOp")
                    .Input(w.handle())
                    .Input({5.0f, 6.0f})
                    .Finalize();
  auto add = OpBuilder(s.WithOpName("add"), "AssignAddVariableOp")
                 .Input(w.handle())
                 .Input({1.0f, 1.0f})
                 .Finalize();
  auto bad = OpBuilder(s.WithOpName("bad"), "AssignVariableOp")
                 .Input(w.handle())
                 .Input({1.0f, 2.0f, 3.0f})
                 .Finalize();
  Operation init = InitializeAllVariables(s);
  EXPECT_EQ(w.name(), "w");
  EXPECT_EQ(w.shape().DebugString(), "[2]");
  auto session = Open(s);
  std::vector<Tensor> out;
  absl::Status before = session->Run({}, {w.value().name()}, {}, &out);
  EXPECT_EQ(before.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(before.message().find("variable 'w' is not initialized"), std::string::npos) << before;
  ASSERT_TRUE(session->Run({}, {}, {init.name()}, &out).ok());
  ASSERT_TRUE(session->Run({}, {w.value().name()}, {}, &out).ok());
  test::ExpectValues<float>(out[0], {1, 2});
  Tensor kept = out[0];  // a value read earlier must not change when the variable does
  ASSERT_TRUE(session->Run({}, {}, {"set"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {}, {"add"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {w.value().name()}, {}, &out).ok());
  test::ExpectValues<float>(out[0], {6, 7});
  test::ExpectValues<float>(kept, {1, 2});
  absl::Status shape = session->Run({}, {}, {"bad"}, &out);
  EXPECT_NE(shape.message().find("variable 'w' has shape [2] but the value has shape [3]"),
            std::string::npos)
      << shape;
}

TEST(VariableTest, WithoutValidateShapeAssignmentsMayChangeTheShape) {
  Scope s = Scope::NewRootScope();
  Var acc = Var::Create(s.WithOpName("acc"), {1.0f, 2.0f}, /*trainable=*/false,
                        /*validate_shape=*/false);
  auto grow = OpBuilder(s.WithOpName("grow"), "AssignVariableOp")
                  .Input(acc.handle())
                  .Input({1.0f, 2.0f, 3.0f})
                  .Finalize();
  Operation init = InitializeAllVariables(s);
  EXPECT_TRUE(acc.shape().unknown_rank()) << acc.shape().DebugString();
  auto session = Open(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init.name()}, &out).ok());
  ASSERT_TRUE(session->Run({}, {}, {"grow"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {acc.value().name()}, {}, &out).ok());
  test::ExpectValues<float>(out[0], {1, 2, 3});
}

TEST(VariableTest, VariablesPersistAcrossRunSignatures) {
  Scope s = Scope::NewRootScope();
  Var v = Var::Create(s.WithOpName("counter"), Tensor::Scalar(0.0f));
  auto inc = OpBuilder(s.WithOpName("inc"), "AssignAddVariableOp")
                 .Input(v.handle())
                 .Input(1.0f)
                 .Finalize();
  Operation init = InitializeAllVariables(s);
  auto session = Open(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init.name()}, &out).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(session->Run({}, {}, {"inc"}, &out).ok());
  ASSERT_TRUE(session->Run({}, {v.value().name()}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 5.0f);
}

// loss = sum((w - target)^2) / 2, so grad = w - target.
struct Quadratic {
  Scope s = Scope::NewRootScope();
  Var w;
  Output loss;
  Quadratic() {
    w = Var::Create(s.WithOpName("w"), {1.0, -2.0});
    loss = ops::Mul(s, ops::Sum(s, ops::Square(s, ops::Sub(s, w.value(), {3.0, 4.0})), 0), 0.5);
  }
};

std::vector<double> RunSteps(Quadratic& q, Optimizer& opt, int steps) {
  auto train = opt.Minimize(q.s, q.loss);
  EXPECT_TRUE(train.ok()) << train.status();
  Operation init = InitializeAllVariables(q.s);
  auto session = Open(q.s);
  std::vector<Tensor> out;
  EXPECT_TRUE(session->Run({}, {}, {init.name()}, &out).ok());
  for (int i = 0; i < steps; ++i) {
    absl::Status st = session->Run({}, {}, {train->name()}, &out);
    EXPECT_TRUE(st.ok()) << st;
  }
  EXPECT_TRUE(session->Run({}, {q.w.value().name()}, {}, &out).ok());
  return {out[0].data<double>()[0], out[0].data<double>()[1]};
}

TEST(OptimizerTest, GradientDescentExactStep) {
  Quadratic q;
  GradientDescentOptimizer sgd(0.1);
  auto w = RunSteps(q, sgd, 1);
  // w - 0.1 * (w - target)
  EXPECT_NEAR(w[0], 1 - 0.1 * (1 - 3), 1e-12);
  EXPECT_NEAR(w[1], -2 - 0.1 * (-2 - 4), 1e-12);
}

TEST(OptimizerTest, MomentumExactTwoSteps) {
  Quadratic q;
  MomentumOptimizer momentum(0.1, 0.9);
  auto w = RunSteps(q, momentum, 2);
  double x = 1, acc = 0;
  for (int i = 0; i < 2; ++i) {
    acc = 0.9 * acc + (x - 3);
    x -= 0.1 * acc;
  }
  EXPECT_NEAR(w[0], x, 1e-12);
}

TEST(OptimizerTest, AdamMatchesTheFormula) {
  Quadratic q;
  AdamOptimizer adam(0.1);
  auto w = RunSteps(q, adam, 3);
  double x = 1, m = 0, v = 0;
  for (int t = 1; t <= 3; ++t) {
    double g = x - 3;
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    double lr_t = 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    x -= lr_t * m / (std::sqrt(v) + 1e-8);
  }
  EXPECT_NEAR(w[0], x, 1e-12);
}

TEST(OptimizerTest, AllOptimizersConverge) {
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    Quadratic q;
    GradientDescentOptimizer sgd(0.5);
    MomentumOptimizer momentum(0.1, 0.9, /*use_nesterov=*/true);
    AdamOptimizer adam(0.2);
    Optimizer* opt = which == 0   ? static_cast<Optimizer*>(&sgd)
                     : which == 1 ? static_cast<Optimizer*>(&momentum)
                                  : static_cast<Optimizer*>(&adam);
    auto w = RunSteps(q, *opt, 200);
    EXPECT_NEAR(w[0], 3, 1e-2);
    EXPECT_NEAR(w[1], 4, 1e-2);
  }
}

TEST(OptimizerTest, LossWithoutVariablesIsAnError) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s, DT_FLOAT);
  GradientDescentOptimizer sgd(0.1);
  auto train = sgd.Minimize(s, ops::Square(s, x));
  ASSERT_FALSE(train.ok());
  EXPECT_NE(train.status().message().find("no trainable variables"), std::string::npos);
}

TEST(InitializerTest, SeededInitializersAreReproducibleAndScaled) {
  auto draw = [](int64_t seed) {
    Scope s = Scope::NewRootScope();
    auto w = init::GlorotUniform(s, {200, 300}, seed);
    auto h = init::HeNormal(s, {5, 5, 32, 64}, seed);
    auto out = test::RunScope(s, {}, {w, h});
    EXPECT_TRUE(out.ok()) << out.status();
    return *out;
  };
  auto a = draw(42), b = draw(42), c = draw(43);
  EXPECT_EQ(0, std::memcmp(a[0].raw_data(), b[0].raw_data(), a[0].TotalBytes()));
  EXPECT_NE(0, std::memcmp(a[0].raw_data(), c[0].raw_data(), a[0].TotalBytes()));
  double limit = std::sqrt(6.0 / 500), max_abs = 0, sum_sq = 0;
  for (int64_t i = 0; i < a[0].NumElements(); ++i) {
    max_abs = std::max(max_abs, std::abs(static_cast<double>(a[0].data<float>()[i])));
  }
  EXPECT_LE(max_abs, limit);
  EXPECT_GT(max_abs, 0.95 * limit);
  for (int64_t i = 0; i < a[1].NumElements(); ++i) sum_sq += std::pow(a[1].data<float>()[i], 2);
  double stddev = std::sqrt(sum_sq / a[1].NumElements());
  EXPECT_NEAR(stddev, std::sqrt(2.0 / (5 * 5 * 32)), 0.1 * std::sqrt(2.0 / 800));
}

}  // namespace
}  // namespace shardflow
