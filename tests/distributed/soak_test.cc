// Soak (issue 10): two `shardflow server` tasks on loopback under 10,000 mixed good and bad
// requests from four clients at once. Good steps must give exact results all along; every bad
// request must get its error; the servers must stay up, and their resident memory must level
// off (idle sessions and graphs collected, refused bodies never read). Prints the RSS curve.
//
// SF_SOAK_REQUESTS overrides the number of requests (default 10000).
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/framework/attr_value.h"
#include "core/protos/master.grpc.pb.h"
#include "core/protos/worker.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/distributed/process_util.h"

namespace shardflow {
namespace {

constexpr char kToken[] = "soak-token";
constexpr int kClients = 4;

std::string Device(int task) {
  return absl::StrCat("/job:worker/replica:0/task:", task, "/device:CPU:0");
}

// y = x * 2 + 1 on task 1, fetched on task 0.
GraphDef GoodGraph() {
  Scope s = Scope::NewRootScope();
  Scope t1 = s.WithDevice(Device(1));
  auto x = ops::Placeholder(t1.WithOpName("x"), DT_FLOAT, TensorShape({16}));
  auto y = ops::Add(t1, ops::Mul(t1, x, ops::Const(t1, 2.0f)), ops::Const(t1, 1.0f));
  ops::Identity(s.WithDevice(Device(0)).WithOpName("y"), y);
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok());
  return def;
}

// What each kind of request got, for the summary.
struct Tally {
  std::atomic<int64_t> good{0}, bad_refused{0}, wrong{0};
};

class Client {
 public:
  Client(const std::string& target, int seed, Tally* tally)
      : channel_(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())),
        stub_(MasterService::NewStub(channel_)),
        generic_(channel_),
        rng_(seed),
        tally_(tally) {}

  // One request of kind `kind` (0..19); returns false (with a message) on a wrong answer.
  bool Request(int kind, std::string* error) {
    switch (kind) {
      case 0:
      case 1:
      case 2:
      case 3:
      case 4:
      case 5:
        return GoodStep(error);
      case 6:
        return FreshSession(/*close=*/true, error);
      case 7:
        return FreshSession(/*close=*/false, error);  // abandoned: the idle collector closes it
      case 8:
        return Expect(Garbage(), grpc::StatusCode::INVALID_ARGUMENT, "garbage", error);
      case 9:
        return Expect(WrongToken(), grpc::StatusCode::UNAUTHENTICATED, "wrong token", error);
      case 10:
        return Expect(HugeFeed(false), grpc::StatusCode::INVALID_ARGUMENT, "overflow", error);
      case 11:
        return Expect(HugeFeed(true), grpc::StatusCode::INVALID_ARGUMENT, "strings", error);
      case 12:
        return Expect(InternalOp(), grpc::StatusCode::INVALID_ARGUMENT, "_Recv", error);
      case 13:
        return Expect(UnknownSession(), grpc::StatusCode::ABORTED, "unknown session", error);
      case 14:
        return Expect(WrongDtype(), grpc::StatusCode::INVALID_ARGUMENT, "dtype", error);
      case 15:
        return ExpectOneOf(TinyDeadline(),
                           {grpc::StatusCode::DEADLINE_EXCEEDED, grpc::StatusCode::OK}, "deadline",
                           error);
      case 16:
        return Expect(WorkerGarbage(), grpc::StatusCode::INVALID_ARGUMENT, "RecvTensor", error);
      case 17:
        return Expect(WorkerUnknownGraph(), grpc::StatusCode::NOT_FOUND, "RunGraph", error);
      case 18:
        return Expect(Oversized(), grpc::StatusCode::RESOURCE_EXHAUSTED, "oversized", error);
      default:
        return Expect(NoFetches(), grpc::StatusCode::INVALID_ARGUMENT, "no fetch", error);
    }
  }

 private:
  std::unique_ptr<grpc::ClientContext> Context(const std::string& token = kToken) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return c;
  }

  grpc::Status Create(const GraphDef& def, std::string* handle) {
    auto context = Context();
    CreateSessionRequest request;
    *request.mutable_graph_def() = def;
    CreateSessionResponse response;
    grpc::Status st = stub_->CreateSession(context.get(), request, &response);
    *handle = response.session_handle();
    return st;
  }

  grpc::Status Run(const std::string& handle, const std::vector<float>& x, RunStepResponse* out,
                   grpc::ClientContext* context = nullptr) {
    auto own = Context();
    RunStepRequest request;
    request.set_session_handle(handle);
    request.add_fetches("y");
    NamedTensor* feed = request.add_feeds();
    feed->set_name("x");
    Tensor::FromVector<float>(x).AsProto(feed->mutable_tensor());
    return stub_->RunStep(context != nullptr ? context : own.get(), request, out);
  }

  bool CheckResult(const std::vector<float>& x, const RunStepResponse& out, std::string* error) {
    if (out.tensors_size() != 1) {
      *error = absl::StrCat("a good step returned ", out.tensors_size(), " tensors");
      return false;
    }
    auto t = Tensor::FromProto(out.tensors(0));
    if (!t.ok() || t->NumElements() != static_cast<int64_t>(x.size())) {
      *error = "a good step returned a tensor of the wrong shape";
      return false;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      if (t->data<float>()[i] != x[i] * 2 + 1) {
        *error = absl::StrCat("a good step returned ", t->data<float>()[i], " for x = ", x[i]);
        return false;
      }
    }
    tally_->good++;
    return true;
  }

  std::vector<float> RandomInput() {
    std::vector<float> x(16);
    for (float& v : x) v = static_cast<float>(static_cast<int>(rng_() % 2001) - 1000) / 8;
    return x;
  }

  bool GoodStep(std::string* error) {
    if (session_.empty()) {
      grpc::Status st = Create(GoodGraph(), &session_);
      if (!st.ok()) {
        *error = "CreateSession: " + st.error_message();
        return false;
      }
    }
    std::vector<float> x = RandomInput();
    RunStepResponse out;
    grpc::Status st = Run(session_, x, &out);
    if (st.error_code() == grpc::StatusCode::NOT_FOUND) {
      session_.clear();  // collected while this client did other things: make a new one
      return GoodStep(error);
    }
    if (!st.ok()) {
      *error = "RunStep: " + st.error_message();
      return false;
    }
    return CheckResult(x, out, error);
  }

  bool FreshSession(bool close, std::string* error) {
    std::string handle;
    grpc::Status st = Create(GoodGraph(), &handle);
    std::vector<float> x = RandomInput();
    RunStepResponse out;
    if (st.ok()) st = Run(handle, x, &out);
    if (!st.ok()) {
      *error = "fresh session: " + st.error_message();
      return false;
    }
    if (close) {
      auto context = Context();
      CloseSessionRequest request;
      request.set_session_handle(handle);
      CloseSessionResponse response;
      st = stub_->CloseSession(context.get(), request, &response);
      if (!st.ok()) {
        *error = "CloseSession: " + st.error_message();
        return false;
      }
    }
    return CheckResult(x, out, error);
  }

  grpc::Status Raw(const std::string& method, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    auto context = Context();
    absl::Notification done;
    grpc::Status status;
    generic_.UnaryCall(context.get(), method, grpc::StubOptions(), &request, &response,
                       [&](grpc::Status s) {
                         status = s;
                         done.Notify();
                       });
    done.WaitForNotification();
    return status;
  }

  grpc::Status Garbage() {
    static const char* kMethods[] = {"CreateSession", "ExtendSession", "RunStep", "CloseSession",
                                     "ListDevices"};
    std::string bytes(1 + rng_() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng_());
    bytes[0] = '\xff';  // never a valid first tag
    return Raw(absl::StrCat("/shardflow.MasterService/", kMethods[rng_() % 5]), bytes);
  }

  grpc::Status WrongToken() {
    auto context = Context("not-the-token");
    RunStepRequest request;
    request.set_session_handle(session_);
    request.add_fetches("y");
    RunStepResponse out;
    return stub_->RunStep(context.get(), request, &out);
  }

  grpc::Status HugeFeed(bool strings) {
    std::string handle;
    if (session_.empty()) Create(GoodGraph(), &session_);
    auto context = Context();
    RunStepRequest request;
    request.set_session_handle(session_);
    request.add_fetches("y");
    NamedTensor* feed = request.add_feeds();
    feed->set_name("x");
    feed->mutable_tensor()->set_dtype(strings ? DT_STRING : DT_FLOAT);
    feed->mutable_tensor()->mutable_shape()->add_dim(strings ? int64_t{1} << 40 : int64_t{1} << 62);
    if (!strings) feed->mutable_tensor()->mutable_shape()->add_dim(4);
    RunStepResponse out;
    return stub_->RunStep(context.get(), request, &out);
  }

  grpc::Status InternalOp() {
    GraphDef def;
    NodeDef* n = def.add_node();
    n->set_name("recv");
    n->set_op("_Recv");
    std::string handle;
    return Create(def, &handle);
  }

  grpc::Status UnknownSession() {
    RunStepResponse out;
    return Run(absl::StrCat("session-", rng_()), RandomInput(), &out);
  }

  grpc::Status WrongDtype() {
    if (session_.empty()) Create(GoodGraph(), &session_);
    auto context = Context();
    RunStepRequest request;
    request.set_session_handle(session_);
    request.add_fetches("y");
    NamedTensor* feed = request.add_feeds();
    feed->set_name("x");
    Tensor::FromVector<int32_t>(std::vector<int32_t>(16, 3)).AsProto(feed->mutable_tensor());
    RunStepResponse out;
    return stub_->RunStep(context.get(), request, &out);
  }

  grpc::Status TinyDeadline() {
    if (session_.empty()) Create(GoodGraph(), &session_);
    grpc::ClientContext context;
    context.AddMetadata("authorization", absl::StrCat("Bearer ", kToken));
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(3));
    RunStepResponse out;
    return Run(session_, RandomInput(), &out, &context);
  }

  grpc::Status WorkerGarbage() {
    return Raw("/shardflow.WorkerService/RecvTensor", std::string("\xff\x01 not a request", 16));
  }

  grpc::Status WorkerUnknownGraph() {
    RunGraphRequest request;
    request.set_graph_handle(absl::StrCat("graph-", rng_()));
    request.set_step_id(static_cast<int64_t>(rng_() >> 1));
    return Raw("/shardflow.WorkerService/RunGraph", request.SerializeAsString());
  }

  grpc::Status Oversized() {
    // Over --max-message-mb 4: refused by its length, never parsed.
    RunStepRequest request;
    request.set_session_handle(session_);
    NamedTensor* feed = request.add_feeds();
    feed->set_name("x");
    feed->mutable_tensor()->set_content(std::string(5 << 20, 'x'));
    auto context = Context();
    RunStepResponse out;
    return stub_->RunStep(context.get(), request, &out);
  }

  grpc::Status NoFetches() {
    if (session_.empty()) Create(GoodGraph(), &session_);
    auto context = Context();
    RunStepRequest request;
    request.set_session_handle(session_);
    RunStepResponse out;
    return stub_->RunStep(context.get(), request, &out);
  }

  bool Expect(const grpc::Status& st, grpc::StatusCode code, const char* what, std::string* error) {
    return ExpectOneOf(st, {code}, what, error);
  }
  bool ExpectOneOf(const grpc::Status& st, std::vector<grpc::StatusCode> codes, const char* what,
                   std::string* error) {
    for (grpc::StatusCode c : codes) {
      if (st.error_code() == c) {
        tally_->bad_refused++;
        return true;
      }
    }
    *error = absl::StrCat(what, ": got code ", st.error_code(), " '", st.error_message(), "'");
    tally_->wrong++;
    return false;
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<MasterService::Stub> stub_;
  grpc::GenericStub generic_;
  std::mt19937_64 rng_;
  Tally* tally_;
  std::string session_;
};

TEST(SoakTest, TenThousandMixedRequestsKeepServingWithBoundedMemory) {
  if (access(test::ShardflowBinary().c_str(), X_OK) != 0) GTEST_SKIP() << "no binary";
  int64_t total = 10000;
  if (const char* env = std::getenv("SF_SOAK_REQUESTS")) total = std::atoll(env);
  char dir[] = "/tmp/sf_soak_XXXXXX";
  const std::string tmp = mkdtemp(dir);
  const std::string cluster = tmp + "/cluster.json";
  std::vector<int> ports = {test::FreePort(), test::FreePort()};
  std::ofstream(cluster) << "{\"worker\": [\"127.0.0.1:" << ports[0]
                         << "\", \"127.0.0.1:" << ports[1] << "\"]}";
  std::vector<std::unique_ptr<test::ServerProcess>> tasks;
  for (int i = 0; i < 2; ++i) {
    tasks.push_back(std::make_unique<test::ServerProcess>(std::vector<std::string>{
        "server", "--cluster", cluster, "--task", std::to_string(i), "--threads", "1", "--token",
        kToken, "--max-message-mb", "4", "--session-idle-secs", "2", "--graph-idle-secs", "4",
        "--step-idle-secs", "5", "--transfer-idle-secs", "3"}));
    ASSERT_TRUE(tasks.back()->WaitFor("listening on")) << tasks.back()->output();
  }
  const std::string target = absl::StrCat("127.0.0.1:", ports[0]);

  Tally tally;
  std::atomic<int64_t> next{0};
  absl::Mutex mu;
  std::vector<std::string> errors;
  struct Sample {
    int64_t requests;
    double seconds;
    int64_t rss_kb[2];
  };
  std::vector<Sample> curve;
  const auto start = std::chrono::steady_clock::now();
  auto sample = [&] {
    Sample s;
    s.requests = std::min(next.load(), total);
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int i = 0; i < 2; ++i) s.rss_kb[i] = tasks[i]->RssKb();
    curve.push_back(s);
  };
  sample();
  std::atomic<bool> clients_done{false};
  std::thread monitor([&] {
    int64_t last = 0;
    while (!clients_done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (next.load() - last >= total / 20) {
        last = next.load();
        sample();
      }
    }
  });
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      Client client(target, 1000 + c, &tally);
      std::mt19937 pick(c);
      for (int64_t i; (i = next.fetch_add(1)) < total;) {
        std::string error;
        if (!client.Request(static_cast<int>(pick() % 20), &error)) {
          absl::MutexLock lock(&mu);
          if (errors.size() < 20) errors.push_back(absl::StrCat("request ", i, ": ", error));
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  clients_done.store(true);
  monitor.join();
  sample();
  // Let the collectors close the abandoned sessions and graphs, then look again.
  std::this_thread::sleep_for(std::chrono::seconds(6));
  sample();

  std::printf(
      "\nsoak: %lld requests from %d clients in %.1f s: %lld good steps exact, %lld bad "
      "requests refused as expected, %lld wrong answers\n",
      static_cast<long long>(total), kClients, curve[curve.size() - 2].seconds,
      static_cast<long long>(tally.good.load()), static_cast<long long>(tally.bad_refused.load()),
      static_cast<long long>(tally.wrong.load()));
  std::printf("%10s %9s %14s %14s\n", "requests", "seconds", "task0 RSS MiB", "task1 RSS MiB");
  for (const Sample& s : curve) {
    std::printf("%10lld %9.1f %14.1f %14.1f\n", static_cast<long long>(s.requests), s.seconds,
                s.rss_kb[0] / 1024.0, s.rss_kb[1] / 1024.0);
  }
  for (const std::string& e : errors) ADD_FAILURE() << e;
  EXPECT_TRUE(errors.empty());
  for (auto& t : tasks) EXPECT_TRUE(t->Alive()) << t->output();
  // The bound: after the first tenth of the run (sessions, graphs and gRPC buffers warmed up),
  // resident memory grows by less than 64 MiB to the end (a leak of one buffer per request
  // would be hundreds of MiB), and stays under 512 MiB.
  const Sample& warm = curve[std::min<size_t>(2, curve.size() - 1)];
  for (int i = 0; i < 2; ++i) {
    EXPECT_LT(curve.back().rss_kb[i], 512 * 1024) << "task " << i;
    EXPECT_LT(curve.back().rss_kb[i] - warm.rss_kb[i], 64 * 1024) << "task " << i;
  }
  std::system(("rm -rf " + tmp).c_str());
}

}  // namespace
}  // namespace shardflow
