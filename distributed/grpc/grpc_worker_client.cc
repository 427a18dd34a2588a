#include "distributed/grpc/grpc_worker_client.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "distributed/grpc/grpc_status.h"
#include "distributed/grpc/tensor_coding.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"

namespace shardflow {
namespace {

constexpr char kRecvTensorMethod[] = "/shardflow.WorkerService/RecvTensor";

std::shared_ptr<grpc::ClientContext> NewContext(const GrpcClientOptions& options,
                                                int64_t timeout_ms) {
  auto context = std::make_shared<grpc::ClientContext>();
  if (timeout_ms > 0) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  }
  AddBearerToken(context.get(), options.security.token);
  return context;
}

// One call in flight on a GrpcClientQueue: finished by the queue's thread, which runs `done`
// and deletes it (the ClientContext is released outside gRPC's own callbacks).
template <typename Response>
struct QueuedCall final : GrpcClientQueue::Call {
  std::shared_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  Response* response = nullptr;
  grpc::Status status;
  CallCancellation* cancel = nullptr;
  std::function<void(const grpc::Status&)> done;
  void OnDone(bool ok) override {
    if (cancel != nullptr) cancel->ClearCancelHook();
    if (!ok && status.ok()) status = grpc::Status(grpc::StatusCode::UNKNOWN, "call failed");
    done(status);
    delete this;
  }
};

// Starts `prepare(context, cq)`'s call; `done` runs on the queue's thread.
template <typename Response, typename Prepare>
void StartCall(GrpcClientQueue* queue, std::shared_ptr<grpc::ClientContext> context,
               Prepare prepare, Response* response, CallCancellation* cancel,
               std::function<void(const grpc::Status&)> done) {
  auto* call = new QueuedCall<Response>();
  call->context = std::move(context);
  call->response = response;
  call->cancel = cancel;
  call->done = std::move(done);
  if (cancel != nullptr) {
    cancel->SetCancelHook([context = call->context] { context->TryCancel(); });
  }
  call->reader = prepare(call->context.get(), queue->cq());
  call->reader->StartCall();
  call->reader->Finish(response, &call->status, static_cast<GrpcClientQueue::Call*>(call));
}

}  // namespace

// Note [HTTP/2 flow control for tensors]
// With gRPC's defaults, back-to-back 64 MB RecvTensors on loopback took 28-31 ms; gRPC's BDP
// estimator sizes each stream's receive window to the (tiny) bandwidth-delay product it measures
// on loopback, so the sender keeps stopping for WINDOW_UPDATEs. A fixed 8 MB window (lookahead
// bytes with BDP probing off; a larger lookahead alone changes nothing, the estimator overrides
// it) and 16 MB frames (the HTTP/2 maximum) bring them to 18 ms with 20% less CPU. Measured side
// by side in one binary (docs/distributed.md, "Measured transfer speed"): 4, 8, 16 and 32 MB
// windows do alike, TCP read chunk sizes and the write buffer size make no difference, 4 B round
// trips are unchanged. 8 MB is what one stream may have in flight before its reader drains it:
// enough for 10 Gb/s up to ~6 ms round trips.
const std::vector<std::pair<std::string, int>>& TransferChannelArguments() {
  static const auto* args = new std::vector<std::pair<std::string, int>>{
      {GRPC_ARG_HTTP2_BDP_PROBE, 0},
      {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20},
      {GRPC_ARG_HTTP2_MAX_FRAME_SIZE, (16 << 20) - 1},
  };
  return *args;
}

grpc::ChannelArguments WorkerChannelArguments(const GrpcClientOptions& options) {
  grpc::ChannelArguments args;
  for (const auto& [name, value] : TransferChannelArguments()) args.SetInt(name, value);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A restarted task is reconnected to within a second, not after gRPC's default backoff.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Each address gets its own connection, not one shared with other channels of the process.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (!options.security.tls_server_name_override.empty()) {
    args.SetSslTargetNameOverride(options.security.tls_server_name_override);
  }
  return args;
}

GrpcWorkerClient::GrpcWorkerClient(std::string address, std::string task,
                                   std::shared_ptr<grpc::Channel> channel,
                                   GrpcClientOptions options,
                                   std::shared_ptr<GrpcClientQueue> queue)
    : address_(std::move(address)),
      task_(std::move(task)),
      channel_(std::move(channel)),
      options_(std::move(options)),
      queue_(queue != nullptr ? std::move(queue) : std::make_shared<GrpcClientQueue>()),
      stub_(WorkerService::NewStub(channel_)),
      generic_(channel_) {}

absl::Status GrpcWorkerClient::Annotate(const char* method, const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  std::string who = task_.empty() ? absl::StrCat("worker at ", address_)
                                  : absl::StrCat("task ", task_, " at ", address_);
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(who, ": ", method, " failed: ", status.error_message()));
}

template <typename Request, typename Response, typename Method>
void GrpcWorkerClient::CallAsync(const char* name, Method method, const Request* request,
                                 Response* response, int64_t timeout_ms, CallCancellation* cancel,
                                 StatusCallback done) {
  StartCall<Response>(
      queue_.get(), NewContext(options_, timeout_ms),
      [&](grpc::ClientContext* c, grpc::CompletionQueue* cq) { return method(c, *request, cq); },
      response, cancel,
      [this, name, done = std::move(done)](const grpc::Status& s) { done(Annotate(name, s)); });
}

#define SF_WORKER_METHOD(Name)                                                 \
  [this](grpc::ClientContext* c, const auto& req, grpc::CompletionQueue* cq) { \
    return stub_->PrepareAsync##Name(c, req, cq);                              \
  }

void GrpcWorkerClient::GetStatusAsync(GetStatusResponse* response, StatusCallback done) {
  auto request = std::make_shared<GetStatusRequest>();
  CallAsync("GetStatus", SF_WORKER_METHOD(GetStatus), request.get(), response,
            options_.control_timeout_ms, nullptr,
            [request, done = std::move(done)](const absl::Status& s) { done(s); });
}

void GrpcWorkerClient::RegisterGraphAsync(const RegisterGraphRequest* request,
                                          RegisterGraphResponse* response, StatusCallback done) {
  CallAsync("RegisterGraph", SF_WORKER_METHOD(RegisterGraph), request, response,
            options_.control_timeout_ms, nullptr, std::move(done));
}

void GrpcWorkerClient::RunGraphAsync(const RunGraphRequest* request, RunGraphResponse* response,
                                     int64_t timeout_ms, CallCancellation* cancel,
                                     StatusCallback done) {
  CallAsync("RunGraph", SF_WORKER_METHOD(RunGraph), request, response, timeout_ms, cancel,
            std::move(done));
}

void GrpcWorkerClient::AbortStepAsync(int64_t step_id, const absl::Status& status,
                                      StatusCallback done) {
  auto request = std::make_shared<AbortStepRequest>();
  auto response = std::make_shared<AbortStepResponse>();
  request->set_step_id(step_id);
  request->set_code(static_cast<int>(status.code()));
  request->set_message(std::string(status.message()));
  CallAsync("AbortStep", SF_WORKER_METHOD(AbortStep), request.get(), response.get(),
            options_.control_timeout_ms, nullptr,
            [request, response, done = std::move(done)](const absl::Status& s) { done(s); });
}

namespace {
// Waits for an async call.
template <typename Start>
absl::Status Wait(Start start) {
  absl::Notification finished;
  absl::Status result;
  start([&](const absl::Status& s) {
    result = s;
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}
}  // namespace

absl::Status GrpcWorkerClient::GetStatus(GetStatusResponse* response) {
  return Wait([&](StatusCallback done) { GetStatusAsync(response, std::move(done)); });
}

absl::Status GrpcWorkerClient::RegisterGraph(const RegisterGraphRequest& request,
                                             RegisterGraphResponse* response) {
  return Wait(
      [&](StatusCallback done) { RegisterGraphAsync(&request, response, std::move(done)); });
}

absl::Status GrpcWorkerClient::RunGraph(const RunGraphRequest& request, RunGraphResponse* response,
                                        int64_t timeout_ms) {
  return Wait([&](StatusCallback done) {
    RunGraphAsync(&request, response, timeout_ms, nullptr, std::move(done));
  });
}

absl::Status GrpcWorkerClient::CleanupGraph(const std::string& graph_handle) {
  CleanupGraphRequest request;
  CleanupGraphResponse response;
  request.set_graph_handle(graph_handle);
  return Wait([&](StatusCallback done) {
    CallAsync("CleanupGraph", SF_WORKER_METHOD(CleanupGraph), &request, &response,
              options_.control_timeout_ms, nullptr, std::move(done));
  });
}

#undef SF_WORKER_METHOD

absl::Status GrpcWorkerClient::AbortStep(int64_t step_id, const absl::Status& status) {
  return Wait([&](StatusCallback done) { AbortStepAsync(step_id, status, std::move(done)); });
}

void GrpcWorkerClient::RecvTensorAsync(int64_t step_id, const std::string& key,
                                       Allocator* allocator, CallCancellation* cancel,
                                       TensorCallback done) {
  RecvTensorRequest request;
  request.set_step_id(step_id);
  request.set_rendezvous_key(key);
  std::string bytes = request.SerializeAsString();
  grpc::Slice slice(bytes);
  auto request_buffer = std::make_shared<grpc::ByteBuffer>(&slice, 1);
  auto response = std::make_shared<grpc::ByteBuffer>();
  StartCall<grpc::ByteBuffer>(
      queue_.get(), NewContext(options_, 0),
      [&](grpc::ClientContext* c, grpc::CompletionQueue* cq) {
        return generic_.PrepareUnaryCall(c, kRecvTensorMethod, *request_buffer, cq);
      },
      response.get(), cancel,
      [this, response, key, step_id, allocator, done = std::move(done)](const grpc::Status& s) {
        if (!s.ok()) {
          done(Annotate("RecvTensor", s), Tensor());
          return;
        }
        auto tensor = DecodeTensor(*response, allocator);
        if (!tensor.ok()) {
          done(absl::Status(
                   tensor.status().code(),
                   absl::StrCat("RecvTensor of '", key, "' (step ", step_id, ") from ",
                                task_.empty() ? address_ : task_, ": ", tensor.status().message())),
               Tensor());
          return;
        }
        done(absl::OkStatus(), std::move(tensor).value());
      });
}

GrpcClientQueue::GrpcClientQueue() {
  thread_ = std::thread([this] {
    void* tag = nullptr;
    bool ok = false;
    while (cq_.Next(&tag, &ok)) static_cast<Call*>(tag)->OnDone(ok);
  });
}

GrpcClientQueue::~GrpcClientQueue() {
  cq_.Shutdown();
  thread_.join();
}

GrpcWorkerCache::GrpcWorkerCache(GrpcClientOptions options)
    : options_(std::move(options)), queue_(std::make_shared<GrpcClientQueue>()) {}

absl::StatusOr<std::shared_ptr<GrpcWorkerClient>> GrpcWorkerCache::GetClient(
    const std::string& address, const std::string& task) {
  absl::MutexLock lock(&mu_);
  auto it = clients_.find(address);
  if (it != clients_.end()) return it->second;
  auto credentials = MakeChannelCredentials(options_.security, address);
  if (!credentials.ok()) return credentials.status();
  auto channel = grpc::CreateCustomChannel(address, *credentials, WorkerChannelArguments(options_));
  auto client = std::make_shared<GrpcWorkerClient>(address, task, channel, options_, queue_);
  clients_[address] = client;
  return client;
}

GrpcTensorTransport::GrpcTensorTransport(std::shared_ptr<GrpcWorkerCache> cache)
    : cache_(std::move(cache)) {}

void GrpcTensorTransport::RecvTensorAsync(const RecvTensorCall& call, CallCancellation* cancel,
                                          RecvDone done) {
  auto client = cache_->GetClient(call.address, call.task);
  if (!client.ok()) {
    done(client.status(), Tensor());
    return;
  }
  (*client)->RecvTensorAsync(call.step_id, call.key, call.allocator, cancel, std::move(done));
}

}  // namespace shardflow
