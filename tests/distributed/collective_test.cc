// Collectives across tasks: two in-process servers and a master, CollectiveReduce, broadcast
// and gather between the tasks' CPUs over the gRPC transport (the ring pulls through the remote
// rendezvous), a tensor of several chunks, many steps; a member task that is gone fails the
// step within the bound with an error naming it, and nothing hangs.
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "distributed/master.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/distributed/distributed_test_util.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

std::string TaskCpu(int task) {
  return absl::StrCat("/job:worker/replica:0/task:", task, "/device:CPU:0");
}

class CollectiveAcrossTasksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int t = 0; t < 2; ++t) {
      servers_.push_back(test::StartServer(t));
      ASSERT_NE(servers_.back(), nullptr);
    }
    MasterOptions options;
    auto spec = ClusterSpec::FromJson(absl::StrCat(R"({"worker": [")", servers_[0]->address(),
                                                   R"(", ")", servers_[1]->address(), R"("]})"),
                                      "test");
    ASSERT_TRUE(spec.ok()) << spec.status();
    options.cluster = *spec;
    options.client.keepalive_time_ms = 1000;
    options.client.keepalive_timeout_ms = 1000;
    auto master = Master::Create(options);
    ASSERT_TRUE(master.ok()) << master.status();
    master_ = *master;
  }

  absl::StatusOr<std::vector<Tensor>> Run(const Scope& s, const std::vector<std::string>& fetches,
                                          std::string* handle = nullptr) {
    GraphDef def;
    SF_RETURN_IF_ERROR(s.ToGraphDef(&def));
    SF_ASSIGN_OR_RETURN(std::string h, master_->CreateSession(def, SessionOptionsProto()));
    if (handle != nullptr) *handle = h;
    std::vector<Tensor> out;
    SF_RETURN_IF_ERROR(master_->RunStep(h, RunOptions(), {}, fetches, {}, &out, nullptr));
    return out;
  }

  std::vector<std::unique_ptr<Server>> servers_;
  std::shared_ptr<Master> master_;
};

TEST_F(CollectiveAcrossTasksTest, AllReduceOfSeveralChunksBetweenTwoTasks) {
  // 3M floats: 6 MiB segments, two 4 MiB lanes each.
  constexpr int64_t kElements = 3 << 20;
  Scope s = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int t = 0; t < 2; ++t) {
    Scope d = s.WithDevice(TaskCpu(t));
    auto x = ops::Fill(d, ops::Const(d, Tensor::FromVector<int32_t>({int32_t{kElements}})),
                       ops::Const(d, Tensor::Scalar<float>(t + 1.5f)));
    auto y = ops::CollectiveReduce(d, x, 2, 1, 1, "Add", "Div");
    // Sum on the task itself, so only a scalar is fetched across.
    fetches.push_back(ops::Sum(d.WithOpName(absl::StrCat("sum", t)), y, {0}).name());
  }
  auto out = Run(s, fetches);
  ASSERT_TRUE(out.ok()) << out.status();
  for (const Tensor& t : *out) EXPECT_NEAR(t.scalar<float>(), 2.0 * kElements, 1e-3 * kElements);
}

TEST_F(CollectiveAcrossTasksTest, BroadcastAndGatherAcrossTasksOverManySteps) {
  Scope s = Scope::NewRootScope();
  Scope d0 = s.WithDevice(TaskCpu(0)), d1 = s.WithDevice(TaskCpu(1));
  auto x0 = ops::Placeholder(d0.WithOpName("x0"), DT_FLOAT, {2});
  auto b0 = ops::CollectiveBcastSend(d0.WithOpName("b0"), x0, 2, 2, 1, {2});
  auto b1 = ops::CollectiveBcastRecv(d1.WithOpName("b1"), DT_FLOAT, {2}, 2, 2, 1);
  ops::CollectiveGather(d0.WithOpName("g0"), b0, 2, 2, 2);
  ops::CollectiveGather(d1.WithOpName("g1"), ops::Neg(d1, b1), 2, 2, 2);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto handle = master_->CreateSession(def, SessionOptionsProto());
  ASSERT_TRUE(handle.ok()) << handle.status();
  for (int step = 0; step < 10; ++step) {
    std::vector<Tensor> out;
    absl::Status st = master_->RunStep(*handle, RunOptions(),
                                       {{"x0", Tensor::FromVector<float>({1, float(step)})}},
                                       {"b1", "g0", "g1"}, {}, &out, nullptr);
    ASSERT_TRUE(st.ok()) << st;
    test::ExpectValues<float>(out[0], {1, float(step)});
    test::ExpectValues<float>(out[1], {1, float(step), -1, -float(step)});
    test::ExpectValues<float>(out[2], {1, float(step), -1, -float(step)});
  }
}

TEST_F(CollectiveAcrossTasksTest, AMemberTaskThatIsGoneFailsTheStepNamingIt) {
  Scope s = Scope::NewRootScope();
  std::vector<std::string> fetches;
  for (int t = 0; t < 2; ++t) {
    Scope d = s.WithDevice(TaskCpu(t));
    auto x = ops::Placeholder(d.WithOpName(absl::StrCat("x", t)), DT_FLOAT, {4});
    fetches.push_back(ops::CollectiveReduce(d.WithOpName(absl::StrCat("r", t)), x, 2, 1, 1).name());
  }
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto handle = master_->CreateSession(def, SessionOptionsProto());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x0", Tensor::FromVector<float>({1, 2, 3, 4})},
      {"x1", Tensor::FromVector<float>({1, 1, 1, 1})}};
  std::vector<Tensor> out;
  ASSERT_TRUE(master_->RunStep(*handle, RunOptions(), feeds, fetches, {}, &out, nullptr).ok());
  test::ExpectValues<float>(out[0], {2, 3, 4, 5});
  servers_[1]->Shutdown();
  auto start = std::chrono::steady_clock::now();
  absl::Status st = master_->RunStep(*handle, RunOptions(), feeds, fetches, {}, &out, nullptr);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "task:1")) << st;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << st;
}

}  // namespace
}  // namespace shardflow
