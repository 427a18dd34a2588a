// Hand-made WorkerService requests against in-process servers, as a buggy or hostile client
// sends them (issue 10): one session's RegisterGraph cannot redirect another session's peers,
// a step id cannot be joined by another session, RunGraph args must be the graph's, sizes in
// requests that overflow or ask for more than they carry are refused before anything is
// allocated, idle graphs are collected, and every refusal leaves the server serving.
#include <atomic>

#include "absl/strings/match.h"
#include "core/framework/attr_value.h"
#include "core/framework/rendezvous.h"
#include "core/framework/tensor_util.h"
#include "distributed/master.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/distributed/distributed_test_util.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

constexpr char kTask0Cpu[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kTask1Cpu[] = "/job:worker/replica:0/task:1/device:CPU:0";
constexpr char kTask1[] = "/job:worker/replica:0/task:1";

// y = x * w on task 1, fetched on task 0 (a tensor crosses from task 1 to task 0).
GraphDef SplitGraph() {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithDevice(kTask1Cpu).WithOpName("x"), DT_FLOAT, TensorShape({2}));
  auto w = ops::Const(s.WithDevice(kTask1Cpu), Tensor::FromVector<float>({3, 4}));
  auto y = ops::Mul(s.WithDevice(kTask1Cpu).WithOpName("y"), x, w);
  ops::Identity(s.WithDevice(kTask0Cpu).WithOpName("out"), y);
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok());
  return def;
}

// One _Arg of type `dtype` read by an Identity, on task 0's CPU.
GraphDef ArgGraph(DataType dtype) {
  GraphDef def;
  NodeDef* arg = def.add_node();
  arg->set_name("arg");
  arg->set_op("_Arg");
  (*arg->mutable_attr())["T"] = MakeAttr(dtype);
  (*arg->mutable_attr())["index"] = MakeAttr(0);
  NodeDef* id = def.add_node();
  id->set_name("id");
  id->set_op("Identity");
  id->add_input("arg");
  (*id->mutable_attr())["T"] = MakeAttr(dtype);
  return def;
}

class WorkerIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server0_ = test::StartServer(0);
    server1_ = test::StartServer(1);
    ASSERT_NE(server0_, nullptr);
    ASSERT_NE(server1_, nullptr);
    cache_ = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
    client0_ = *cache_->GetClient(server0_->address(), server0_->task_name());
  }

  absl::StatusOr<std::string> Register(const GraphDef& partition, const std::string& session,
                                       const std::map<std::string, std::string>& cluster = {}) {
    RegisterGraphRequest request;
    request.set_session_handle(session);
    (*request.mutable_partitions())[kTask0Cpu] = partition;
    for (const auto& [task, address] : cluster) (*request.mutable_cluster())[task] = address;
    RegisterGraphResponse response;
    SF_RETURN_IF_ERROR(client0_->RegisterGraph(request, &response));
    return response.graph_handle();
  }

  absl::Status RunWithArgs(const std::string& handle, int64_t step_id,
                           const std::vector<std::pair<int, TensorProto>>& args) {
    RunGraphRequest run;
    run.set_graph_handle(handle);
    run.set_step_id(step_id);
    for (const auto& [index, proto] : args) {
      IndexedTensor* arg = run.add_args();
      arg->set_index(index);
      *arg->mutable_tensor() = proto;
    }
    RunGraphResponse response;
    return client0_->RunGraph(run, &response, 10000);
  }

  static TensorProto Proto(const Tensor& t) {
    TensorProto p;
    t.AsProto(&p);
    return p;
  }

  std::unique_ptr<Server> server0_, server1_;
  std::shared_ptr<GrpcWorkerCache> cache_;
  std::shared_ptr<GrpcWorkerClient> client0_;
};

// Regression (finding 3): RegisterGraph's cluster used to overwrite the worker-wide task map,
// so another client pointing task 1 elsewhere broke (or took over) this session's transfers.
TEST_F(WorkerIsolationTest, AnotherSessionsClusterCannotRedirectThisSessionsPeers) {
  auto g = test::RegisterDistributed(SplitGraph(), {"x"}, {"out"}, {server0_.get(), server1_.get()},
                                     cache_.get());
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<Tensor> out;
  ASSERT_TRUE(test::RunDistributedStep(*g, 101, {Tensor::FromVector<float>({1, 2})}, &out).ok());
  test::ExpectValues<float>(out[0], {3, 8});
  // Another session says task 1 is at an address where nothing listens.
  ASSERT_TRUE(Register(ArgGraph(DT_FLOAT), "intruder", {{kTask1, "127.0.0.1:1"}}).ok());
  absl::Status st = test::RunDistributedStep(*g, 102, {Tensor::FromVector<float>({5, 6})}, &out);
  ASSERT_TRUE(st.ok()) << st;
  test::ExpectValues<float>(out[0], {15, 24});
}

TEST_F(WorkerIsolationTest, AServerWithAClusterSpecRefusesOtherAddresses) {
  ServerOptions options;
  options.task = 0;
  options.address = "127.0.0.1:0";
  auto spec = ClusterSpec::FromJson(R"({"worker": ["127.0.0.1:1111", "127.0.0.1:2222"]})", "test");
  ASSERT_TRUE(spec.ok()) << spec.status();
  options.cluster = *spec;
  auto server = Server::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = *cache_->GetClient((*server)->address(), (*server)->task_name());
  RegisterGraphRequest request;
  (*request.mutable_partitions())[kTask0Cpu] = ArgGraph(DT_FLOAT);
  (*request.mutable_cluster())[kTask1] = "127.0.0.1:9999";
  RegisterGraphResponse response;
  absl::Status st = client->RegisterGraph(request, &response);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "cluster spec says 127.0.0.1:2222")) << st;
  (*request.mutable_cluster())[kTask1] = "127.0.0.1:2222";
  EXPECT_TRUE(client->RegisterGraph(request, &response).ok());
  (*request.mutable_cluster())["/job:ps/replica:0/task:0"] = "127.0.0.1:3333";
  st = client->RegisterGraph(request, &response);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
}

TEST_F(WorkerIsolationTest, GraphHandlesCannotBeGuessed) {
  auto a = Register(ArgGraph(DT_FLOAT), "s");
  auto b = Register(ArgGraph(DT_FLOAT), "s");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_GE(a->size(), 32u) << *a;  // 128 random bits in hex
}

// A step of session A waits for a tensor from task 1; a graph of session B may not join it.
TEST_F(WorkerIsolationTest, AStepIdCannotBeJoinedByAnotherSession) {
  auto g = test::RegisterDistributed(SplitGraph(), {"x"}, {"out"}, {server0_.get(), server1_.get()},
                                     cache_.get());
  ASSERT_TRUE(g.ok()) << g.status();
  RunGraphRequest waiting;
  waiting.set_graph_handle(g->handles.at("/job:worker/replica:0/task:0"));
  waiting.set_step_id(555);
  RunGraphResponse waiting_response;
  absl::Notification done;
  absl::Status waiting_status;
  client0_->RunGraphAsync(&waiting, &waiting_response, 10000, nullptr, [&](const absl::Status& s) {
    waiting_status = s;
    done.Notify();
  });
  absl::SleepFor(absl::Milliseconds(100));
  auto other = Register(ArgGraph(DT_FLOAT), "other-session");
  ASSERT_TRUE(other.ok()) << other.status();
  absl::Status st = RunWithArgs(*other, 555, {{0, Proto(Tensor::Scalar<float>(1))}});
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "another session")) << st;
  ASSERT_TRUE(client0_->AbortStep(555, absl::CancelledError("test over")).ok());
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(waiting_status.ok());
}

// Regression (finding 6): args of another type were an INTERNAL error; args for indices the
// graph does not read were silently ignored.
TEST_F(WorkerIsolationTest, RunGraphArgsMustBeTheGraphsOwn) {
  auto handle = Register(ArgGraph(DT_FLOAT), "s");
  ASSERT_TRUE(handle.ok()) << handle.status();
  const TensorProto good = Proto(Tensor::FromVector<float>({1, 2}));
  EXPECT_TRUE(RunWithArgs(*handle, 1, {{0, good}}).ok());
  absl::Status st = RunWithArgs(*handle, 2, {{0, Proto(Tensor::FromVector<int32_t>({1, 2}))}});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "expects float")) << st;
  st = RunWithArgs(*handle, 3, {{0, good}, {7, good}});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "index 7")) << st;
  st = RunWithArgs(*handle, 4, {{-1, good}, {0, good}});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  st = RunWithArgs(*handle, 5, {{0, good}, {0, good}});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "twice")) << st;
  st = RunWithArgs(*handle, 6, {});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(RunWithArgs(*handle, 7, {{0, good}}).ok());
}

// Regression: an _Arg or _Retval index of 2^32 was read as an int (0: silently the first
// fetch) and 2^31 became a negative index answered INTERNAL; both are the request's error.
TEST_F(WorkerIsolationTest, ArgAndRetvalIndicesOutOfRangeAreRefusedAtRegistration) {
  for (const char* op : {"_Arg", "_Retval"}) {
    for (int64_t index : {int64_t{1} << 32, int64_t{1} << 31, int64_t{-1}}) {
      GraphDef def = ArgGraph(DT_FLOAT);
      if (std::string(op) == "_Arg") {
        (*def.mutable_node(0)->mutable_attr())["index"] = MakeAttr(index);
      } else {
        NodeDef* ret = def.add_node();
        ret->set_name("ret");
        ret->set_op("_Retval");
        ret->add_input("id");
        (*ret->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
        (*ret->mutable_attr())["index"] = MakeAttr(index);
      }
      auto handle = Register(def, "s");
      ASSERT_FALSE(handle.ok()) << op << " " << index;
      EXPECT_EQ(handle.status().code(), absl::StatusCode::kInvalidArgument) << handle.status();
      EXPECT_TRUE(
          absl::StrContains(handle.status().message(), index < 0 ? "must be >= 0" : "outside [0, "))
          << handle.status();
    }
  }
}

// Regression (findings 1 and 2): a shape whose element count overflows int64 was a 0-byte
// tensor that kernels wrote past; a string tensor's values were allocated before they were
// counted. Both are refused before anything is allocated, and the server keeps serving.
TEST_F(WorkerIsolationTest, OverflowingAndEmptyHugeTensorsAreRefused) {
  auto handle = Register(ArgGraph(DT_FLOAT), "s");
  ASSERT_TRUE(handle.ok()) << handle.status();
  TensorProto overflow;
  overflow.set_dtype(DT_FLOAT);
  overflow.mutable_shape()->add_dim(int64_t{1} << 62);
  overflow.mutable_shape()->add_dim(4);
  absl::Status st = RunWithArgs(*handle, 1, {{0, overflow}});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "64 bits")) << st;

  auto strings = Register(ArgGraph(DT_STRING), "s");
  ASSERT_TRUE(strings.ok()) << strings.status();
  TensorProto many_strings;
  many_strings.set_dtype(DT_STRING);
  many_strings.mutable_shape()->add_dim(int64_t{1} << 40);
  st = RunWithArgs(*strings, 2, {{0, many_strings}});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "has 0 values")) << st;

  // A Const of such a shape in a partition: refused when its kernel is built.
  GraphDef with_const;
  NodeDef* c = with_const.add_node();
  c->set_name("c");
  c->set_op("Const");
  (*c->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
  *(*c->mutable_attr())["value"].mutable_tensor() = overflow;
  auto refused = Register(with_const, "s");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();

  // Still serving.
  EXPECT_TRUE(RunWithArgs(*handle, 3, {{0, Proto(Tensor::FromVector<float>({1}))}}).ok());
}

// Regression (finding 5): registered graphs never expired when their client disappeared.
TEST_F(WorkerIsolationTest, IdleGraphsAreCollected) {
  auto handle = Register(ArgGraph(DT_FLOAT), "s");
  ASSERT_TRUE(handle.ok()) << handle.status();
  Worker* worker = server0_->worker();
  EXPECT_EQ(worker->num_registered_graphs(), 1);
  worker->CollectGarbage(absl::Now() + absl::Minutes(1));
  EXPECT_EQ(worker->num_registered_graphs(), 1);
  worker->CollectGarbage(absl::Now() + WorkerOptions().graph_idle_timeout + absl::Seconds(1));
  EXPECT_EQ(worker->num_registered_graphs(), 0);
  absl::Status st = RunWithArgs(*handle, 1, {{0, Proto(Tensor::FromVector<float>({1}))}});
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "register the graph again")) << st;
}

// A tensor sent for a receiver that never comes is freed once the step is abandoned.
TEST_F(WorkerIsolationTest, AbandonedStepsAreAborted) {
  auto g = test::RegisterDistributed(SplitGraph(), {"x"}, {"out"}, {server0_.get(), server1_.get()},
                                     cache_.get());
  ASSERT_TRUE(g.ok()) << g.status();
  // Only task 1 runs the step: its _Send leaves the tensor for a task 0 that never asks.
  RunGraphRequest run;
  run.set_graph_handle(g->handles.at(kTask1));
  run.set_step_id(900);
  IndexedTensor* arg = run.add_args();
  arg->set_index(0);
  Tensor::FromVector<float>({1, 2}).AsProto(arg->mutable_tensor());
  RunGraphResponse response;
  ASSERT_TRUE(g->clients.at(kTask1)->RunGraph(run, &response).ok());
  Worker* worker = server1_->worker();
  EXPECT_EQ(worker->num_active_steps(), 1);
  worker->CollectGarbage(absl::Now() + WorkerOptions().abandoned_step_timeout + absl::Seconds(1));
  EXPECT_EQ(worker->num_active_steps(), 0);
}

// Regression: RecvTensor calls for steps nobody started filled the worker's table of steps in
// flight (4200 calls on one connection), and every real step failed RESOURCE_EXHAUSTED until
// the caller gave up. They are counted apart and bounded on their own.
TEST_F(WorkerIsolationTest, RecvTensorsForMadeUpStepsDoNotCrowdOutRealSteps) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.worker.max_active_steps = 16;  // and 16 steps asked for by peers only
  auto server = Server::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  Worker* worker = (*server)->worker();
  const std::string key =
      RendezvousKey(kTask0Cpu, worker->incarnation(), kTask1Cpu, "never_sent:0");
  std::atomic<int> exhausted{0}, answered{0};
  for (int64_t step = 1000; step < 1040; ++step) {
    worker->RecvTensorAsync(step, key, [&](const absl::Status& s, const Tensor&) {
      exhausted += s.code() == absl::StatusCode::kResourceExhausted;
      ++answered;
    });
  }
  EXPECT_EQ(exhausted.load(), 40 - 16);  // the rest wait for steps that never come
  auto client = *cache_->GetClient((*server)->address(), (*server)->task_name());
  RegisterGraphRequest request;
  (*request.mutable_partitions())[kTask0Cpu] = ArgGraph(DT_FLOAT);
  RegisterGraphResponse registered;
  ASSERT_TRUE(client->RegisterGraph(request, &registered).ok());
  for (int64_t step = 1; step <= 20; ++step) {
    RunGraphRequest run;
    run.set_graph_handle(registered.graph_handle());
    run.set_step_id(step);
    IndexedTensor* arg = run.add_args();
    arg->set_index(0);
    *arg->mutable_tensor() = Proto(Tensor::FromVector<float>({1, 2}));
    RunGraphResponse response;
    absl::Status st = client->RunGraph(run, &response, 10000);
    EXPECT_TRUE(st.ok()) << "step " << step << ": " << st;
  }
  (*server)->Shutdown();
  EXPECT_EQ(answered.load(), 40);  // the waiting ones end with the server
}

TEST_F(WorkerIsolationTest, TooManyGraphsIsResourceExhausted) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.worker.max_registered_graphs = 2;
  auto server = Server::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = *cache_->GetClient((*server)->address(), (*server)->task_name());
  RegisterGraphRequest request;
  (*request.mutable_partitions())["/job:worker/replica:0/task:0/device:CPU:0"] = ArgGraph(DT_FLOAT);
  RegisterGraphResponse response;
  ASSERT_TRUE(client->RegisterGraph(request, &response).ok());
  std::string first = response.graph_handle();
  ASSERT_TRUE(client->RegisterGraph(request, &response).ok());
  absl::Status st = client->RegisterGraph(request, &response);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  ASSERT_TRUE(client->CleanupGraph(first).ok());
  EXPECT_TRUE(client->RegisterGraph(request, &response).ok());
}

// Regression (finding 5), in process: the master closes sessions no call has used for
// session_idle_timeout, and refuses sessions beyond max_sessions until one closes.
TEST_F(WorkerIsolationTest, TheMasterCollectsIdleSessionsAndBoundsTheirNumber) {
  MasterOptions options;
  auto spec = ClusterSpec::FromJson(absl::StrCat(R"({"worker": [")", server0_->address(), R"("]})"),
                                    "test");
  ASSERT_TRUE(spec.ok()) << spec.status();
  options.cluster = *spec;
  options.session_idle_timeout = absl::Minutes(5);
  options.max_sessions = 2;
  auto master = Master::Create(options);
  ASSERT_TRUE(master.ok()) << master.status();
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2}));
  ops::Neg(s.WithOpName("y"), x);
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());

  auto a = (*master)->CreateSession(def, SessionOptionsProto());
  auto b = (*master)->CreateSession(def, SessionOptionsProto());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*master)->num_sessions(), 2);
  auto c = (*master)->CreateSession(def, SessionOptionsProto());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted) << c.status();

  // Not idle long enough: both stay; past the timeout: both are closed, and a step on one says so.
  (*master)->CollectGarbage(absl::Now() + absl::Minutes(1));
  EXPECT_EQ((*master)->num_sessions(), 2);
  (*master)->CollectGarbage(absl::Now() + absl::Minutes(6));
  EXPECT_EQ((*master)->num_sessions(), 0);
  std::vector<Tensor> out;
  absl::Status st = (*master)->RunStep(*a, RunOptions(), {{"x", Tensor::FromVector<float>({1, 2})}},
                                       {"y"}, {}, &out, nullptr);
  EXPECT_FALSE(st.ok());

  // Room again; the new session runs.
  auto d = (*master)->CreateSession(def, SessionOptionsProto());
  ASSERT_TRUE(d.ok()) << d.status();
  st = (*master)->RunStep(*d, RunOptions(), {{"x", Tensor::FromVector<float>({1, 2})}}, {"y"}, {},
                          &out, nullptr);
  ASSERT_TRUE(st.ok()) << st;
  test::ExpectValues<float>(out[0], {-1, -2});
  EXPECT_TRUE((*master)->CloseSession(*d).ok());
  EXPECT_EQ((*master)->num_sessions(), 0);
}

}  // namespace
}  // namespace shardflow
