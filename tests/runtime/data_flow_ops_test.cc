// Gradient accumulators and FIFO queues (ops/data_flow_ops.cc) in a local session: the mean of
// the fresh gradients, stale ones dropped and counted, a take that waits for an apply from
// another step, a wait ended by the step's deadline without losing the accumulator, close; the
// queue's order, enqueue-many, a dequeue woken by an enqueue, timeouts, close; and the errors
// (shapes, dtypes, a name taken by another kind of resource, a variable declared twice
// differently).
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "core/framework/attr_value.h"
#include "core/framework/resource_mgr.h"
#include "core/platform/status.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

using test::ExpectValues;

// One graph with an accumulator "acc" (float [2]) and a queue "q" (int64 scalars), and the ops
// that use them, fed through placeholders.
class DataFlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Scope s = Scope::NewRootScope();
    auto acc = OpBuilder(s.WithOpName("acc"), "ResourceConditionalAccumulator")
                   .Attr("dtype", DT_FLOAT)
                   .Attr("shape", TensorShape({2}))
                   .Attr("shared_name", "acc")
                   .Finalize();
    auto step = ops::Placeholder(s.WithOpName("step"), DT_INT64);
    auto grad = ops::Placeholder(s.WithOpName("grad"), DT_FLOAT);
    auto n = ops::Placeholder(s.WithOpName("n"), DT_INT32);
    OpBuilder(s.WithOpName("apply"), "ResourceAccumulatorApplyGradient")
        .Input(Output(acc, 0))
        .Input(step)
        .Input(grad)
        .Attr("dtype", DT_FLOAT)
        .Attr("source", "/job:worker/task:1")
        .Finalize();
    OpBuilder(s.WithOpName("take"), "ResourceAccumulatorTakeGradient")
        .Input(Output(acc, 0))
        .Input(n)
        .Attr("dtype", DT_FLOAT)
        .Finalize();
    OpBuilder(s.WithOpName("set_step"), "ResourceAccumulatorSetGlobalStep")
        .Input(Output(acc, 0))
        .Input(step)
        .Finalize();
    OpBuilder(s.WithOpName("num"), "ResourceAccumulatorNumAccumulated")
        .Input(Output(acc, 0))
        .Finalize();
    OpBuilder(s.WithOpName("dropped"), "ResourceAccumulatorNumDropped")
        .Input(Output(acc, 0))
        .Finalize();
    OpBuilder(s.WithOpName("close_acc"), "ResourceAccumulatorClose")
        .Input(Output(acc, 0))
        .Finalize();

    auto q = OpBuilder(s.WithOpName("q"), "FIFOQueueV2")
                 .Attr("dtype", DT_INT64)
                 .Attr("shape", TensorShape())
                 .Attr("capacity", int64_t{4})
                 .Attr("shared_name", "q")
                 .Finalize();
    auto items = ops::Placeholder(s.WithOpName("items"), DT_INT64);
    OpBuilder(s.WithOpName("enqueue_many"), "QueueEnqueueManyV2")
        .Input(Output(q, 0))
        .Input(items)
        .Attr("T", DT_INT64)
        .Finalize();
    OpBuilder(s.WithOpName("dequeue"), "QueueDequeueV2")
        .Input(Output(q, 0))
        .Attr("T", DT_INT64)
        .Finalize();
    OpBuilder(s.WithOpName("dequeue_soon"), "QueueDequeueV2")
        .Input(Output(q, 0))
        .Attr("T", DT_INT64)
        .Attr("timeout_ms", int64_t{200})
        .Finalize();
    OpBuilder(s.WithOpName("size"), "QueueSizeV2").Input(Output(q, 0)).Finalize();
    OpBuilder(s.WithOpName("close_q"), "QueueCloseV2").Input(Output(q, 0)).Finalize();
    GraphDef def;
    ASSERT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
    SessionOptions options;
    options.config.set_inter_op_threads(2);
    auto session = NewSession(options);
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = std::move(*session);
    ASSERT_TRUE(session_->Create(def).ok());
  }

  absl::Status Apply(int64_t step, std::vector<float> grad) {
    return session_->Run(
        {{"step", Tensor::Scalar<int64_t>(step)}, {"grad", Tensor::FromVector<float>(grad)}}, {},
        {"apply"}, nullptr);
  }
  absl::StatusOr<Tensor> Take(int n, int64_t timeout_ms = 0) {
    RunOptions options;
    options.set_timeout_in_ms(timeout_ms);
    std::vector<Tensor> out;
    SF_RETURN_IF_ERROR(
        session_->Run(options, {{"n", Tensor::Scalar<int32_t>(n)}}, {"take:0"}, {}, &out, nullptr));
    return out[0];
  }
  template <typename T>
  T Fetch(const std::string& name) {
    std::vector<Tensor> out;
    absl::Status s = session_->Run({}, {name}, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? out[0].scalar<T>() : T();
  }
  absl::Status Enqueue(std::vector<int64_t> items) {
    return session_->Run({{"items", Tensor::FromVector<int64_t>(items)}}, {}, {"enqueue_many"},
                         nullptr);
  }
  absl::StatusOr<int64_t> Dequeue(const std::string& op = "dequeue") {
    std::vector<Tensor> out;
    SF_RETURN_IF_ERROR(session_->Run({}, {op + ":0"}, {}, &out));
    return out[0].scalar<int64_t>();
  }

  std::unique_ptr<Session> session_;
};

TEST_F(DataFlowTest, TakeGivesTheMeanOfFreshGradientsAndDropsStaleOnes) {
  ASSERT_TRUE(Apply(0, {1, 2}).ok());
  ASSERT_TRUE(Apply(0, {3, 6}).ok());
  EXPECT_EQ(Fetch<int32_t>("num:0"), 2);
  auto mean = Take(2);
  ASSERT_TRUE(mean.ok()) << mean.status();
  ExpectValues<float>(*mean, {2, 4});
  EXPECT_EQ(Fetch<int32_t>("num:0"), 0);
  // The take advanced the accumulator to step 1: a gradient of step 0 is stale.
  ASSERT_TRUE(Apply(0, {100, 100}).ok());
  EXPECT_EQ(Fetch<int32_t>("num:0"), 0);
  EXPECT_EQ(Fetch<int64_t>("dropped:0"), 1);
  ASSERT_TRUE(Apply(1, {5, 5}).ok());
  mean = Take(1);
  ASSERT_TRUE(mean.ok()) << mean.status();
  ExpectValues<float>(*mean, {5, 5});
  // A chief restarting at step 10 drops older gradients.
  ASSERT_TRUE(
      session_->Run({{"step", Tensor::Scalar<int64_t>(10)}}, {}, {"set_step"}, nullptr).ok());
  ASSERT_TRUE(Apply(9, {1, 1}).ok());
  EXPECT_EQ(Fetch<int64_t>("dropped:0"), 2);
}

TEST_F(DataFlowTest, ATakeWaitsForAnApplyFromAnotherStep) {
  absl::StatusOr<Tensor> taken;
  std::thread taker([&] { taken = Take(2); });
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(Apply(0, {1, 1}).ok());
  ASSERT_TRUE(Apply(0, {3, 3}).ok());
  taker.join();
  ASSERT_TRUE(taken.ok()) << taken.status();
  ExpectValues<float>(*taken, {2, 2});
}

TEST_F(DataFlowTest, ADeadlineEndsAWaitingTakeAndTheAccumulatorStillWorks) {
  ASSERT_TRUE(Apply(0, {1, 1}).ok());
  absl::Time start = absl::Now();
  auto taken = Take(2, /*timeout_ms=*/300);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kDeadlineExceeded) << taken.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // The gradient held is still there; a second one completes the next take.
  ASSERT_TRUE(Apply(0, {3, 3}).ok());
  taken = Take(2);
  ASSERT_TRUE(taken.ok()) << taken.status();
  ExpectValues<float>(*taken, {2, 2});
}

TEST_F(DataFlowTest, CloseEndsAWaitingTakeAndSetGlobalStepReopens) {
  absl::StatusOr<Tensor> taken;
  std::thread taker([&] { taken = Take(1); });
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(session_->Run({}, {}, {"close_acc"}, nullptr).ok());
  taker.join();
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kCancelled) << taken.status();
  ASSERT_TRUE(Apply(0, {1, 1}).ok());  // dropped: closed
  EXPECT_EQ(Fetch<int32_t>("num:0"), 0);
  ASSERT_TRUE(
      session_->Run({{"step", Tensor::Scalar<int64_t>(0)}}, {}, {"set_step"}, nullptr).ok());
  ASSERT_TRUE(Apply(0, {1, 1}).ok());
  EXPECT_EQ(Fetch<int32_t>("num:0"), 1);
}

TEST_F(DataFlowTest, AGradientOfAnotherShapeIsRefusedNamingItsSource) {
  absl::Status s = Apply(0, {1, 2, 3});
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "accumulator 'acc'")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:worker/task:1")) << s;
}

TEST_F(DataFlowTest, TheQueueIsFirstInFirstOutAndWakesAWaitingDequeue) {
  ASSERT_TRUE(Enqueue({7, 8, 9}).ok());
  EXPECT_EQ(Fetch<int32_t>("size:0"), 3);
  EXPECT_EQ(*Dequeue(), 7);
  EXPECT_EQ(*Dequeue(), 8);
  EXPECT_EQ(*Dequeue(), 9);
  absl::StatusOr<int64_t> got;
  std::thread waiter([&] { got = Dequeue(); });
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(Enqueue({42}).ok());
  waiter.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, 42);
}

TEST_F(DataFlowTest, QueueTimeoutsCapacityAndClose) {
  absl::Time start = absl::Now();
  auto got = Dequeue("dequeue_soon");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded) << got.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  // A timed-out dequeue took nothing: the next element goes to the next dequeue.
  ASSERT_TRUE(Enqueue({1}).ok());
  EXPECT_EQ(*Dequeue(), 1);
  absl::Status never = Enqueue({1, 2, 3, 4, 5});  // more than the capacity (4) at once
  EXPECT_EQ(never.code(), absl::StatusCode::kInvalidArgument) << never;
  ASSERT_TRUE(Enqueue({5}).ok());
  ASSERT_TRUE(session_->Run({}, {}, {"close_q"}, nullptr).ok());
  EXPECT_EQ(*Dequeue(), 5);  // what is left, then OUT_OF_RANGE
  got = Dequeue();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kOutOfRange) << got.status();
  EXPECT_EQ(Enqueue({6}).code(), absl::StatusCode::kCancelled);
}

// TF1's blocking enqueue: an enqueue into a full queue waits for a dequeue to make room (in
// order), a deadline ends the wait with nothing added, and closing the queue fails it.
TEST_F(DataFlowTest, AnEnqueueIntoAFullQueueWaitsForRoom) {
  ASSERT_TRUE(Enqueue({1, 2, 3}).ok());
  absl::Status second;
  std::thread producer([&] { second = Enqueue({4, 5}); });  // 3 + 2 > 4: waits
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Fetch<int32_t>("size:0"), 3);
  EXPECT_EQ(*Dequeue(), 1);  // makes room for both
  producer.join();
  ASSERT_TRUE(second.ok()) << second;
  EXPECT_EQ(Fetch<int32_t>("size:0"), 4);
  // A deadline ends a wait and adds nothing.
  RunOptions soon;
  soon.set_timeout_in_ms(200);
  absl::Status late = session_->Run(soon, {{"items", Tensor::FromVector<int64_t>({6})}}, {},
                                    {"enqueue_many"}, nullptr, nullptr);
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_EQ(Fetch<int32_t>("size:0"), 4);
  for (int64_t want : {2, 3, 4, 5}) EXPECT_EQ(*Dequeue(), want);
  // Closing fails a waiting enqueue.
  ASSERT_TRUE(Enqueue({7, 8, 9, 10}).ok());
  absl::Status waiting;
  std::thread blocked([&] { waiting = Enqueue({11}); });
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(session_->Run({}, {}, {"close_q"}, nullptr).ok());
  blocked.join();
  EXPECT_EQ(waiting.code(), absl::StatusCode::kCancelled) << waiting;
  EXPECT_TRUE(absl::StrContains(waiting.message(), "closed while an enqueue waited")) << waiting;
  EXPECT_EQ(*Dequeue(), 7);
}

TEST(ResourceMgrTest, AVariableDeclaredDifferentlyByAnotherGraphIsAnError) {
  ResourceMgr rm;
  // Declared only, never given a value: another declaration replaces it (regression: a worker
  // whose wrong graph only checked readiness left [20, 1] on the ps and blocked the job).
  ASSERT_TRUE(rm.LookupOrCreate("w", DT_FLOAT, TensorShape({20, 1})).ok());
  ASSERT_TRUE(rm.LookupOrCreate("w", DT_FLOAT, TensorShape({784, 10})).ok());
  auto declared = rm.LookupOrCreate("w", DT_FLOAT, TensorShape({784, 10}));
  ASSERT_TRUE(declared.ok());
  {
    absl::MutexLock lock((*declared)->mu());
    (*declared)->set_value(Tensor(DT_FLOAT, TensorShape({784, 10})));
  }
  // Once it has a value, a graph that disagrees with it fails, naming both.
  auto other = rm.LookupOrCreate("w", DT_FLOAT, TensorShape({784, 20}));
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(absl::StrContains(other.status().message(), "'w'")) << other.status();
  EXPECT_TRUE(absl::StrContains(other.status().message(), "[784,10]")) << other.status();
  EXPECT_TRUE(absl::StrContains(other.status().message(), "[784,20]")) << other.status();
  EXPECT_FALSE(rm.LookupOrCreate("w", DT_DOUBLE, TensorShape({784, 10})).ok());
}

TEST_F(DataFlowTest, ANameTakenByAnotherKindOfResourceIsAnError) {
  Scope s = Scope::NewRootScope();
  OpBuilder(s.WithOpName("q2"), "FIFOQueueV2")
      .Attr("dtype", DT_INT64)
      .Attr("shape", TensorShape())
      .Attr("shared_name", "acc")
      .Finalize();
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  ASSERT_TRUE(session_->Extend(def).ok());
  ASSERT_TRUE(session_->Run({}, {}, {"num"}, nullptr).ok());  // makes "acc"
  std::vector<Tensor> out;
  absl::Status st = session_->Run({}, {"q2:0"}, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "'acc' is taken by a gradient accumulator")) << st;
}

}  // namespace
}  // namespace shardflow
