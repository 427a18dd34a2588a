// While (ops/control_flow_ops.cc, runtime/while_op.cc): loops run through the session's
// function runtime, keep their history for gradients, span devices, and fail clearly.
#include <cmath>

#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

std::unique_ptr<Session> Open(const Scope& s, int cpus = 1) {
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  SessionOptions options;
  options.config.set_cpu_device_count(cpus);
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok());
  absl::Status st = (*session)->Create(def);
  EXPECT_TRUE(st.ok()) << st;
  return *std::move(session);
}

// cond: i < n. body: (i + 1, acc * x), on `body_device` ("" = where the loop runs).
struct PowerLoop {
  GraphFunction cond, body;
};

PowerLoop MakePowerLoop(const std::string& body_device = "") {
  PowerLoop loop;
  {
    Scope r = Scope::NewRootScope();
    auto i = ops::Placeholder(r.WithOpName("c/i"), DT_INT32, TensorShape({}));
    auto acc = ops::Placeholder(r.WithOpName("c/acc"), DT_DOUBLE, TensorShape({3}));
    auto x = ops::Placeholder(r.WithOpName("c/x"), DT_DOUBLE, TensorShape({3}));
    auto n = ops::Placeholder(r.WithOpName("c/n"), DT_INT32, TensorShape({}));
    auto more = ops::Less(r.WithOpName("c/more"), i, n);
    loop.cond = *ops::MakeFunction(r, {i, acc, x, n}, {more});
  }
  Scope r = Scope::NewRootScope();
  auto i = ops::Placeholder(r.WithOpName("b/i"), DT_INT32, TensorShape({}));
  auto acc = ops::Placeholder(r.WithOpName("b/acc"), DT_DOUBLE, TensorShape({3}));
  auto x = ops::Placeholder(r.WithOpName("b/x"), DT_DOUBLE, TensorShape({3}));
  auto n = ops::Placeholder(r.WithOpName("b/n"), DT_INT32, TensorShape({}));
  Scope d = r.WithDevice(body_device);
  auto next_i = ops::Add(d.WithOpName("b/next_i"), i, 1);
  auto next_acc = ops::Mul(d.WithOpName("b/next_acc"), acc, ops::Tanh(d, x));
  loop.body = *ops::MakeFunction(r, {i, acc, x, n}, {next_i, next_acc});
  return loop;
}

TEST(WhileTest, RunsUntilCondIsFalse) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3}));
  auto n = ops::Placeholder(s.WithOpName("n"), DT_INT32, TensorShape({}));
  PowerLoop f = MakePowerLoop();
  auto out = ops::While(s.WithOpName("loop"), {0, ops::OnesLike(s, x)}, {x, n}, f.cond, f.body);
  ops::Identity(s.WithOpName("i"), out[0]);
  ops::Identity(s.WithOpName("acc"), out[1]);
  auto session = Open(s);
  for (int steps : {0, 1, 5}) {
    std::vector<Tensor> got;
    Tensor xv = Tensor::FromVector<double>({0.5, 1.0, -2.0});
    ASSERT_TRUE(
        session->Run({{"x", xv}, {"n", Tensor::Scalar<int32_t>(steps)}}, {"i", "acc"}, {}, &got)
            .ok());
    EXPECT_EQ(got[0].scalar<int32_t>(), steps);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(got[1].data<double>()[k], std::pow(std::tanh(xv.data<double>()[k]), steps),
                  1e-12);
    }
  }
}

// d/dx sum(tanh(x)^n) = n tanh(x)^(n-1) (1 - tanh(x)^2), against the While's gradient and against
// central finite differences of the loop itself.
TEST(WhileTest, GradientMatchesFiniteDifferences) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3}));
  auto n = ops::Placeholder(s.WithOpName("n"), DT_INT32, TensorShape({}));
  PowerLoop f = MakePowerLoop();
  auto out = ops::While(s.WithOpName("loop"), {0, ops::OnesLike(s, x)}, {x, n}, f.cond, f.body);
  auto y = ops::Sum(s.WithOpName("y"), out[1], {0});
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {y}, {x}, &grads).ok()) << s.status();
  ops::Identity(s.WithOpName("dx"), grads[0]);
  auto session = Open(s);
  const std::vector<double> x0 = {0.3, 1.1, -0.7};
  auto run = [&](const std::vector<double>& xv, const std::string& fetch) {
    std::vector<Tensor> got;
    absl::Status st =
        session->Run({{"x", Tensor::FromVector<double>(xv)}, {"n", Tensor::Scalar<int32_t>(4)}},
                     {fetch}, {}, &got);
    EXPECT_TRUE(st.ok()) << st;
    return got.empty() ? Tensor() : got[0];
  };
  Tensor dx = run(x0, "dx");
  ASSERT_TRUE(dx.IsInitialized());
  const double h = 1e-6;
  for (int k = 0; k < 3; ++k) {
    std::vector<double> up = x0, down = x0;
    up[k] += h;
    down[k] -= h;
    double numeric = (run(up, "y").scalar<double>() - run(down, "y").scalar<double>()) / (2 * h);
    double t = std::tanh(x0[k]);
    double exact = 4 * std::pow(t, 3) * (1 - t * t);
    EXPECT_NEAR(dx.data<double>()[k], exact, 1e-10) << k;
    EXPECT_NEAR(dx.data<double>()[k], numeric, 1e-6) << k;
  }
}

TEST(WhileTest, ABodySplitAcrossDevicesGivesTheSameResult) {
  auto build = [](const std::string& body_device, std::vector<Tensor>* got, RunMetadata* meta) {
    Scope s = Scope::NewRootScope();
    auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3}));
    auto n = ops::Placeholder(s.WithOpName("n"), DT_INT32, TensorShape({}));
    PowerLoop f = MakePowerLoop(body_device);
    Scope cpu0 = s.WithDevice("/device:CPU:0");
    auto out =
        ops::While(cpu0.WithOpName("loop"), {0, ops::OnesLike(s, x)}, {x, n}, f.cond, f.body);
    auto y = ops::Sum(s.WithOpName("y"), out[1], {0});
    std::vector<Output> grads;
    ASSERT_TRUE(AddGradients(s, {y}, {x}, &grads).ok()) << s.status();
    ops::Identity(s.WithOpName("dx"), grads[0]);
    auto session = Open(s, 2);
    RunOptions options;
    options.set_trace_level(RunOptions::FULL_TRACE);
    absl::Status st = session->Run(
        options,
        {{"x", Tensor::FromVector<double>({0.3, 1.1, -0.7})}, {"n", Tensor::Scalar<int32_t>(3)}},
        {"y", "dx"}, {}, got, meta);
    ASSERT_TRUE(st.ok()) << st;
  };
  std::vector<Tensor> one, two;
  RunMetadata meta_one, meta_two;
  build("", &one, &meta_one);
  build("/device:CPU:1", &two, &meta_two);
  EXPECT_EQ(one[0].scalar<double>(), two[0].scalar<double>());
  for (int k = 0; k < 3; ++k) EXPECT_EQ(one[1].data<double>()[k], two[1].data<double>()[k]);
  // The trace shows the body's ops once per iteration, on the device they ran on.
  int on_cpu1 = 0, sends = 0;
  for (const auto& dev : meta_two.step_stats().dev_stats()) {
    for (const auto& ns : dev.node_stats()) {
      if (ns.node_name() == "b/next_acc") {
        EXPECT_NE(dev.device().find("CPU:1"), std::string::npos) << dev.device();
        ++on_cpu1;
      }
      if (ns.op() == "_Send") ++sends;
    }
  }
  EXPECT_EQ(on_cpu1, 3);
  EXPECT_GT(sends, 0);
}

TEST(WhileTest, ManyIterationsUseNoDeepRecursion) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::FromVector<double>({1e-5, 1e-5, 1e-5}));
  PowerLoop f = MakePowerLoop();
  auto out = ops::While(s.WithOpName("loop"), {0, ops::OnesLike(s, x)}, {x, 20000}, f.cond, f.body,
                        /*keep_history=*/false);
  ops::Identity(s.WithOpName("i"), out[0]);
  auto session = Open(s);
  std::vector<Tensor> got;
  ASSERT_TRUE(session->Run({}, {"i"}, {}, &got).ok());
  EXPECT_EQ(got[0].scalar<int32_t>(), 20000);
}

TEST(WhileTest, ABodyThatChangesAShapeOrFailsIsAClearError) {
  // body: acc -> concat(acc, acc): the shape grows.
  Scope r = Scope::NewRootScope();
  auto acc = ops::Placeholder(r.WithOpName("acc"), DT_FLOAT);
  auto cond = *ops::MakeFunction(r, {acc}, {ops::Less(r, ops::Sum(r, acc, {0}), 100.0f)});
  Scope rb = Scope::NewRootScope();
  auto acc_b = ops::Placeholder(rb.WithOpName("acc"), DT_FLOAT);
  auto body = *ops::MakeFunction(rb, {acc_b}, {ops::Concat(rb, {acc_b, acc_b}, 0)});
  Scope s = Scope::NewRootScope();
  auto out = ops::While(s.WithOpName("loop"), {Tensor::FromVector<float>({1, 2})}, {}, cond, body);
  ops::Identity(s.WithOpName("y"), out[0]);
  auto session = Open(s);
  std::vector<Tensor> got;
  absl::Status st = session->Run({}, {"y"}, {}, &got);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("'loop'"), std::string::npos) << st;
  EXPECT_NE(st.message().find("shape_invariants"), std::string::npos) << st;

  // A body whose op fails names the iteration.
  Scope rf = Scope::NewRootScope();
  auto v = ops::Placeholder(rf.WithOpName("v"), DT_FLOAT);
  auto bad = ops::Reshape(rf, v, {3});  // two elements: fails when it runs
  auto failing = *ops::MakeFunction(rf, {v}, {bad});
  Scope rc = Scope::NewRootScope();
  auto vc = ops::Placeholder(rc.WithOpName("v"), DT_FLOAT);
  auto always = *ops::MakeFunction(rc, {vc}, {ops::Less(rc, ops::Sum(rc, vc, {0}), 1e9f)});
  Scope s2 = Scope::NewRootScope();
  auto out2 =
      ops::While(s2.WithOpName("loop2"), {Tensor::FromVector<float>({3, 3})}, {}, always, failing);
  ops::Identity(s2.WithOpName("y"), out2[0]);
  auto session2 = Open(s2);
  st = session2->Run({}, {"y"}, {}, &got);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("iteration"), std::string::npos) << st;
}

TEST(WhileTest, AGradientNeedsHistory) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({3}));
  PowerLoop f = MakePowerLoop();
  auto out = ops::While(s.WithOpName("loop"), {0, ops::OnesLike(s, x)}, {x, 3}, f.cond, f.body,
                        /*keep_history=*/false);
  std::vector<Output> grads;
  absl::Status st = AddGradients(s, {ops::Sum(s, out[1], {0})}, {x}, &grads);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("back_prop=True"), std::string::npos) << st;
}

}  // namespace
}  // namespace shardflow
