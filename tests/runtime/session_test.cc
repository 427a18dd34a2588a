#include "runtime/session.h"

#include <thread>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/scope.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

std::unique_ptr<Session> Open(const Scope& s, SessionOptions options = SessionOptions()) {
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok());
  absl::Status st = (*session)->Create(def);
  EXPECT_TRUE(st.ok()) << st;
  return *std::move(session);
}

TEST(SessionTest, FeedFetchAndReuseAcrossRuns) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 2}));
  auto w = ops::Const(s, {{1.0f, 2.0f}, {3.0f, 4.0f}});
  auto y = ops::MatMul(s.WithOpName("y"), x, w);
  auto session = Open(s);
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out;
    Tensor xv = Tensor::FromVector<float>({1, step * 1.0f}, TensorShape({1, 2}));
    ASSERT_TRUE(session->Run({{"x", xv}}, {"y"}, {}, &out).ok());
    test::ExpectValues<float>(out[0], {1 + 3.0f * step, 2 + 4.0f * step});
  }
}

// Regression: each (feeds, fetches, targets) signature had its own random kernels, so a
// seeded random op fetched through a second signature replayed its first draws. Now one kernel
// per node serves every signature of a session (runtime/shared_kernels.h), as in TensorFlow;
// a new session starts the sequence again.
TEST(SessionTest, SeededRandomOpsContinueTheirSequenceAcrossSignatures) {
  Scope s = Scope::NewRootScope();
  Operation r = OpBuilder(s.WithOpName("r"), "RandomUniform")
                    .Input(ops::Const(s, Tensor::FromVector<int32_t>({4})))
                    .Attr("dtype", DT_FLOAT)
                    .Attr("seed", int64_t{7})
                    .Attr("seed2", int64_t{3})
                    .Finalize();
  ASSERT_TRUE(s.ok() && r.valid()) << s.status();
  ops::Identity(s.WithOpName("other"), ops::Const(s, 1.0f));
  auto draws = [&](Session* session, std::vector<std::string> fetches) {
    std::vector<Tensor> out;
    absl::Status st = session->Run({}, fetches, {}, &out);
    EXPECT_TRUE(st.ok()) << st;
    return st.ok() ? std::vector<float>(out[0].data<float>(), out[0].data<float>() + 4)
                   : std::vector<float>();
  };
  auto session = Open(s);
  const std::vector<float> first = draws(session.get(), {"r"});
  const std::vector<float> second = draws(session.get(), {"r", "other"});
  const std::vector<float> third = draws(session.get(), {"r"});
  EXPECT_NE(first, second);
  EXPECT_NE(second, third);
  EXPECT_NE(first, third);
  auto fresh = Open(s);
  EXPECT_EQ(draws(fresh.get(), {"r", "other"}), first);
  EXPECT_EQ(draws(fresh.get(), {"r"}), second);
}

TEST(SessionTest, FetchingAFedTensorReturnsTheFeed) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_INT32);
  ops::Identity(s.WithOpName("id"), x);
  auto session = Open(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({{"x:0", Tensor::Scalar<int32_t>(5)}}, {"x:0", "id"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<int32_t>(), 5);
  EXPECT_EQ(out[1].scalar<int32_t>(), 5);
}

TEST(SessionTest, FeedingAnIntermediateTensorCutsTheGraph) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  auto mid = ops::Identity(s.WithOpName("mid"), x);
  ops::Identity(s.WithOpName("out"), mid);
  auto session = Open(s);
  std::vector<Tensor> out;
  // x is not fed: fine, because mid is.
  absl::Status st = session->Run({{"mid", Tensor::Scalar(2.5f)}}, {"out"}, {}, &out);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(out[0].scalar<float>(), 2.5f);
}

TEST(SessionTest, BadFeedsAndFetchesAreClearErrors) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 3}));
  ops::Identity(s.WithOpName("y"), x);
  auto session = Open(s);
  std::vector<Tensor> out;
  absl::Status dtype = session->Run({{"x", Tensor::Scalar<int32_t>(1)}}, {"y"}, {}, &out);
  EXPECT_EQ(dtype.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dtype.message().find("feed 'x': expected float of shape [?,3] but got int32"),
            std::string::npos)
      << dtype;
  absl::Status shape =
      session->Run({{"x", Tensor(DT_FLOAT, TensorShape({2, 4}))}}, {"y"}, {}, &out);
  EXPECT_NE(shape.message().find("of shape [2,4]"), std::string::npos) << shape;
  absl::Status unfed = session->Run({}, {"y"}, {}, &out);
  EXPECT_NE(unfed.message().find("placeholder 'x' (float, shape [?,3])"), std::string::npos)
      << unfed;
  absl::Status nofetch = session->Run({}, {"nothere:0"}, {}, &out);
  EXPECT_EQ(nofetch.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(nofetch.message().find("no node named 'nothere'"), std::string::npos) << nofetch;
  absl::Status badslot =
      session->Run({{"x", Tensor(DT_FLOAT, TensorShape({1, 3}))}}, {"y:1"}, {}, &out);
  EXPECT_NE(badslot.message().find("has 1 output(s)"), std::string::npos) << badslot;
  absl::Status notarget = session->Run({}, {}, {"ghost"}, &out);
  EXPECT_EQ(notarget.code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(session->Run({}, {}, {}, &out).ok());
}

TEST(SessionTest, KernelErrorsNameTheNode) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  ops::Reshape(s.WithOpName("reshape"), x, {5});
  auto session = Open(s);
  std::vector<Tensor> out;
  absl::Status st =
      session->Run({{"x", Tensor(DT_FLOAT, TensorShape({2, 3}))}}, {"reshape"}, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'reshape' (Reshape)"), std::string::npos) << st;
  // The session stays usable after a failed step.
  ASSERT_TRUE(
      session->Run({{"x", Tensor(DT_FLOAT, TensorShape({5}))}}, {"reshape"}, {}, &out).ok());
}

TEST(SessionTest, TargetsRunAndPruningSkipsUnneededNodes) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  ops::Identity(s.WithOpName("needs_x"), x);
  auto c = ops::Const(s.WithOpName("c"), 4.0f);
  auto group = ops::NoOp(s.WithOpName("group").WithControlDependencies(c));
  auto session = Open(s);
  std::vector<Tensor> out;
  // Placeholder x is not needed for c, so it need not be fed.
  ASSERT_TRUE(session->Run({}, {"c"}, {"group"}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 4.0f);
  RunMetadata md;
  RunOptions opts;
  opts.set_trace_level(RunOptions::FULL_TRACE);
  ASSERT_TRUE(session->Run(opts, {}, {}, {"group"}, &out, &md).ok());
  EXPECT_EQ(md.placement().count("needs_x"), 0u);
  EXPECT_EQ(md.placement().count("group"), 1u);
  int recorded = 0;
  for (const auto& d : md.step_stats().dev_stats()) recorded += d.node_stats_size();
  EXPECT_EQ(recorded, 2);  // c and group
}

TEST(SessionTest, ControlEdgesOrderExecution) {
  // A chain of Identity nodes linked only by control edges must run in order; the step stats
  // tell the order.
  Scope s = Scope::NewRootScope();
  std::vector<Operation> prev;
  for (int i = 0; i < 20; ++i) {
    auto c = ops::Const(s.WithOpName("c" + std::to_string(i)).WithControlDependencies(prev), i);
    prev = {c.op()};
  }
  auto session = Open(s);
  RunMetadata md;
  RunOptions opts;
  opts.set_trace_level(RunOptions::FULL_TRACE);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run(opts, {}, {"c19"}, {}, &out, &md).ok());
  std::vector<std::string> order;
  for (const auto& n : md.step_stats().dev_stats(0).node_stats()) {
    if (n.op() == "Const") order.push_back(n.node_name());
  }
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[i], "c" + std::to_string(i));
}

TEST(SessionTest, ConcurrentRunsFromManyThreads) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({64, 64}));
  auto y = ops::MatMul(s.WithOpName("y"), x, x);
  ops::Sum(s.WithOpName("total"), y, {0, 1});
  auto session = Open(s);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Tensor xv(DT_FLOAT, TensorShape({64, 64}));
      for (int i = 0; i < 64 * 64; ++i) xv.data<float>()[i] = (t + 1) * 0.01f;
      for (int i = 0; i < 20; ++i) {
        std::vector<Tensor> out;
        if (!session->Run({{"x", xv}}, {"y"}, {}, &out).ok()) ++failures;
        float expect = 64 * (t + 1) * 0.01f * (t + 1) * 0.01f;
        if (std::abs(out[0].data<float>()[0] - expect) > 1e-4) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(SessionTest, ExplicitDeviceThatDoesNotExist) {
  Scope s = Scope::NewRootScope();
  ops::Const(s.WithOpName("c").WithDevice("/device:GPU:0"), 1.0f);
  auto session = Open(s);
  std::vector<Tensor> out;
  absl::Status st = session->Run({}, {"c"}, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'c' (Const) was explicitly assigned to '/device:GPU:0'"),
            std::string::npos)
      << st;
  EXPECT_NE(
      st.message().find("available devices are [/job:localhost/replica:0/task:0/device:CPU:0]"),
      std::string::npos)
      << st;
  SessionOptions soft;
  soft.config.set_allow_soft_placement(true);
  auto soft_session = Open(s, soft);
  ASSERT_TRUE(soft_session->Run({}, {"c"}, {}, &out).ok());
}

TEST(SessionTest, LifecycleErrors) {
  auto session = NewSession(SessionOptions());
  std::vector<Tensor> out;
  EXPECT_EQ((*session)->Run({}, {"x"}, {}, &out).code(), absl::StatusCode::kFailedPrecondition);
  SessionOptions unknown;
  unknown.target = "carrier-pigeon://localhost:1";
  auto bad = NewSession(unknown);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("grpc://host:port"), std::string::npos) << bad.status();
  // A grpc:// session with no master there fails at its first call, naming the address.
  SessionOptions remote;
  remote.target = "grpc://127.0.0.1:1";
  auto unreachable = NewSession(remote);
  ASSERT_TRUE(unreachable.ok()) << unreachable.status();
  absl::Status created = (*unreachable)->Create(GraphDef());
  EXPECT_EQ(created.code(), absl::StatusCode::kUnavailable) << created;
  EXPECT_NE(created.message().find("127.0.0.1:1"), std::string::npos) << created;
  ASSERT_TRUE((*session)->Close().ok());
  EXPECT_FALSE((*session)->Create(GraphDef()).ok());
}

TEST(SessionTest, ExtendAddsNodes) {
  Scope s = Scope::NewRootScope();
  ops::Const(s.WithOpName("a"), 2.0f);
  auto session = Open(s);
  GraphDef more;
  NodeDef* n = more.add_node();
  n->set_name("b");
  n->set_op("Identity");
  n->add_input("a");
  (*n->mutable_attr())["T"].set_type(DT_FLOAT);
  ASSERT_TRUE(session->Extend(more).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {"b"}, {}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 2.0f);
}

}  // namespace
}  // namespace shardflow

namespace shardflow {
namespace {

TEST(SessionTest, CheckNumericsNamesTheFirstNonFiniteOp) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({3}));
  auto bad = ops::Log(s.WithOpName("log"), x);  // log(-1) = NaN
  auto out = ops::Exp(s.WithOpName("exp"), ops::Mul(s.WithOpName("scaled"), bad, 2.0f));
  auto session = Open(s);
  std::vector<Tensor> result;
  Tensor xv = Tensor::FromVector<float>({1, -1, 2});
  ASSERT_TRUE(session->Run({{"x", xv}}, {"exp"}, {}, &result).ok());  // NaN flows silently
  EXPECT_TRUE(std::isnan(result[0].data<float>()[1]));
  RunOptions opts;
  opts.set_check_numerics(true);
  absl::Status st = session->Run(opts, {{"x", xv}}, {"exp"}, {}, &result, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node 'log' (Log): produced NaN in output 0 (shape [3], element 1)"),
            std::string::npos)
      << st;
  // The CheckNumerics op fails the step with its message.
  Scope c = Scope::NewRootScope();
  auto y = ops::Placeholder(c.WithOpName("y"), DT_FLOAT);
  OpBuilder(c.WithOpName("check"), "CheckNumerics")
      .Input(y)
      .Attr("message", std::string("y is bad"))
      .Finalize();
  auto checker = Open(c);
  st = checker->Run({{"y", Tensor::Scalar(INFINITY)}}, {"check"}, {}, &result);
  EXPECT_NE(st.message().find("y is bad: tensor of shape [] holds Inf"), std::string::npos) << st;
}

}  // namespace
}  // namespace shardflow
