// Two in-process servers on 127.0.0.1 run one graph split across /job:worker/task:0 and task:1:
// the results equal a local session's, step after step. Bad requests get errors and the
// servers keep serving; an error on one task aborts the other's pending recv; a wrong token and
// a stale incarnation are refused.
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/distributed/distributed_test_util.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

constexpr char kTask0Cpu[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kTask1Cpu[] = "/job:worker/replica:0/task:1/device:CPU:0";

// A 2-layer MLP forward and backward: layer 1 on `d1`, layer 2 and the loss on `d2`, gradients
// wherever the placer puts them (tensors cross both ways).
struct Mlp {
  Scope s = Scope::NewRootScope();
  Output loss;
  std::vector<Output> grads;
  Mlp(const std::string& d1, const std::string& d2) {
    Scope s1 = s.WithDevice(d1);
    auto x = ops::Placeholder(s1.WithOpName("x"), DT_FLOAT, TensorShape({8, 6}));
    auto labels = ops::Const(s1, Tensor::FromVector<int32_t>({0, 1, 2, 3, 0, 1, 2, 3}));
    Tensor w1v(DT_FLOAT, TensorShape({6, 5})), w2v(DT_FLOAT, TensorShape({5, 4}));
    for (int i = 0; i < 30; ++i) w1v.data<float>()[i] = 0.1f * (i % 7) - 0.3f;
    for (int i = 0; i < 20; ++i) w2v.data<float>()[i] = 0.05f * (i % 5) - 0.1f;
    auto w1 = ops::Const(s1.WithOpName("w1"), w1v);
    auto h = ops::Relu(s1.WithOpName("h"), ops::MatMul(s1, x, w1));
    Scope s2 = s.WithDevice(d2);
    auto w2 = ops::Const(s2.WithOpName("w2"), w2v);
    auto logits = ops::MatMul(s2.WithOpName("logits"), h, w2);
    loss = ops::Mean(s2.WithOpName("loss"),
                     ops::SparseSoftmaxCrossEntropyWithLogits(s2, logits, labels).loss, {0});
    EXPECT_TRUE(AddGradients(s, {loss}, {w1, w2}, &grads).ok());
  }
  GraphDef Def() {
    GraphDef def;
    EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
    return def;
  }
  std::vector<std::string> Fetches() { return {loss.name(), grads[0].name(), grads[1].name()}; }
};

Tensor Input(int step) {
  Tensor x(DT_FLOAT, TensorShape({8, 6}));
  for (int i = 0; i < 48; ++i) x.data<float>()[i] = 0.02f * i - 0.4f + 0.01f * step;
  return x;
}

class WorkerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server0_ = test::StartServer(0);
    server1_ = test::StartServer(1);
    ASSERT_NE(server0_, nullptr);
    ASSERT_NE(server1_, nullptr);
    cache_ = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
  }
  std::vector<Server*> Servers() { return {server0_.get(), server1_.get()}; }

  std::unique_ptr<Server> server0_, server1_;
  std::shared_ptr<GrpcWorkerCache> cache_;
};

TEST_F(WorkerServiceTest, SplitMlpMatchesLocalSessionForSeveralSteps) {
  Mlp local("", "");
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(local.Def()).ok());

  Mlp split(kTask0Cpu, kTask1Cpu);
  auto g = test::RegisterDistributed(split.Def(), {"x"}, split.Fetches(), Servers(), cache_.get());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->handles.size(), 2u) << "both tasks must have a partition";
  EXPECT_EQ(g->arg_task[0], "/job:worker/replica:0/task:0");
  EXPECT_EQ(g->retval_task[0], "/job:worker/replica:0/task:1");

  for (int step = 0; step < 5; ++step) {
    std::vector<Tensor> expected, actual;
    ASSERT_TRUE((*session)->Run({{"x", Input(step)}}, local.Fetches(), {}, &expected).ok());
    absl::Status s = test::RunDistributedStep(*g, 1000 + step, {Input(step)}, &actual);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(actual.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(TensorsEqual(expected[i], actual[i]))
          << "step " << step << " output " << i << ": " << expected[i].DebugString() << " vs "
          << actual[i].DebugString();
    }
  }
  // Finished steps are retired: nothing is left in flight on either worker.
  EXPECT_EQ(test::ActiveStepsAfterSettling(server0_->worker()), 0);
  EXPECT_EQ(test::ActiveStepsAfterSettling(server1_->worker()), 0);
  // A step id cannot be run twice.
  std::vector<Tensor> out;
  absl::Status again = test::RunDistributedStep(*g, 1000, {Input(0)}, &out);
  EXPECT_FALSE(again.ok());
  for (const auto& [task, handle] : g->handles) {
    EXPECT_TRUE(g->clients[task]->CleanupGraph(handle).ok());
  }
  EXPECT_EQ(server0_->worker()->num_registered_graphs(), 0);
}

TEST_F(WorkerServiceTest, ConcurrentStepsOfOneGraph) {
  Mlp split(kTask0Cpu, kTask1Cpu);
  auto g = test::RegisterDistributed(split.Def(), {"x"}, split.Fetches(), Servers(), cache_.get());
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<std::vector<Tensor>> outs(4);
  std::vector<absl::Status> statuses(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back(
        [&, i] { statuses[i] = test::RunDistributedStep(*g, 2000 + i, {Input(7)}, &outs[i]); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(statuses[i].ok()) << statuses[i];
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(TensorsEqual(outs[0][k], outs[i][k]));
  }
}

TEST_F(WorkerServiceTest, BadRequestsGetErrorsAndTheServerKeepsServing) {
  auto client = cache_->GetClient(server0_->address(), server0_->task_name());
  ASSERT_TRUE(client.ok());
  RunGraphRequest run;
  run.set_graph_handle("no-such-graph");
  run.set_step_id(1);
  RunGraphResponse response;
  absl::Status s = (*client)->RunGraph(run, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "no-such-graph")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/job:worker/replica:0/task:0")) << s;

  EXPECT_EQ((*client)->CleanupGraph("nope").code(), absl::StatusCode::kNotFound);

  RegisterGraphRequest reg;
  (*reg.mutable_partitions())["/job:worker/replica:0/task:7/device:CPU:0"] = GraphDef();
  RegisterGraphResponse reg_response;
  s = (*client)->RegisterGraph(reg, &reg_response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "task:7")) << s;

  // A partition whose node is garbage.
  RegisterGraphRequest bad;
  NodeDef* n = (*bad.mutable_partitions())[kTask0Cpu].add_node();
  n->set_name("n");
  n->set_op("NoSuchOp");
  s = (*client)->RegisterGraph(bad, &reg_response);
  EXPECT_FALSE(s.ok());

  // RecvTensor with a malformed key, and for a key of another task.
  absl::Notification done;
  (*client)->RecvTensorAsync(5, "garbage", nullptr, nullptr, [&](const absl::Status& st, Tensor) {
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    done.Notify();
  });
  done.WaitForNotification();
  absl::Notification done2;
  std::string other = RendezvousKey(kTask1Cpu, server1_->incarnation(), kTask0Cpu, "t:0");
  (*client)->RecvTensorAsync(5, other, nullptr, nullptr, [&](const absl::Status& st, Tensor) {
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(absl::StrContains(st.message(), "task:1")) << st;
    done2.Notify();
  });
  done2.WaitForNotification();

  // Still serving.
  GetStatusResponse status;
  ASSERT_TRUE((*client)->GetStatus(&status).ok());
  EXPECT_EQ(status.incarnation(), server0_->incarnation());
  EXPECT_EQ(status.devices_size(), 1);
  EXPECT_EQ(status.devices(0).name(), kTask0Cpu);
}

TEST_F(WorkerServiceTest, ErrorOnOneTaskAbortsTheOthersPendingRecv) {
  // task:1 fails (a MatMul of mismatched fed shapes) while task:0 waits for its result.
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithDevice(kTask1Cpu).WithOpName("a"), DT_FLOAT);
  auto b = ops::Placeholder(s.WithDevice(kTask1Cpu).WithOpName("b"), DT_FLOAT);
  auto bad = ops::MatMul(s.WithDevice(kTask1Cpu).WithOpName("bad"), a, b);
  auto out = ops::Identity(s.WithDevice(kTask0Cpu).WithOpName("out"), bad);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto g = test::RegisterDistributed(def, {"a", "b"}, {out.name()}, Servers(), cache_.get());
  ASSERT_TRUE(g.ok()) << g.status();
  Tensor a_value(DT_FLOAT, TensorShape({2, 3})), b_value(DT_FLOAT, TensorShape({2, 3}));
  std::vector<Tensor> outputs;
  auto start = absl::Now();
  absl::Status st = test::RunDistributedStep(*g, 3000, {a_value, b_value}, &outputs);
  EXPECT_FALSE(st.ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "the pending recv on task:0 hung";
  EXPECT_TRUE(absl::StrContains(st.message(), "bad")) << st;
  // Both workers dropped the step; a good step still runs.
  EXPECT_EQ(test::ActiveStepsAfterSettling(server0_->worker()), 0);
  EXPECT_EQ(test::ActiveStepsAfterSettling(server1_->worker()), 0);
  Tensor b_ok(DT_FLOAT, TensorShape({3, 1}));
  for (int i = 0; i < 6; ++i) a_value.data<float>()[i] = i;
  for (int i = 0; i < 3; ++i) b_ok.data<float>()[i] = 1;
  st = test::RunDistributedStep(*g, 3001, {a_value, b_ok}, &outputs);
  ASSERT_TRUE(st.ok()) << st;
  test::ExpectValues<float>(outputs[0], {3, 12});
}

TEST_F(WorkerServiceTest, AbortStepReleasesAPendingRecvTensor) {
  auto client = cache_->GetClient(server0_->address(), server0_->task_name());
  ASSERT_TRUE(client.ok());
  std::string key = RendezvousKey(kTask0Cpu, server0_->incarnation(), kTask1Cpu, "never:0");
  absl::Notification done;
  absl::Status got;
  (*client)->RecvTensorAsync(77, key, nullptr, nullptr, [&](const absl::Status& s, Tensor) {
    got = s;
    done.Notify();
  });
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  ASSERT_TRUE((*client)->AbortStep(77, absl::InternalError("task:1 ran out of memory")).ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(got.code(), absl::StatusCode::kInternal) << got;
  EXPECT_TRUE(absl::StrContains(got.message(), "ran out of memory")) << got;
  EXPECT_EQ(test::ActiveStepsAfterSettling(server0_->worker()), 0);
  // A late RecvTensor for the aborted step gets the abort status at once.
  absl::Notification late;
  (*client)->RecvTensorAsync(77, key, nullptr, nullptr, [&](const absl::Status& s, Tensor) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    late.Notify();
  });
  ASSERT_TRUE(late.WaitForNotificationWithTimeout(absl::Seconds(5)));
}

TEST_F(WorkerServiceTest, StaleIncarnationIsRejected) {
  auto client = cache_->GetClient(server0_->address(), server0_->task_name());
  ASSERT_TRUE(client.ok());
  // A key made for an earlier run of task:0.
  std::string key = RendezvousKey(kTask0Cpu, server0_->incarnation() ^ 1, kTask1Cpu, "t:0");
  absl::Notification done;
  (*client)->RecvTensorAsync(9, key, nullptr, nullptr, [&](const absl::Status& s, Tensor) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "incarnation")) << s;
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  // A graph partitioned with the wrong incarnation is refused at registration.
  Scope s = Scope::NewRootScope();
  auto c = ops::Const(s.WithDevice(kTask0Cpu).WithOpName("c"), Tensor::Scalar<float>(1));
  ops::Identity(s.WithDevice(kTask1Cpu).WithOpName("y"), c);
  auto graph = Graph::FromGraphDef([&] {
    GraphDef d;
    EXPECT_TRUE(s.ToGraphDef(&d).ok());
    return d;
  }());
  ASSERT_TRUE(graph.ok());
  for (Node* n : (*graph)->nodes()) n->set_assigned_device(n->requested_device());
  PartitionOptions options;
  options.incarnation = [](const std::string&) { return uint64_t{12345}; };
  std::map<std::string, GraphDef> parts;
  ASSERT_TRUE(PartitionGraph(**graph, options, &parts).ok());
  RegisterGraphRequest reg;
  (*reg.mutable_partitions())[kTask0Cpu] = parts[kTask0Cpu];
  RegisterGraphResponse response;
  absl::Status st = (*client)->RegisterGraph(reg, &response);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "incarnation")) << st;
}

TEST(WorkerTokenTest, WrongTokenIsUnauthenticatedAndServerKeepsServing) {
  auto server = test::StartServer(0, "s3cret");
  ASSERT_NE(server, nullptr);
  for (const char* token : {"", "wrong"}) {
    GrpcClientOptions options;
    options.security.token = token;
    GrpcWorkerCache cache(options);
    auto client = cache.GetClient(server->address());
    ASSERT_TRUE(client.ok());
    GetStatusResponse status;
    absl::Status s = (*client)->GetStatus(&status);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
    EXPECT_FALSE(absl::StrContains(s.message(), "s3cret"));
    absl::Notification done;
    (*client)->RecvTensorAsync(1, "k", nullptr, nullptr, [&](const absl::Status& st, Tensor) {
      EXPECT_EQ(st.code(), absl::StatusCode::kUnauthenticated) << st;
      done.Notify();
    });
    done.WaitForNotification();
    // Session.reset's call clears nothing without the token.
    s = (*client)->ResetResources({});
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  }
  GrpcClientOptions options;
  options.security.token = "s3cret";
  GrpcWorkerCache cache(options);
  auto client = cache.GetClient(server->address());
  ASSERT_TRUE(client.ok());
  GetStatusResponse status;
  EXPECT_TRUE((*client)->GetStatus(&status).ok());
  EXPECT_TRUE((*client)->ResetResources({""}).ok());
  std::vector<std::string> too_many(Worker::kMaxResetContainers + 1, "c");
  EXPECT_EQ((*client)->ResetResources(too_many).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ServerTest, PlaintextOnANonLoopbackAddressIsRefused) {
  ServerOptions options;
  options.address = "0.0.0.0:0";
  auto server = Server::Create(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition) << server.status();
  EXPECT_TRUE(absl::StrContains(server.status().message(), "plaintext")) << server.status();
  options.security.plaintext = true;
  server = Server::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_NE((*server)->address(), "0.0.0.0:0");
}

}  // namespace
}  // namespace shardflow
