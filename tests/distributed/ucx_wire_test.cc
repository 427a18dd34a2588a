// The "ucx" data plane against a hand-made UCX peer (Note [UCX data plane] in
// distributed/ucx/ucx_data_plane.h gives the wire format this test speaks):
//  - as an attacker of a serving task: malformed requests (a short header, no reply endpoint, an
//    empty, garbage or oversized key), unsolicited replies and cancels, an unregistered message
//    id. Each is dropped or answered with an error, and the task serves the next real pull.
//  - as a lying sender to a receiving task: replies whose bytes disagree with their dtype and
//  shape,
//    an invalid dtype, a shape too large for int64, a bool byte that is not 0 or 1, a cut string,
//    an error reply with an out-of-range code. Each fails that pull with INVALID_ARGUMENT (or the
//    error), never a crash, and the receiver pulls the next tensor.
// Skipped when shardflow is built without UCX.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/framework/attr_value.h"
#include "core/framework/rendezvous.h"
#include "core/framework/tensor_util.h"
#include "core/platform/status.h"
#include "distributed/data_plane.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "distributed/server.h"
#include "gtest/gtest.h"
#include "tests/distributed/distributed_test_util.h"
#ifdef SHARDFLOW_HAVE_UCX
#include <ucp/api/ucp.h>

#include "distributed/ucx/ucx_data_plane.h"
#endif

namespace shardflow {
namespace {

#ifdef SHARDFLOW_HAVE_UCX

constexpr unsigned kRequestAm = 11, kReplyAm = 12, kCancelAm = 13;
struct RequestHeader {
  uint64_t id;
  int64_t step_id;
  uint32_t token_bytes;
  uint32_t reserved;
};
struct ReplyHeader {
  uint64_t id;
  int32_t code;
  int32_t dtype;
  uint32_t rank;
  uint32_t message_bytes;
};

constexpr char kTask0Cpu[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kTask1Cpu[] = "/job:worker/replica:0/task:1/device:CPU:0";

// A UCX worker of the test's own, progressed by one thread; everything UCX runs there.
class RawPeer {
 public:
  struct Reply {
    ReplyHeader header;
    std::string data;
  };
  // Answers a request (on the progress thread): the reply endpoint, the request's id.
  using Responder = std::function<void(RawPeer*, ucp_ep_h, uint64_t)>;

  RawPeer() {
    ucp_params_t params;
    std::memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    EXPECT_EQ(ucp_init(&params, nullptr, &context_), UCS_OK);
    ucp_worker_params_t wp;
    std::memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    EXPECT_EQ(ucp_worker_create(context_, &wp, &worker_), UCS_OK);
    ucp_address_t* address;
    size_t length;
    EXPECT_EQ(ucp_worker_get_address(worker_, &address, &length), UCS_OK);
    address_.assign(reinterpret_cast<const char*>(address), length);
    ucp_worker_release_address(worker_, address);
    for (unsigned id : {kRequestAm, kReplyAm}) {
      ucp_am_handler_param_t hp;
      std::memset(&hp, 0, sizeof(hp));
      hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_ARG;
      hp.id = id;
      hp.cb = id == kRequestAm ? &RawPeer::OnRequest : &RawPeer::OnReply;
      hp.arg = this;
      EXPECT_EQ(ucp_worker_set_am_recv_handler(worker_, &hp), UCS_OK);
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~RawPeer() {
    Run([this] {
      for (ucp_ep_h ep : eps_) {
        ucp_request_param_t p;
        std::memset(&p, 0, sizeof(p));
        p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        p.flags = UCP_EP_CLOSE_FLAG_FORCE;
        ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
        if (r != nullptr && !UCS_PTR_IS_ERR(r)) ucp_request_free(r);
      }
      stop_ = true;
    });
    thread_.join();
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
  }

  const std::string& address() const { return address_; }

  // Runs `fn` on the progress thread and waits for it.
  void Run(std::function<void()> fn) {
    absl::Notification done;
    {
      absl::MutexLock lock(&mu_);
      queue_.push_back([&] {
        fn();
        done.Notify();
      });
    }
    done.WaitForNotification();
  }

  ucp_ep_h Connect(const std::string& address) {
    ucp_ep_h ep = nullptr;
    Run([&] {
      ucp_ep_params_t params;
      std::memset(&params, 0, sizeof(params));
      params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
      params.address = reinterpret_cast<const ucp_address_t*>(address.data());
      EXPECT_EQ(ucp_ep_create(worker_, &params, &ep), UCS_OK);
      eps_.push_back(ep);
    });
    return ep;
  }

  // Sends an active message (on the progress thread: call it there, e.g. from a Responder).
  void SendHere(ucp_ep_h ep, unsigned id, const std::string& header, const std::string& data,
                uint32_t flags) {
    auto* keep = new std::pair<std::string, std::string>(header, data);
    ucp_request_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.op_attr_mask =
        UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.flags = flags;
    p.user_data = keep;
    p.cb.send = [](void* request, ucs_status_t, void* user_data) {
      delete static_cast<std::pair<std::string, std::string>*>(user_data);
      ucp_request_free(request);
    };
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, keep->first.data(), keep->first.size(),
                                         keep->second.data(), keep->second.size(), &p);
    if (r == nullptr || UCS_PTR_IS_ERR(r)) delete keep;
  }
  void Send(ucp_ep_h ep, unsigned id, const std::string& header, const std::string& data,
            uint32_t flags) {
    Run([&] { SendHere(ep, id, header, data, flags); });
  }

  void set_responder(Responder r) {
    Run([&] { responder_ = std::move(r); });
  }

  // Waits (up to 10 s) for the n-th reply this peer has received (0-based).
  bool WaitReplies(size_t n) {
    for (int i = 0; i < 1000; ++i) {
      {
        absl::MutexLock lock(&mu_);
        if (replies_.size() >= n) return true;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
  std::vector<Reply> replies() {
    absl::MutexLock lock(&mu_);
    return replies_;
  }

 private:
  void Loop() {
    while (!stop_) {
      std::deque<std::function<void()>> work;
      {
        absl::MutexLock lock(&mu_);
        work.swap(queue_);
      }
      for (auto& fn : work) fn();
      if (ucp_worker_progress(worker_) == 0 && work.empty()) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  static ucs_status_t OnRequest(void* arg, const void* header, size_t header_length, void*, size_t,
                                const ucp_am_recv_param_t* param) {
    auto* self = static_cast<RawPeer*>(arg);
    if (header_length != sizeof(RequestHeader) || !self->responder_ ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0) {
      return UCS_OK;
    }
    RequestHeader h;
    std::memcpy(&h, header, sizeof(h));
    self->responder_(self, param->reply_ep, h.id);
    return UCS_OK;
  }
  static ucs_status_t OnReply(void* arg, const void* header, size_t header_length, void* data,
                              size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<RawPeer*>(arg);
    Reply reply;
    std::memset(&reply.header, 0, sizeof(reply.header));
    std::memcpy(&reply.header, header, std::min(header_length, sizeof(reply.header)));
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
      reply.data.assign(static_cast<const char*>(data), length);
    }
    absl::MutexLock lock(&self->mu_);
    self->replies_.push_back(reply);
    return UCS_OK;
  }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::string address_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::vector<ucp_ep_h> eps_;
  Responder responder_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<Reply> replies_ ABSL_GUARDED_BY(mu_);
};

std::string Bytes(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

std::unique_ptr<Server> StartUcxServer(const std::string& token = "") {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.transport = "ucx";
  options.security.token = token;
  options.config.set_inter_op_threads(2);
  auto server = Server::Create(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(server).value() : nullptr;
}

absl::StatusOr<Tensor> Pull(TensorTransport* transport, const RecvTensorCall& call) {
  absl::Notification done;
  absl::StatusOr<Tensor> result;
  transport->RecvTensorAsync(call, nullptr, [&](const absl::Status& s, Tensor t) {
    result = s.ok() ? absl::StatusOr<Tensor>(std::move(t)) : absl::StatusOr<Tensor>(s);
    done.Notify();
  });
  if (!done.WaitForNotificationWithTimeout(absl::Seconds(30))) {
    return absl::DeadlineExceededError("the pull hangs");
  }
  return result;
}

TEST(UcxWireTest, MalformedMessagesToAServingTaskAreDroppedOrAnsweredAndItServesOn) {
  std::unique_ptr<Server> server = StartUcxServer();
  ASSERT_NE(server, nullptr);
  GetStatusResponse status;
  server->worker()->GetStatus(&status);
  ASSERT_EQ(status.data_plane(), "ucx");
  RawPeer peer;
  auto unwrapped = UnwrapUcxAddress(status.data_plane_address(), "");
  ASSERT_TRUE(unwrapped.ok()) << unwrapped.status();
  ucp_ep_h ep = peer.Connect(*unwrapped);

  RequestHeader h{1, 77, 0, 0};
  auto bytes = [&h] { return Bytes(&h, sizeof(h)); };
  // Dropped: a short header; no reply endpoint; a cancel of the wrong size; unsolicited replies;
  // an id nothing handles.
  peer.Send(ep, kRequestAm, "abc", "key", UCP_AM_SEND_FLAG_REPLY);
  peer.Send(ep, kRequestAm, bytes(), "key", 0);
  peer.Send(ep, kCancelAm, "xy", "", UCP_AM_SEND_FLAG_REPLY);
  peer.Send(ep, kReplyAm, std::string(3, '\xff'), "zz", 0);
  peer.Send(ep, kReplyAm, bytes() + std::string(64, '\xff'), "zz", 0);
  peer.Send(ep, 99, bytes(), "zz", 0);  // UCX logs a warning and drops it
  // Answered with errors: an empty key, a key that is not one, a key past 64 KiB, a header
  // announcing a token it does not carry.
  h.id = 2;
  peer.Send(ep, kRequestAm, bytes(), "", UCP_AM_SEND_FLAG_REPLY);
  h.id = 3;
  peer.Send(ep, kRequestAm, bytes(), "not a rendezvous key", UCP_AM_SEND_FLAG_REPLY);
  h.id = 4;
  peer.Send(ep, kRequestAm, bytes(), std::string(100 << 10, 'k'), UCP_AM_SEND_FLAG_REPLY);
  h.id = 5;
  h.token_bytes = 100;
  peer.Send(ep, kRequestAm, bytes(), "key", UCP_AM_SEND_FLAG_REPLY);
  h.token_bytes = 0;
  ASSERT_TRUE(peer.WaitReplies(4)) << "the task stopped answering";
  absl::SleepFor(absl::Milliseconds(100));
  std::vector<RawPeer::Reply> replies = peer.replies();
  ASSERT_EQ(replies.size(), 4u) << "a dropped message was answered";
  for (const RawPeer::Reply& r : replies) {
    EXPECT_GE(r.header.id, 2u);
    EXPECT_EQ(r.header.code, static_cast<int32_t>(absl::StatusCode::kInvalidArgument))
        << "reply to request " << r.header.id;
  }
  // A cancel aborts a step only when this peer's pull of it is being answered: one for a pull
  // nobody made is dropped; one for a waiting pull aborts its step (and the pull's answer says
  // so).
  h.id = 6;
  h.step_id = 4243;
  peer.Send(ep, kCancelAm, bytes(), "", UCP_AM_SEND_FLAG_REPLY);
  const std::string key = RendezvousKey(kTask0Cpu, server->incarnation(), kTask1Cpu, "t:0");
  h.id = 7;
  h.step_id = 4242;
  peer.Send(ep, kRequestAm, bytes(), key, UCP_AM_SEND_FLAG_REPLY);  // waits for a _Send
  absl::SleepFor(absl::Milliseconds(100));
  peer.Send(ep, kCancelAm, bytes(), "", UCP_AM_SEND_FLAG_REPLY);
  ASSERT_TRUE(peer.WaitReplies(5));
  EXPECT_EQ(peer.replies().back().header.id, 7u);
  EXPECT_EQ(peer.replies().back().header.code, static_cast<int32_t>(absl::StatusCode::kCancelled));
  EXPECT_EQ(server->worker()->StepStatus(4242).code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(server->worker()->StepStatus(4243).ok()) << "a step nobody pulled was aborted";

  // The task serves a real pull after all that.
  auto cache = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
  auto client = *cache->GetClient(server->address(), server->task_name());
  ASSERT_TRUE(
      test::SendOnTask0(client.get(), server->incarnation(), Tensor::Scalar<int32_t>(7), 9).ok());
  auto plane = NewDataPlane("ucx", {"/job:worker/replica:0/task:1"}, cache, cache->NewTransport());
  ASSERT_TRUE(plane.ok()) << plane.status();
  RecvTensorCall call;
  call.task = server->task_name();
  call.address = server->address();
  call.step_id = 9;
  call.key = RendezvousKey(kTask0Cpu, server->incarnation(), kTask1Cpu, "t:0");
  auto got = Pull(plane->get(), call);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->scalar<int32_t>(), 7);
}

// A cache whose one worker says its UCX address is the raw peer's: the receiver connects there.
class LyingWorker final : public WorkerInterface {
 public:
  explicit LyingWorker(std::string ucx_address) : ucx_address_(std::move(ucx_address)) {}
  const std::string& address() const override { return address_; }
  const std::string& task() const override { return task_; }
  void GetStatusAsync(GetStatusResponse* response, StatusCallback done, int64_t, bool) override {
    response->set_task(task_);
    response->set_data_plane("ucx");
    response->set_data_plane_address(ucx_address_);
    done(absl::OkStatus());
  }
  void RegisterGraphAsync(const RegisterGraphRequest*, RegisterGraphResponse*,
                          StatusCallback done) override {
    done(absl::UnimplementedError("test"));
  }
  void RunGraphAsync(const RunGraphRequest*, RunGraphResponse*, int64_t, CallCancellation*,
                     StatusCallback done) override {
    done(absl::UnimplementedError("test"));
  }
  void CleanupGraphAsync(const std::string&, StatusCallback done) override {
    done(absl::UnimplementedError("test"));
  }
  void AbortStepAsync(int64_t, const absl::Status&, StatusCallback done) override {
    done(absl::UnimplementedError("test"));
  }

 private:
  const std::string ucx_address_;
  const std::string address_ = "127.0.0.1:1";
  const std::string task_ = "/job:worker/replica:0/task:0";
};

class LyingCache final : public WorkerCacheInterface {
 public:
  explicit LyingCache(std::string ucx_address)
      : worker_(std::make_shared<LyingWorker>(std::move(ucx_address))) {}
  absl::StatusOr<std::shared_ptr<WorkerInterface>> GetWorker(const std::string&,
                                                             const std::string&) override {
    return std::shared_ptr<WorkerInterface>(worker_);
  }
  std::unique_ptr<TensorTransport> NewTransport() override { return nullptr; }

 private:
  std::shared_ptr<LyingWorker> worker_;
};

TEST(UcxWireTest, ALyingSendersRepliesFailThePullAndTheReceiverPullsOn) {
  RawPeer peer;
  auto cache = std::make_shared<LyingCache>(WrapUcxAddress(peer.address(), ""));
  auto plane = NewDataPlane("ucx", {"/job:worker/replica:0/task:1"}, cache, nullptr);
  ASSERT_TRUE(plane.ok()) << plane.status();
  RecvTensorCall call;
  call.task = "/job:worker/replica:0/task:0";
  call.address = "127.0.0.1:1";
  call.key = RendezvousKey(kTask0Cpu, 1, kTask1Cpu, "t:0");

  auto reply = [](uint64_t id, int32_t code, DataType dtype, std::vector<int64_t> dims,
                  const std::string& message = "") {
    ReplyHeader h;
    std::memset(&h, 0, sizeof(h));
    h.id = id;
    h.code = code;
    h.dtype = dtype;
    h.rank = static_cast<uint32_t>(dims.size());
    h.message_bytes = static_cast<uint32_t>(message.size());
    std::string out = Bytes(&h, sizeof(h));
    for (int64_t d : dims) out += Bytes(&d, sizeof(d));
    return out + message;
  };
  struct Lie {
    const char* what;
    std::function<std::string(uint64_t)> header;
    std::string data;
    absl::StatusCode code;
    const char* says;
  };
  std::string cut_string;
  const uint64_t n = 100;
  cut_string = Bytes(&n, sizeof(n)) + "short";
  std::vector<Lie> lies = {
      {"too few bytes", [&](uint64_t id) { return reply(id, 0, DT_FLOAT, {4}); },
       std::string(12, 'x'), absl::StatusCode::kInvalidArgument, "has 16 bytes but 12 came"},
      {"too many bytes", [&](uint64_t id) { return reply(id, 0, DT_FLOAT, {2}); },
       std::string(12, 'x'), absl::StatusCode::kInvalidArgument, "has 8 bytes but 12 came"},
      {"no dtype", [&](uint64_t id) { return reply(id, 0, static_cast<DataType>(999), {1}); },
       "abcd", absl::StatusCode::kInvalidArgument, "no valid dtype"},
      {"a shape past int64",
       [&](uint64_t id) {
         return reply(id, 0, DT_FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
       },
       "abcd", absl::StatusCode::kInvalidArgument, "64 bits"},
      {"a negative dim", [&](uint64_t id) { return reply(id, 0, DT_FLOAT, {-5}); }, "",
       absl::StatusCode::kInvalidArgument, "negative"},
      {"a bool that is not 0 or 1", [&](uint64_t id) { return reply(id, 0, DT_BOOL, {3}); },
       std::string("\1\x5d\1", 3), absl::StatusCode::kInvalidArgument, "byte 93"},
      {"a cut string", [&](uint64_t id) { return reply(id, 0, DT_STRING, {1}); }, cut_string,
       absl::StatusCode::kInvalidArgument, "announces 100 bytes"},
      {"a header cut short", [&](uint64_t id) { return reply(id, 0, DT_FLOAT, {4}).substr(0, 30); },
       std::string(16, 'x'), absl::StatusCode::kInvalidArgument, "reply header"},
      {"an error with a code out of range",
       [&](uint64_t id) { return reply(id, 99, DT_INVALID, {}, "boom"); }, "",
       absl::StatusCode::kUnknown, "boom"},
  };
  for (const Lie& lie : lies) {
    std::function<std::string(uint64_t)> header = lie.header;
    std::string data = lie.data;
    peer.set_responder([header, data](RawPeer* p, ucp_ep_h ep, uint64_t id) {
      p->SendHere(ep, kReplyAm, header(id), data, 0);
    });
    auto got = Pull(plane->get(), call);
    ASSERT_FALSE(got.ok()) << lie.what;
    EXPECT_EQ(got.status().code(), lie.code) << lie.what << ": " << got.status();
    EXPECT_TRUE(absl::StrContains(got.status().message(), lie.says))
        << lie.what << ": " << got.status();
  }
  // An honest reply after all that.
  peer.set_responder([&reply](RawPeer* p, ucp_ep_h ep, uint64_t id) {
    const float values[2] = {1.5f, -2.0f};
    p->SendHere(ep, kReplyAm, reply(id, 0, DT_FLOAT, {2}), Bytes(values, sizeof(values)), 0);
  });
  auto got = Pull(plane->get(), call);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(TensorsEqual(*got, Tensor::FromVector<float>({1.5f, -2.0f})));
}

// Pulls nothing: says it was asked.
class MarkerTransport final : public TensorTransport {
 public:
  void RecvTensorAsync(const RecvTensorCall&, CallCancellation*, RecvDone done) override {
    done(absl::UnavailableError("the fallback transport was used"), Tensor());
  }
};

TEST(UcxWireTest, AGarbageUcxAddressFallsBackToGrpcWithoutAHang) {
  // A real address with bytes changed, cut, from another UCX version, or tagged with another
  // token; and bytes that are no address at all. UCX would abort the process on most of them.
  RawPeer real;
  const std::string good = WrapUcxAddress(real.address(), "");
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x5a;
  std::string other_version = good;
  other_version[6] ^= 1;  // the major version, after "SFUCX1"
  for (const std::string address :
       {flipped, good.substr(0, good.size() - 7), other_version,
        WrapUcxAddress(real.address(), "another token"), std::string("x"), std::string(64, '\xff'),
        std::string("\x01\x00\x00\x00garbage", 11)}) {
    auto cache = std::make_shared<LyingCache>(address);
    auto plane = NewDataPlane("ucx", {"/job:worker/replica:0/task:1"}, cache,
                              std::make_unique<MarkerTransport>());
    ASSERT_TRUE(plane.ok()) << plane.status();
    RecvTensorCall call;
    call.task = "/job:worker/replica:0/task:0";
    call.address = "127.0.0.1:1";
    call.key = RendezvousKey(kTask0Cpu, 1, kTask1Cpu, "t:0");
    auto got = Pull(plane->get(), call);
    EXPECT_TRUE(absl::StrContains(got.status().message(), "fallback")) << got.status();
  }
}

TEST(UcxWireTest, ATaskWithATokenAnswersOnlyPullsThatCarryIt) {
  std::unique_ptr<Server> server = StartUcxServer("s3cret");
  ASSERT_NE(server, nullptr);
  GrpcClientOptions client_options;
  client_options.security.token = "s3cret";  // GetStatus over gRPC needs it too
  auto cache = std::make_shared<GrpcWorkerCache>(client_options);
  auto client = *cache->GetClient(server->address(), server->task_name());
  const std::string key = RendezvousKey(kTask0Cpu, server->incarnation(), kTask1Cpu, "t:0");
  RecvTensorCall call;
  call.task = server->task_name();
  call.address = server->address();
  call.key = key;
  // A receiver with the cluster's token pulls over UCX; one with another token cannot even use
  // the task's address (its tag is the token's) and is sent to its fallback.
  int64_t step = 0;
  for (const std::string token : {"s3cret", "wrong"}) {
    call.step_id = ++step;
    ASSERT_TRUE(test::SendOnTask0(client.get(), server->incarnation(), Tensor::Scalar<int32_t>(3),
                                  call.step_id)
                    .ok());
    auto plane = NewDataPlane("ucx", {"/job:worker/replica:0/task:1", token}, cache,
                              std::make_unique<MarkerTransport>());
    ASSERT_TRUE(plane.ok()) << plane.status();
    auto got = Pull(plane->get(), call);
    if (token == "s3cret") {
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->scalar<int32_t>(), 3);
    } else {
      EXPECT_TRUE(absl::StrContains(got.status().message(), "fallback")) << got.status();
    }
  }
  // A hand-made peer that has the address: requests without the token, or with another, are
  // answered UNAUTHENTICATED; with it, the tensor comes.
  GetStatusResponse status;
  server->worker()->GetStatus(&status);
  auto unwrapped = UnwrapUcxAddress(status.data_plane_address(), "s3cret");
  ASSERT_TRUE(unwrapped.ok()) << unwrapped.status();
  RawPeer peer;
  ucp_ep_h ep = peer.Connect(*unwrapped);
  ASSERT_TRUE(
      test::SendOnTask0(client.get(), server->incarnation(), Tensor::Scalar<int32_t>(4), 10).ok());
  uint64_t id = 0;
  for (const std::string token : {"", "s3creT", "s3cret"}) {
    RequestHeader h{++id, 10, static_cast<uint32_t>(token.size()), 0};
    peer.Send(ep, kRequestAm, Bytes(&h, sizeof(h)) + token, key, UCP_AM_SEND_FLAG_REPLY);
    ASSERT_TRUE(peer.WaitReplies(id));
    const RawPeer::Reply r = peer.replies().back();
    EXPECT_EQ(r.header.id, id);
    EXPECT_EQ(r.header.code,
              token == "s3cret" ? 0 : static_cast<int32_t>(absl::StatusCode::kUnauthenticated))
        << "token '" << token << "'";
  }
}

TEST(UcxWireTest, BrokenUcxEnvironmentVariablesAreNamedInTheError) {
  for (const auto& [name, value] :
       std::vector<std::pair<const char*, const char*>>{{"SHARDFLOW_UCX_SPIN_US", "fast"},
                                                        {"SHARDFLOW_UCX_SPIN_US", "-5"},
                                                        {"SHARDFLOW_UCX_SPIN_US", "99999999"},
                                                        {"SHARDFLOW_UCX_PEER_FAILURE", "often"}}) {
    setenv(name, value, 1);
    auto plane = NewDataPlane("ucx", {"/job:worker/replica:0/task:1"}, nullptr, nullptr);
    unsetenv(name);
    ASSERT_FALSE(plane.ok()) << name << "=" << value;
    EXPECT_EQ(plane.status().code(), absl::StatusCode::kInvalidArgument) << plane.status();
    EXPECT_TRUE(absl::StrContains(plane.status().message(), name)) << plane.status();
  }
}

TEST(UcxWireTest, UcxIsRefusedWithTls) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.transport = "ucx";
  options.security.tls_cert_file = "/nonexistent/cert.pem";
  options.security.tls_key_file = "/nonexistent/key.pem";
  auto server = Server::Create(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(absl::StrContains(server.status().message(), "cannot encrypt")) << server.status();
}

// A transport that counts the pulls it is given, passing them on (those to TEST-NET-3, which
// nothing answers, fail at once).
class CountingTransport final : public TensorTransport {
 public:
  explicit CountingTransport(std::unique_ptr<TensorTransport> inner) : inner_(std::move(inner)) {}
  void RecvTensorAsync(const RecvTensorCall& call, CallCancellation* cancel,
                       RecvDone done) override {
    ++*count_;
    if (absl::StartsWith(call.address, "203.0.113.")) {
      done(absl::UnavailableError("TEST-NET-3"), Tensor());
      return;
    }
    inner_->RecvTensorAsync(call, cancel, std::move(done));
  }
  std::shared_ptr<std::atomic<int>> count() const { return count_; }

 private:
  std::unique_ptr<TensorTransport> inner_;
  std::shared_ptr<std::atomic<int>> count_ = std::make_shared<std::atomic<int>>(0);
};

// Note [Same-host data plane]: transport "auto" serves UCX, and its data plane pulls from a peer
// on this host over UCX and from a peer elsewhere over the fallback, without asking it.
TEST(UcxWireTest, AutoPullsFromThisHostOverUcxAndFromOtherHostsOverGrpc) {
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.config.set_inter_op_threads(2);
  ASSERT_EQ(options.transport, "auto");  // the default
  auto server = Server::Create(options);
  ASSERT_TRUE(server.ok()) << server.status();
  GetStatusResponse status;
  (*server)->worker()->GetStatus(&status);
  EXPECT_EQ(status.data_plane(), "ucx");

  auto cache = std::make_shared<GrpcWorkerCache>(GrpcClientOptions());
  auto fallback = std::make_unique<CountingTransport>(cache->NewTransport());
  std::shared_ptr<std::atomic<int>> fallback_pulls = fallback->count();
  DataPlaneOptions plane_options{"/job:worker/replica:0/task:1"};
  plane_options.same_host_only = true;
  auto plane = NewDataPlane("ucx", plane_options, cache, std::move(fallback));
  ASSERT_TRUE(plane.ok()) << plane.status();
  auto client = *cache->GetClient((*server)->address(), (*server)->task_name());
  RecvTensorCall call;
  call.task = (*server)->task_name();
  call.address = (*server)->address();
  call.key = RendezvousKey(kTask0Cpu, (*server)->incarnation(), kTask1Cpu, "t:0");
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_TRUE(test::SendOnTask0(client.get(), (*server)->incarnation(),
                                  Tensor::Scalar<int32_t>(static_cast<int32_t>(step)), step)
                    .ok());
    call.step_id = step;
    auto got = Pull(plane->get(), call);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->scalar<int32_t>(), step);
  }
  EXPECT_EQ(fallback_pulls->load(), 0) << "a pull from this host's task went over gRPC";

  // A task at an address of no interface here (TEST-NET-3) is another host: its pulls go to the
  // fallback at once, and nobody asked it for a UCX address (GetStatus would hang on it).
  call.task = "/job:worker/replica:0/task:2";
  call.address = "203.0.113.77:2222";
  call.step_id = 4;
  for (int i = 1; i <= 2; ++i) {
    auto got = Pull(plane->get(), call);
    EXPECT_EQ(got.status().message(), "TEST-NET-3");
    EXPECT_EQ(fallback_pulls->load(), i);
  }
}

#else

TEST(UcxWireTest, SkippedWithoutUcx) { GTEST_SKIP() << "shardflow was built without UCX"; }

#endif  // SHARDFLOW_HAVE_UCX

}  // namespace
}  // namespace shardflow
