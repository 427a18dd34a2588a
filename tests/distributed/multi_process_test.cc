// The distributed runtime across processes on loopback: three `shardflow server` tasks, a
// client session on grpc://, results identical to a local session, a merged profile with
// Send->Recv pairs across tasks, bad input answered with errors, a SIGKILLed worker failing the
// step within the bound with an error naming it (and a restarted worker serving a new session),
// and SIGTERM shutting a server down cleanly.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/tensor_util.h"
#include "core/protos/master.grpc.pb.h"
#include "distributed/data_plane.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "runtime/profiler.h"
#include "runtime/session.h"
#include "tests/distributed/process_util.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

using ::testing::HasSubstr;

using test::FreePort;
const std::string& kBinary = test::ShardflowBinary();

// A `shardflow server` task of the test's cluster.
class Task {
 public:
  Task(const std::string& cluster, int task, const std::vector<std::string>& extra = {})
      : process_(Args(cluster, task, extra)) {}
  bool WaitReady() { return process_.WaitFor("listening on"); }
  void Signal(int sig) { process_.Signal(sig); }
  int Wait(int seconds) { return process_.Wait(seconds); }
  std::string output() { return process_.output(); }

 private:
  static std::vector<std::string> Args(const std::string& cluster, int task,
                                       const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"server", "--cluster",          cluster,     "--job", "worker",
                                     "--task", std::to_string(task), "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  test::ServerProcess process_;
};

std::string Device(int task) {
  return absl::StrCat("/job:worker/replica:0/task:", task, "/device:CPU:0");
}

// Each test runs twice: tensors between the tasks over gRPC, then over UCX (a build without UCX
// falls back to gRPC, so the second run is then a second gRPC run).
class MultiProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (access(kBinary.c_str(), X_OK) != 0) GTEST_SKIP() << kBinary << " is not built";
    char dir[] = "/tmp/sf_multi_XXXXXX";
    dir_ = mkdtemp(dir);
    cluster_ = dir_ + "/cluster.json";
    std::vector<std::string> addresses;
    for (int i = 0; i < 3; ++i) {
      ports_.push_back(FreePort());
      addresses.push_back(absl::StrCat("\"127.0.0.1:", ports_.back(), "\""));
    }
    std::ofstream(cluster_) << "{\"worker\": [" << absl::StrJoin(addresses, ", ") << "]}";
    for (int i = 0; i < 3; ++i) StartTask(i);
  }
  void TearDown() override {
    tasks_.clear();
    if (!dir_.empty()) std::system(("rm -rf " + dir_).c_str());
  }
  void StartTask(int i, std::vector<std::string> extra = {}) {
    if (static_cast<int>(tasks_.size()) <= i) tasks_.resize(i + 1);
    extra.push_back("--transport");
    extra.push_back(GetParam());
    tasks_[i] = std::make_unique<Task>(cluster_, i, extra);
    ASSERT_TRUE(tasks_[i]->WaitReady()) << "task " << i << ": " << tasks_[i]->output();
    const std::vector<std::string> have = RegisteredDataPlanes();
    if (GetParam() == "grpc" || std::find(have.begin(), have.end(), "ucx") != have.end()) {
      const std::string over =
          GetParam() == "auto" ? "ucx with this host's tasks, grpc with others" : GetParam();
      EXPECT_TRUE(absl::StrContains(tasks_[i]->output(), "tensors over " + over))
          << tasks_[i]->output();
    }
  }
  std::unique_ptr<Session> Connect(const std::string& policy = "") {
    SessionOptions options;
    options.target = absl::StrCat("grpc://127.0.0.1:", ports_[0]);
    options.config.set_placement_policy(policy);
    auto s = NewSession(options);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  std::string dir_, cluster_;
  std::vector<int> ports_;
  std::vector<std::unique_ptr<Task>> tasks_;
};

// A 2-layer MLP forward and backward with its layers on tasks 1 and 2, the input on task 0.
struct Mlp {
  Scope s = Scope::NewRootScope();
  Output loss;
  std::vector<Output> grads;
  Tensor x_value{DT_FLOAT, TensorShape({8, 6})};
  Mlp(const std::string& d0, const std::string& d1, const std::string& d2) {
    auto x = ops::Placeholder(s.WithOpName("x").WithDevice(d0), DT_FLOAT, TensorShape({8, 6}));
    Tensor w1v(DT_FLOAT, TensorShape({6, 5})), w2v(DT_FLOAT, TensorShape({5, 4}));
    for (int i = 0; i < 30; ++i) w1v.data<float>()[i] = 0.1f * (i % 7) - 0.3f;
    for (int i = 0; i < 20; ++i) w2v.data<float>()[i] = 0.05f * (i % 5) - 0.1f;
    for (int i = 0; i < 48; ++i) x_value.data<float>()[i] = 0.02f * i - 0.4f;
    Scope s1 = s.WithDevice(d1), s2 = s.WithDevice(d2);
    auto w1 = ops::Const(s1.WithOpName("w1"), w1v);
    auto w2 = ops::Const(s2.WithOpName("w2"), w2v);
    auto h = ops::Relu(s1.WithOpName("h"), ops::MatMul(s1, x, w1));
    auto logits = ops::MatMul(s2.WithOpName("logits"), h, w2);
    auto labels = ops::Const(s2, Tensor::FromVector<int32_t>({0, 1, 2, 3, 0, 1, 2, 3}));
    loss = ops::Mean(s2.WithOpName("loss"),
                     ops::SparseSoftmaxCrossEntropyWithLogits(s2, logits, labels).loss, {0});
    EXPECT_TRUE(AddGradients(s, {loss}, {w1, w2}, &grads).ok());
  }
  std::vector<std::string> Fetches() const {
    return {loss.name(), grads[0].name(), grads[1].name()};
  }
  GraphDef Def() const {
    GraphDef def;
    EXPECT_TRUE(s.ToGraphDef(&def).ok());
    return def;
  }
};

TEST_P(MultiProcessTest, ThreeTasksGiveTheLocalResultsAndOneProfile) {
  Mlp local("", "", "");
  SessionOptions one;
  one.config.set_intra_op_threads(1);
  auto local_session = NewSession(one);
  ASSERT_TRUE((*local_session)->Create(local.Def()).ok());
  std::vector<Tensor> expected;
  ASSERT_TRUE((*local_session)->Run({{"x", local.x_value}}, local.Fetches(), {}, &expected).ok());

  Mlp split(Device(0), Device(1), Device(2));
  auto session = Connect();
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->Create(split.Def()).ok());
  auto devices = session->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(devices->size(), 3u);
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out;
    RunMetadata md;
    absl::Status st = session->Run(trace, {{"x", split.x_value}}, split.Fetches(), {}, &out, &md);
    ASSERT_TRUE(st.ok()) << st;
    ASSERT_EQ(out.size(), 3u);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(TensorsEqual(expected[i], out[i])) << i;
    // One profile: every task's device, and every Send matched with its Recv across tasks.
    std::set<std::string> devices;
    for (const auto& d : md.step_stats().dev_stats()) devices.insert(d.device());
    EXPECT_EQ(devices, (std::set<std::string>{Device(0), Device(1), Device(2)}));
    std::vector<Transfer> transfers = MatchTransfers(md);
    ASSERT_GE(transfers.size(), 3u);
    for (const Transfer& t : transfers) {
      EXPECT_NE(t.send, nullptr) << t.key.tensor_name;
      EXPECT_NE(t.recv, nullptr) << t.key.tensor_name;
    }
    EXPECT_NE(ChromeTraceJson(md).find("\"ph\":\"f\""), std::string::npos);
  }
  EXPECT_TRUE(session->Close().ok());
}

TEST_P(MultiProcessTest, TheCostPolicySpreadsUnplacedTowersOverTasks) {
  Scope s = Scope::NewRootScope();
  Tensor w(DT_FLOAT, TensorShape({256, 256}));
  for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] = (i % 13) * 1e-3f;
  std::vector<Output> tops;
  for (int t = 0; t < 3; ++t) {
    Output x = ops::Const(s, w);
    for (int d = 0; d < 4; ++d) x = ops::MatMul(s, x, ops::Const(s, w));
    tops.push_back(x);
  }
  ops::AddN(s.WithOpName("join"), {tops[0], tops[1], tops[2]});
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  // The reference runs with the tasks' thread budget (--threads 1): a GEMM's rounding may
  // depend on how many threads split it (OpenBLAS's does, kernels/cpu/sgemm.h), and this test
  // is about distribution not changing the bits.
  SessionOptions one;
  one.config.set_intra_op_threads(1);
  auto local_session = NewSession(one);
  ASSERT_TRUE((*local_session)->Create(def).ok());
  std::vector<Tensor> expected;
  ASSERT_TRUE((*local_session)->Run({}, {"join"}, {}, &expected).ok());
  auto session = Connect("cost");
  ASSERT_TRUE(session->Create(def).ok());
  std::vector<Tensor> out;
  RunMetadata md;
  ASSERT_TRUE(session->Run(RunOptions(), {}, {"join"}, {}, &out, &md).ok());
  EXPECT_TRUE(TensorsEqual(expected[0], out[0]));
  std::set<std::string> used;
  for (const auto& [node, device] : md.placement()) used.insert(device);
  EXPECT_GE(used.size(), 2u);
}

TEST_P(MultiProcessTest, BadRequestsGetErrorsAndTheServerKeepsServing) {
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", ports_[0]),
                                     grpc::InsecureChannelCredentials());
  auto stub = MasterService::NewStub(channel);
  {
    grpc::ClientContext context;
    RunStepRequest request;
    request.set_session_handle("no-such-session");
    request.add_fetches("y");
    RunStepResponse response;
    grpc::Status st = stub->RunStep(&context, request, &response);
    // ABORTED, as TensorFlow's master answers for a session it does not have.
    EXPECT_EQ(st.error_code(), grpc::StatusCode::ABORTED);
    EXPECT_THAT(st.error_message(), HasSubstr("no-such-session"));
  }
  {
    grpc::ClientContext context;
    CreateSessionRequest request;
    NodeDef* bad = request.mutable_graph_def()->add_node();
    bad->set_name("bad");
    bad->set_op("NoSuchOp");
    CreateSessionResponse response;
    grpc::Status st = stub->CreateSession(&context, request, &response);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr("op 'NoSuchOp' is not registered"));
  }
  // Still serving: a real session works, and a feed of the wrong shape is an error.
  Mlp split(Device(0), Device(1), Device(2));
  auto session = Connect();
  ASSERT_TRUE(session->Create(split.Def()).ok());
  std::vector<Tensor> out;
  absl::Status st = session->Run({{"x", Tensor(DT_FLOAT, TensorShape({3}))}}, {"loss"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(session->Run({{"x", split.x_value}}, {"loss"}, {}, &out).ok());
}

TEST_P(MultiProcessTest, AKilledWorkerFailsTheStepNamingItAndARestartedOneServesANewSession) {
  // Task 1 runs a long chain of matmuls; it is killed in the middle of the step.
  Scope s = Scope::NewRootScope();
  Tensor w(DT_FLOAT, TensorShape({1024, 1024}));
  for (int64_t i = 0; i < w.NumElements(); ++i) w.data<float>()[i] = 1e-4f;
  Scope t1 = s.WithDevice(Device(1));
  Output weight = ops::Const(t1, w);
  Output x = weight;
  for (int d = 0; d < 200; ++d) x = ops::MatMul(t1, x, weight);
  auto out0 = ops::Sum(s.WithOpName("total").WithDevice(Device(0)), x, {0, 1});
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = Connect();
  ASSERT_TRUE(session->Create(def).ok());
  auto start = std::chrono::steady_clock::now();
  auto result = std::async(std::launch::async, [&] {
    std::vector<Tensor> out;
    return session->Run({}, {"total"}, {}, &out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  tasks_[1]->Signal(SIGKILL);
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  absl::Status st = result.get();
  std::printf("killed step failed after %.2f s: %s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count(),
              std::string(st.message()).c_str());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  ASSERT_FALSE(st.ok()) << "the step finished before the kill ("
                        << std::chrono::duration<double>(killed_at - start).count() << " s)";
  EXPECT_THAT(std::string(st.message()), HasSubstr("task:1"));
  EXPECT_LE(seconds, 10.0) << st;
  // Restarted on the same port: a new incarnation; a new session runs correctly.
  tasks_[1]->Wait(5);
  StartTask(1);
  Mlp split(Device(0), Device(1), Device(2));
  auto fresh = Connect();
  absl::Status created = fresh->Create(split.Def());
  ASSERT_TRUE(created.ok()) << created;
  std::vector<Tensor> out;
  absl::Status ok = fresh->Run({{"x", split.x_value}}, {"loss"}, {}, &out);
  EXPECT_TRUE(ok.ok()) << ok;
  // The old session's registrations and state died with the old worker: ABORTED saying so (as
  // TensorFlow's, so that a program opens a new session), every time, not a hang.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<Tensor> stale;
    absl::Status old = session->Run({}, {"total"}, {}, &stale);
    EXPECT_TRUE(absl::IsAborted(old)) << old;
    EXPECT_THAT(std::string(old.message()), HasSubstr("task:1 restarted since session"));
  }
}

TEST_P(MultiProcessTest, SigtermShutsAServerDownCleanly) {
  tasks_[2]->Signal(SIGTERM);
  EXPECT_EQ(tasks_[2]->Wait(10), 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, MultiProcessTest, ::testing::Values("auto", "grpc", "ucx"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace shardflow
