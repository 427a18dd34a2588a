// The collectives seam: a kernel reaches the step's CollectiveExecutor through its context, the
// executor hands it over from Executor::Args, and the first error of a step aborts pending
// collectives (so a member that failed never leaves the others waiting). The collective here is
// a fake in-process all-reduce; the data-parallel strategies plug real ones in the same way.
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/framework/collective.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/call_frame.h"
#include "runtime/device_factory.h"
#include "runtime/executor.h"
#include "runtime/executor_barrier.h"
#include "runtime/rendezvous.h"
#include "runtime/subgraph.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

REGISTER_OP("TestAllReduceSum")
    .Input("x: float")
    .Output("y: float")
    .Attr("group_size: int")
    .Attr("rank: int")
    .SetShapeFn(UnchangedShape);

class TestAllReduceSumOp : public AsyncOpKernel {
 public:
  explicit TestAllReduceSumOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    (void)c->GetAttr("group_size", &params_.group_size);
    (void)c->GetAttr("rank", &params_.rank);
    params_.group_key = 1;
    params_.instance_key = 7;
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    CollectiveExecutor* collectives = ctx->collective_executor();
    OP_REQUIRES_ASYNC(ctx, collectives != nullptr,
                      absl::FailedPreconditionError("no collective executor in this step"), done);
    Tensor* out = nullptr;
    absl::Status allocated = ctx->allocate_output(0, ctx->input(0).shape(), &out);
    OP_REQUIRES_ASYNC(ctx, allocated.ok(), allocated, done);
    collectives->AllReduceAsync(params_, ctx->input(0), out, [ctx, done](const absl::Status& s) {
      if (!s.ok()) ctx->SetStatus(s);
      done();
    });
  }

 private:
  CollectiveParams params_;
};
REGISTER_KERNEL(KernelDef("TestAllReduceSum").Device(kDeviceCpu), TestAllReduceSumOp);

// All-reduce by summing in memory once every member of the instance has arrived.
class FakeCollectives final : public CollectiveExecutor {
 public:
  void AllReduceAsync(const CollectiveParams& params, const Tensor& input, Tensor* output,
                      DoneCallback done) override {
    std::vector<Member> ready;
    absl::Status aborted;
    {
      absl::MutexLock lock(&mu_);
      aborted = status_;
      if (aborted.ok()) {
        auto& members = pending_[params.instance_key];
        members.push_back(Member{input, output, std::move(done)});
        if (static_cast<int>(members.size()) < params.group_size) return;
        ready = std::move(members);
        pending_.erase(params.instance_key);
      }
    }
    if (!aborted.ok()) {
      done(aborted);
      return;
    }
    for (Member& m : ready) {
      for (int64_t i = 0; i < m.output->NumElements(); ++i) {
        float sum = 0;
        for (Member& other : ready) sum += other.input.data<float>()[i];
        m.output->data<float>()[i] = sum;
      }
    }
    for (Member& m : ready) m.done(absl::OkStatus());
  }
  void BroadcastAsync(const CollectiveParams&, const Tensor&, Tensor*, DoneCallback done) override {
    done(absl::UnimplementedError("not in this test"));
  }
  void AllGatherAsync(const CollectiveParams&, const Tensor&, Tensor*, DoneCallback done) override {
    done(absl::UnimplementedError("not in this test"));
  }
  void StartAbort(const absl::Status& status) override {
    std::map<int64_t, std::vector<Member>> pending;
    {
      absl::MutexLock lock(&mu_);
      if (!status_.ok()) return;
      status_ = status;
      pending.swap(pending_);
    }
    for (auto& [key, members] : pending) {
      for (Member& m : members) m.done(status);
    }
  }

 private:
  struct Member {
    Tensor input;
    Tensor* output;
    DoneCallback done;
  };
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::vector<Member>> pending_ ABSL_GUARDED_BY(mu_);
};

// Member `rank` of a 2-member all-reduce on its own device; with `fail`, a MatMul of
// mismatched shapes fails before the collective.
std::unique_ptr<Executor> Member(Device* device, int rank, bool fail) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s.WithOpName("x"), Tensor::FromVector<float>({1.0f + rank, 10.0f * rank}));
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  std::string in = "x";
  if (fail) {  // CheckNumerics of a NaN fails at run time, before the collective
    NodeDef nan;
    nan.set_name("nan");
    nan.set_op("Const");
    (*nan.mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
    Tensor::FromVector<float>({NAN, 1}).AsProto((*nan.mutable_attr())["value"].mutable_tensor());
    NodeDef check;
    check.set_name("check");
    check.set_op("CheckNumerics");
    check.add_input("nan");
    (*check.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    (*check.mutable_attr())["message"] = MakeAttr(std::string("member 1 has a NaN"));
    *def.add_node() = nan;
    *def.add_node() = check;
    in = "check";
  }
  NodeDef reduce;
  reduce.set_name("reduce");
  reduce.set_op("TestAllReduceSum");
  reduce.add_input(in);
  (*reduce.mutable_attr())["group_size"] = MakeAttr(int64_t{2});
  (*reduce.mutable_attr())["rank"] = MakeAttr(int64_t{rank});
  *def.add_node() = reduce;
  auto graph = Graph::FromGraphDef(def);
  EXPECT_TRUE(graph.ok()) << graph.status();
  std::vector<FeedSpec> specs;
  EXPECT_TRUE(RewriteForRun(graph->get(), {}, {"reduce"}, {}, &specs).ok());
  for (Node* n : (*graph)->nodes()) n->set_assigned_device(device->name());
  auto executor = Executor::Create(std::move(*graph), device);
  EXPECT_TRUE(executor.ok()) << executor.status();
  return std::move(*executor);
}

class CollectiveSeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SessionOptionsProto config;
    config.set_cpu_device_count(2);
    config.set_inter_op_threads(1);
    config.set_intra_op_threads(1);
    ASSERT_TRUE(DeviceFactory::Get(kDeviceCpu)->AddDevices(config, "localhost", 0, &devices_).ok());
  }
  // Runs both members as one step; returns the step's status and each member's result.
  absl::Status RunStep(bool fail_member_1, std::vector<Tensor>* results,
                       CollectiveExecutor* collectives) {
    std::vector<std::unique_ptr<Executor>> members;
    members.push_back(Member(devices_[0].get(), 0, false));
    members.push_back(Member(devices_[1].get(), 1, fail_member_1));
    // Each member fetches index 0 of its own frame, so each runs under its own barrier; the
    // rendezvous and the collectives are the step's, shared.
    StepCallFrame frame0({}, 1), frame1({}, 1);
    LocalRendezvous rendezvous;
    Executor::Args args;
    args.rendezvous = &rendezvous;
    args.collective_executor = collectives;
    args.call_frame = &frame0;
    absl::Notification done0, done1;
    absl::Status s0, s1;
    ExecutorBarrier::Run({members[0].get()}, args, &rendezvous, [&](const absl::Status& s) {
      s0 = s;
      done0.Notify();
    });
    args.call_frame = &frame1;
    ExecutorBarrier::Run({members[1].get()}, args, &rendezvous, [&](const absl::Status& s) {
      s1 = s;
      done1.Notify();
    });
    if (!done0.WaitForNotificationWithTimeout(absl::Seconds(10)) ||
        !done1.WaitForNotificationWithTimeout(absl::Seconds(10))) {
      return absl::DeadlineExceededError("a member of the step never finished");
    }
    results->clear();
    results->push_back(frame0.TakeRetvals()[0]);
    results->push_back(frame1.TakeRetvals()[0]);
    return !s1.ok() ? s1 : s0;
  }

  std::vector<std::unique_ptr<Device>> devices_;
};

TEST_F(CollectiveSeamTest, KernelsReachTheStepsCollectiveExecutor) {
  FakeCollectives collectives;
  std::vector<Tensor> results;
  absl::Status st = RunStep(false, &results, &collectives);
  ASSERT_TRUE(st.ok()) << st;
  test::ExpectValues<float>(results[0], {3, 10});
  test::ExpectValues<float>(results[1], {3, 10});
}

TEST_F(CollectiveSeamTest, AFailedMemberAbortsThePendingCollective) {
  FakeCollectives collectives;
  std::vector<Tensor> results;
  absl::Status st = RunStep(true, &results, &collectives);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.code(), absl::StatusCode::kDeadlineExceeded) << "member 0 was left waiting: " << st;
}

// A step that brings no CollectiveExecutor gets ExecutorBarrier's ring over its rendezvous
// (runtime/collectives/ring.h); this test's kernel gives it no resolved group, which it says.
TEST_F(CollectiveSeamTest, AStepWithoutCollectivesGetsTheRing) {
  std::vector<Tensor> results;
  absl::Status st = RunStep(false, &results, nullptr);
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "the group is not resolved for this member")) << st;
}

}  // namespace
}  // namespace shardflow
