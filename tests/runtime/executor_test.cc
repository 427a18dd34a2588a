#include "runtime/executor.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "core/framework/kernel_registry.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

std::atomic<int> g_counted{0};

// Test ops: an expensive counter, a kernel that always fails, and an async kernel that finishes
// on another thread after `millis`.
// Stateful: they count, fail or sleep as a side effect, which the graph optimizer must neither
// fold into a constant at plan time nor merge.
REGISTER_OP("TestCount")
    .Input("x: float")
    .Output("y: float")
    .SetIsStateful()
    .SetShapeFn(UnchangedShape);
REGISTER_OP("TestFail")
    .Input("x: float")
    .Output("y: float")
    .SetIsStateful()
    .SetShapeFn(UnchangedShape);
REGISTER_OP("TestSleep")
    .Input("x: float")
    .Output("y: float")
    .SetIsStateful()
    .SetShapeFn(UnchangedShape);
REGISTER_OP("TestAsyncDelay")
    .Input("x: float")
    .Output("y: float")
    .Attr("millis: int = 10")
    .SetIsStateful()
    .SetShapeFn(UnchangedShape);

class CountOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ++g_counted;
    ctx->set_output(0, ctx->input(0));
  }
};
class FailOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    ctx->SetStatus(absl::InvalidArgumentError("this kernel always fails"));
  }
};
// A synchronous kernel that blocks its thread for 400 ms.
class SleepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ctx->set_output(0, ctx->input(0));
  }
};
class AsyncDelayOp : public AsyncOpKernel {
 public:
  explicit AsyncDelayOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    (void)c->GetAttr("millis", &millis_);
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    Tensor in = ctx->input(0);
    std::thread([ctx, done, in, ms = millis_] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      ctx->set_output(0, in);
      done();
    }).detach();
  }

 private:
  int millis_ = 10;
};
REGISTER_KERNEL(KernelDef("TestCount").Device(kDeviceCpu), CountOp);
REGISTER_KERNEL(KernelDef("TestFail").Device(kDeviceCpu), FailOp);
REGISTER_KERNEL(KernelDef("TestAsyncDelay").Device(kDeviceCpu), AsyncDelayOp);
REGISTER_KERNEL(KernelDef("TestSleep").Device(kDeviceCpu), SleepOp);

Output Custom(const Scope& s, const char* op, const Input& x) {
  Operation o = OpBuilder(s, op).Input(x).Finalize();
  return Output(o.node(), 0);
}

TEST(ExecutorTest, LongChainAndWideFanOut) {
  Scope s = Scope::NewRootScope();
  Output chain = ops::Const(s, 1.0f);
  for (int i = 0; i < 10000; ++i) chain = ops::Identity(s, chain);
  auto src = ops::Const(s, 2.0f);
  std::vector<Operation> fan;
  for (int i = 0; i < 10000; ++i) fan.push_back(ops::Identity(s, src).op());
  auto join = ops::NoOp(s.WithOpName("join").WithControlDependencies(fan));
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*session)->Run({}, {chain.name()}, {"join"}, &out).ok());
  EXPECT_EQ(out[0].scalar<float>(), 1.0f);
}

TEST(ExecutorTest, ExpensiveIndependentNodesAllRun) {
  g_counted = 0;
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, 1.0f);
  std::vector<Input> outs;
  for (int i = 0; i < 50; ++i) outs.push_back(Custom(s, "TestCount", x));
  auto sum = ops::AddN(s.WithOpName("sum"), outs);
  auto out = test::RunScope(s, {}, {sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 50.0f);
  EXPECT_EQ(g_counted.load(), 50);
}

TEST(ExecutorTest, FirstErrorAbortsAndLaterNodesDoNotRun) {
  g_counted = 0;
  Scope s = Scope::NewRootScope();
  Output x = ops::Const(s, 1.0f);
  Output f = Custom(s.WithOpName("boom"), "TestFail", x);
  Output after = f;
  for (int i = 0; i < 10; ++i) after = Custom(s, "TestCount", after);
  auto out = test::RunScope(s, {}, {after});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("node 'boom' (TestFail): this kernel always fails"),
            std::string::npos)
      << out.status();
  EXPECT_EQ(g_counted.load(), 0);
}

TEST(ExecutorTest, AsyncKernelsFinishOnOtherThreads) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Const(s, 3.0f);
  std::vector<Input> outs;
  for (int i = 0; i < 8; ++i) outs.push_back(Custom(s, "TestAsyncDelay", ops::Identity(s, x)));
  auto sum = ops::AddN(s, outs);
  auto out = test::RunScope(s, {}, {sum});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 24.0f);
}

TEST(ExecutorTest, TimeoutCancelsTheStep) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Const(s, 1.0f);
  Operation slow =
      OpBuilder(s.WithOpName("slow"), "TestAsyncDelay").Input(x).Attr("millis", 500).Finalize();
  Output after = Custom(s, "TestCount", Output(slow.node(), 0));
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE((*session)->Create(def).ok());
  RunOptions opts;
  opts.set_timeout_in_ms(50);
  std::vector<Tensor> out;
  auto start = std::chrono::steady_clock::now();
  absl::Status st = (*session)->Run(opts, {}, {after.name()}, {}, &out, nullptr);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_LT(took, std::chrono::milliseconds(400));
  // Destroying the session now waits for the abandoned step instead of freeing its executor
  // under it (regression: this was a use-after-free).
  session->reset();
}

// Regression: a step on one device ran on the caller's thread, so a slow synchronous kernel
// finished before the timeout was ever checked.
TEST(ExecutorTest, TimeoutCoversSlowSynchronousKernelsOnOneDevice) {
  Scope s = Scope::NewRootScope();
  Output slow = Custom(s.WithOpName("sleepy"), "TestSleep", ops::Const(s, 1.0f));
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE((*session)->Create(def).ok());
  RunOptions opts;
  opts.set_timeout_in_ms(50);
  std::vector<Tensor> out;
  auto start = std::chrono::steady_clock::now();
  absl::Status st = (*session)->Run(opts, {}, {slow.name()}, {}, &out, nullptr);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_LT(took, std::chrono::milliseconds(350));
  // Closing waits for the abandoned step before dropping its executors (regression: closing
  // right after a timeout freed them under the running kernel).
  EXPECT_TRUE((*session)->Close().ok());
  session->reset();
}

}  // namespace
}  // namespace shardflow
