// Collectives across tasks: two in-process servers and a master, CollectiveReduce, broadcast
// and gather between the tasks' CPUs over the gRPC transport (the ring pulls through the remote
// rendezvous), a tensor of several chunks, many steps; a member task that is gone fails the
// step within the bound with an error naming it, and nothing hangs. Between-graph groups: each
// task's own master runs a graph with only its own members (Horovod/DDP style), and the two
// meet in every step.
#include <chrono>
#include <string>
#include <thread>
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
  // The two servers' cluster.
  ClusterSpec Spec() const {
    auto spec = ClusterSpec::FromJson(absl::StrCat(R"({"worker": [")", servers_[0]->address(),
                                                   R"(", ")", servers_[1]->address(), R"("]})"),
                                      "test");
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? *spec : ClusterSpec();
  }

  void SetUp() override {
    for (int t = 0; t < 2; ++t) {
      servers_.push_back(test::StartServer(t));
      ASSERT_NE(servers_.back(), nullptr);
    }
    MasterOptions options;
    options.cluster = Spec();
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

// Between-graph replication: a second master stands for the other task's process. Each master's
// graph holds only its task's members; their steps meet by step id (Note [Between-graph step
// ids] in distributed/master_session.h).
class BetweenGraphTest : public CollectiveAcrossTasksTest {
 protected:
  void SetUp() override {
    CollectiveAcrossTasksTest::SetUp();
    MasterOptions options;
    options.cluster = Spec();
    auto master = Master::Create(options);
    ASSERT_TRUE(master.ok()) << master.status();
    other_ = *master;
  }

  // Task t's graph: its member of a sum all-reduce of kElements values (t + 1 each), of a
  // broadcast from task 0 and of an all-gather; the fetches are small.
  static constexpr int64_t kElements = 3 << 20;  // several chunks per segment
  static GraphDef TaskGraph(int t, int group_size = 2) {
    Scope s = Scope::NewRootScope();
    Scope d = s.WithDevice(TaskCpu(t));
    auto step = ops::Placeholder(d.WithOpName("step"), DT_FLOAT, TensorShape({}));
    auto x = ops::Fill(d, ops::Const(d, Tensor::FromVector<int32_t>({int32_t{kElements}})),
                       ops::Add(d, step, ops::Const(d, Tensor::Scalar<float>(t + 1.0f))));
    auto y = ops::CollectiveReduce(d, x, group_size, 5, 1, "Add", "Id");
    ops::Sum(d.WithOpName("sum"), y, {0});
    auto v =
        ops::Reshape(d, ops::Mul(d, step, ops::Const(d, Tensor::Scalar<float>(t + 1.0f))), {1});
    if (t == 0) {
      ops::CollectiveBcastSend(d.WithOpName("bcast"), v, group_size, 5, 2, {1});
    } else {
      ops::CollectiveBcastRecv(d.WithOpName("bcast"), DT_FLOAT, {1}, group_size, 5, 2);
    }
    ops::CollectiveGather(d.WithOpName("gather"), v, group_size, 5, 3);
    GraphDef def;
    EXPECT_TRUE(s.ToGraphDef(&def).ok());
    return def;
  }

  std::shared_ptr<Master> other_;
};

// Two sessions in a row on each master (a program that opens a second session, a restarted
// MonitoredTrainingSession): the second session's steps get new ids, not the first's again.
TEST_F(BetweenGraphTest, EachTaskRunsItsOwnGraphAndTheyMeetEveryStep) {
  std::shared_ptr<Master> masters[2] = {master_, other_};
  absl::Status status[2];
  std::vector<std::vector<Tensor>> results[2];
  constexpr int kSteps = 8, kPerSession = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::string> handle;
      for (int step = 0; step < kSteps && status[t].ok(); ++step) {
        if (step % kPerSession == 0) {
          if (handle.ok() && step > 0) status[t] = masters[t]->CloseSession(*handle);
          handle = masters[t]->CreateSession(TaskGraph(t), SessionOptionsProto());
          if (!handle.ok()) {
            status[t] = handle.status();
            return;
          }
        }
        std::vector<Tensor> out;
        RunOptions options;
        options.set_timeout_in_ms(30000);
        status[t] =
            masters[t]->RunStep(*handle, options, {{"step", Tensor::Scalar<float>(float(step))}},
                                {"sum", "bcast", "gather"}, {}, &out, nullptr);
        results[t].push_back(out);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t) {
    ASSERT_TRUE(status[t].ok()) << "task " << t << ": " << status[t];
    ASSERT_EQ(results[t].size(), size_t{kSteps});
    for (int step = 0; step < kSteps; ++step) {
      const std::vector<Tensor>& out = results[t][step];
      // (step + 1) + (step + 2) per element.
      EXPECT_NEAR(out[0].scalar<float>(), (2.0 * step + 3) * kElements, 1e-4 * kElements);
      test::ExpectValues<float>(out[1], {float(step)});
      test::ExpectValues<float>(out[2], {float(step), 2.0f * step});
    }
  }
}

TEST_F(BetweenGraphTest, GroupsThatCannotBeBetweenGraphAreRefusedNamingWhy) {
  // Three members asked for, two tasks in the job.
  auto handle = master_->CreateSession(TaskGraph(0, 3), SessionOptionsProto());
  ASSERT_TRUE(handle.ok()) << handle.status();
  std::vector<Tensor> out;
  absl::Status st = master_->RunStep(*handle, RunOptions(), {{"step", Tensor::Scalar<float>(0)}},
                                     {"sum"}, {}, &out, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "job worker has 2 task(s) up")) << st;
  // A broadcast sent from task 1: task 0 could not know where to receive it from.
  Scope s = Scope::NewRootScope();
  Scope d = s.WithDevice(TaskCpu(1));
  ops::CollectiveBcastSend(d.WithOpName("send"), ops::Const(d, Tensor::FromVector<float>({1})), 2,
                           9, 1, {1});
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto h2 = master_->CreateSession(def, SessionOptionsProto());
  ASSERT_TRUE(h2.ok()) << h2.status();
  st = master_->RunStep(*h2, RunOptions(), {}, {"send"}, {}, &out, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "must be the first member")) << st;
}

TEST_F(BetweenGraphTest, APeerTaskThatIsGoneFailsTheStepNamingIt) {
  std::shared_ptr<Master> masters[2] = {master_, other_};
  std::string handles[2];
  for (int t = 0; t < 2; ++t) {
    auto h = masters[t]->CreateSession(TaskGraph(t), SessionOptionsProto());
    ASSERT_TRUE(h.ok()) << h.status();
    handles[t] = *h;
  }
  auto run = [&](int t, absl::Status* st) {
    std::vector<Tensor> out;
    *st = masters[t]->RunStep(handles[t], RunOptions(), {{"step", Tensor::Scalar<float>(1)}},
                              {"sum"}, {}, &out, nullptr);
  };
  absl::Status first[2];
  std::thread other([&] { run(1, &first[1]); });
  run(0, &first[0]);
  other.join();
  ASSERT_TRUE(first[0].ok()) << first[0];
  ASSERT_TRUE(first[1].ok()) << first[1];
  servers_[1]->Shutdown();
  auto start = std::chrono::steady_clock::now();
  absl::Status st;
  run(0, &st);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "task:1")) << st;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << st;
}

// Each task's master calls its own task's worker directly (Server::local_worker(), as
// `shardflow train --task N` and a Python sf.train.Server's sessions do): the same results, and
// once the server is shut down the direct calls fail UNAVAILABLE instead of touching it.
TEST_F(BetweenGraphTest, MastersThatCallTheirOwnTaskDirectly) {
  std::shared_ptr<Master> masters[2];
  for (int t = 0; t < 2; ++t) {
    MasterOptions options;
    options.cluster = Spec();
    options.local_worker = servers_[t]->local_worker();
    auto master = Master::Create(options);
    ASSERT_TRUE(master.ok()) << master.status();
    masters[t] = *master;
  }
  absl::Status status[2];
  std::vector<Tensor> results[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      auto handle = masters[t]->CreateSession(TaskGraph(t), SessionOptionsProto());
      status[t] = handle.status();
      for (int step = 0; step < 3 && status[t].ok(); ++step) {
        status[t] = masters[t]->RunStep(*handle, RunOptions(),
                                        {{"step", Tensor::Scalar<float>(float(step))}},
                                        {"sum", "gather"}, {}, &results[t], nullptr);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t) {
    ASSERT_TRUE(status[t].ok()) << "task " << t << ": " << status[t];
    EXPECT_NEAR(results[t][0].scalar<float>(), 7.0 * kElements, 1e-4 * kElements);
    test::ExpectValues<float>(results[t][1], {2, 4});
  }
  std::shared_ptr<WorkerInterface> direct = servers_[0]->local_worker();
  servers_[0]->Shutdown();
  GetStatusResponse response;
  absl::Status st = direct->GetStatus(&response);
  EXPECT_TRUE(absl::IsUnavailable(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "task /job:worker/replica:0/task:0")) << st;
}

}  // namespace
}  // namespace shardflow
