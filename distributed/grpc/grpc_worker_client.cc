#include "distributed/grpc/grpc_worker_client.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/platform/status.h"
#include "distributed/grpc/grpc_status.h"
#include "distributed/grpc/tensor_coding.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"

namespace shardflow {
namespace {

// Whether `destination` can take the reply's bytes (RecvArgs::destination).
bool Fits(const Tensor& destination, const RecvTensorReply& reply) {
  return destination.IsInitialized() && reply.dtype() != DT_STRING &&
         destination.dtype() == reply.dtype() && destination.shape() == reply.shape();
}

}  // namespace

namespace {

// A RecvTensor request for [offset, offset + length) of `key` (length 0 = the whole tensor), as
// the raw method sends it.
grpc::ByteBuffer RecvTensorRequestBuffer(int64_t step_id, const std::string& key, int64_t offset,
                                         int64_t length) {
  RecvTensorRequest request;
  request.set_step_id(step_id);
  request.set_rendezvous_key(key);
  request.set_offset(offset);
  request.set_length(length);
  std::string bytes = request.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

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
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // gRPC also takes this as each connection attempt's time limit (the handshake up to the
  // server's SETTINGS frame). At 100 ms a busy server (2 loaded vCPUs, one thread) failed calls
  // with "connection attempt timed out before receiving SETTINGS frame"; a task that is gone
  // refuses the connection at once, so a longer limit does not slow finding that out.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 10000);
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
      queue_(queue != nullptr ? std::move(queue)
                              : std::make_shared<GrpcClientQueue>(options_.queue_threads)),
      stub_(WorkerService::NewStub(channel_)),
      generic_(channel_) {}

absl::Status GrpcWorkerClient::Annotate(const char* method, const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  return WorkerCallError(
      task_, address_, method,
      absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message()));
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

void GrpcWorkerClient::GetStatusAsync(GetStatusResponse* response, StatusCallback done,
                                      int64_t timeout_ms, bool wait_for_ready) {
  auto request = std::make_shared<GetStatusRequest>();
  auto context = NewContext(options_, timeout_ms > 0 ? timeout_ms : options_.control_timeout_ms);
  context->set_wait_for_ready(wait_for_ready);
  StartCall<GetStatusResponse>(
      queue_.get(), std::move(context),
      [&](grpc::ClientContext* c, grpc::CompletionQueue* cq) {
        return stub_->PrepareAsyncGetStatus(c, *request, cq);
      },
      response, nullptr,
      [this, request, done = std::move(done)](const grpc::Status& s) {
        done(Annotate("GetStatus", s));
      });
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
            options_.cleanup_timeout_ms, nullptr,
            [request, response, done = std::move(done)](const absl::Status& s) { done(s); });
}

void GrpcWorkerClient::ResetResourcesAsync(const std::vector<std::string>& containers,
                                           StatusCallback done) {
  auto request = std::make_shared<ResetResourcesRequest>();
  auto response = std::make_shared<ResetResourcesResponse>();
  for (const std::string& c : containers) request->add_container(c);
  CallAsync("ResetResources", SF_WORKER_METHOD(ResetResources), request.get(), response.get(),
            options_.control_timeout_ms, nullptr,
            [request, response, done = std::move(done)](const absl::Status& s) { done(s); });
}

void GrpcWorkerClient::CleanupGraphAsync(const std::string& graph_handle, StatusCallback done) {
  auto request = std::make_shared<CleanupGraphRequest>();
  auto response = std::make_shared<CleanupGraphResponse>();
  request->set_graph_handle(graph_handle);
  CallAsync("CleanupGraph", SF_WORKER_METHOD(CleanupGraph), request.get(), response.get(),
            options_.cleanup_timeout_ms, nullptr,
            [request, response, done = std::move(done)](const absl::Status& s) { done(s); });
}

#undef SF_WORKER_METHOD

// One RecvTensor pulled as byte ranges (Note [Ranged RecvTensor] in distributed/worker.cc). The
// first call (GrpcWorkerClient::RecvTensorAsync) asks for the first recv_chunk_bytes; a reply
// with the whole tensor ends it there (small and string tensors: one call, as before ranges).
// Otherwise this takes over: the reply names the tensor's dtype and shape, the destination is
// allocated, the next ranges are asked for, and every range is copied into the destination
// while the later ones are still on the wire. The first error
// cancels the calls still in flight; `done` runs once, when none is left.
class RangedRecvTensor : public std::enable_shared_from_this<RangedRecvTensor> {
 public:
  RangedRecvTensor(GrpcWorkerClient* client, int64_t step_id, std::string key, Allocator* allocator,
                   CallCancellation* cancel, GrpcWorkerClient::TensorCallback done,
                   Tensor destination)
      : client_(client),
        step_id_(step_id),
        key_(std::move(key)),
        destination_(std::move(destination)),
        allocator_(allocator != nullptr ? allocator : CpuAllocator()),
        cancel_(cancel),
        chunk_bytes_(client->options_.recv_chunk_bytes),
        max_in_flight_(std::max(1, client->options_.recv_ranges_in_flight)),
        done_(std::move(done)) {}

  // Goes on from the reply to the first call (made by GrpcWorkerClient::RecvTensorAsync, which
  // asked for `first_length` bytes at offset 0) when it held only a part of the tensor.
  void Continue(RecvTensorReply first, int64_t first_length) {
    if (cancel_ != nullptr) {
      cancel_->SetCancelHook([self = shared_from_this()] {
        self->Fail(self->client_->Annotate(
            "RecvTensor", grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the caller")));
      });
    }
    Handle(/*id=*/-1, 0, first_length, absl::OkStatus(), std::move(first));
  }

 private:
  // Starts the call for [offset, offset + length); length 0 = the whole tensor.
  void Issue(int64_t offset, int64_t length) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    grpc::ByteBuffer request_buffer = RecvTensorRequestBuffer(step_id_, key_, offset, length);
    auto response = std::make_shared<grpc::ByteBuffer>();
    auto context = NewContext(client_->options_, 0);
    const int id = next_call_++;
    calls_[id] = context;
    ++on_wire_;
    StartCall<grpc::ByteBuffer>(
        client_->queue_.get(), std::move(context),
        [&](grpc::ClientContext* c, grpc::CompletionQueue* cq) {
          return client_->generic_.PrepareUnaryCall(c, kRecvTensorMethod, request_buffer, cq);
        },
        response.get(), nullptr,
        [self = shared_from_this(), id, offset, length, response](const grpc::Status& s) {
          self->OnReply(id, offset, length, s, *response);
        });
  }

  absl::Status Describe(const absl::Status& s) const {
    return absl::Status(
        s.code(), absl::StrCat("RecvTensor of '", key_, "' (step ", step_id_, ") from ",
                               client_->task_.empty() ? client_->address_ : client_->task_, ": ",
                               s.message()));
  }

  void OnReply(int id, int64_t offset, int64_t length, const grpc::Status& grpc_status,
               const grpc::ByteBuffer& buffer) {
    absl::Status status = client_->Annotate("RecvTensor", grpc_status);
    std::optional<RecvTensorReply> reply;
    if (status.ok()) {
      auto parsed = RecvTensorReply::Parse(buffer);
      if (parsed.ok()) {
        reply.emplace(std::move(parsed).value());
      } else {
        status = Describe(parsed.status());
      }
    }
    Handle(id, offset, length, status, std::move(reply));
  }

  // The reply (or error) of the call `id` for [offset, +length); id -1 = the first call, which
  // was not counted in on_wire_.
  void Handle(int id, int64_t offset, int64_t length, absl::Status status,
              std::optional<RecvTensorReply> reply) {
    bool copy = false;
    Tensor dst;
    {
      absl::MutexLock lock(&mu_);
      if (id >= 0) {
        calls_.erase(id);
        --on_wire_;
      }
      if (status.ok() && status_.ok()) {
        if (!started_) {
          started_ = true;
          status = StartRangesLocked(*reply, offset, length);
        } else {
          status = CheckRangeLocked(*reply, offset, length);
        }
        if (status.ok()) {
          copy = true;
          ++copying_;
          dst = dst_;
          // Ask for the next range before copying this one, so that the wire stays busy.
          while (on_wire_ < max_in_flight_ && next_offset_ < total_bytes_) {
            const int64_t n = std::min(chunk_bytes_, total_bytes_ - next_offset_);
            Issue(next_offset_, n);
            next_offset_ += n;
          }
        }
      }
    }
    if (!status.ok()) {
      Fail(status);
    } else if (copy) {
      absl::Status copied = reply->CopyInto(&dst);
      reply.reset();  // gives the received slices back now
      if (!copied.ok()) Fail(Describe(copied));
      absl::MutexLock lock(&mu_);
      --copying_;
      bytes_left_ -= reply_length(offset, length);
    }
    MaybeFinish();
  }

  // The length of the range asked for at `offset` (cut at the tensor's end).
  int64_t reply_length(int64_t offset, int64_t length) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return std::min(length, total_bytes_ - offset);
  }

  // The first reply held only a part: allocates the destination.
  absl::Status StartRangesLocked(const RecvTensorReply& reply, int64_t offset, int64_t length)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    total_bytes_ = reply.total_bytes();
    if (reply.range_offset() != offset || reply.range_length() != reply_length(offset, length)) {
      return Describe(absl::InvalidArgumentError(
          absl::StrCat("asked for bytes [", offset, ", +", length, ") but got [",
                       reply.range_offset(), ", +", reply.range_length(), ")")));
    }
    if (Fits(destination_, reply)) {
      dst_ = destination_;
    } else {
      auto created = Tensor::Create(allocator_, reply.dtype(), reply.shape());
      if (!created.ok()) return Describe(created.status());
      dst_ = std::move(created).value();
    }
    next_offset_ = offset + reply.range_length();
    bytes_left_ = total_bytes_;
    return absl::OkStatus();
  }

  // A later reply must be the range asked for, of the same tensor.
  absl::Status CheckRangeLocked(const RecvTensorReply& reply, int64_t offset, int64_t length)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reply.whole() || reply.dtype() != dst_.dtype() || !(reply.shape() == dst_.shape()) ||
        reply.range_offset() != offset || reply.range_length() != reply_length(offset, length)) {
      return Describe(absl::InvalidArgumentError(absl::StrCat(
          "asked for bytes [", offset, ", +", length, ") of a ", DataTypeString(dst_.dtype()), " ",
          dst_.shape().DebugString(), " but got ",
          reply.whole() ? std::string("a whole tensor")
                        : absl::StrCat("[", reply.range_offset(), ", +", reply.range_length(), ")"),
          " of a ", DataTypeString(reply.dtype()), " ", reply.shape().DebugString())));
    }
    return absl::OkStatus();
  }

  // Records the first error and cancels the calls still in flight.
  void Fail(const absl::Status& status) {
    std::vector<std::shared_ptr<grpc::ClientContext>> contexts;
    {
      absl::MutexLock lock(&mu_);
      if (!status_.ok()) return;
      status_ = status;
      for (auto& [id, context] : calls_) contexts.push_back(context);
    }
    for (auto& context : contexts) context->TryCancel();
  }

  void MaybeFinish() {
    absl::Status status;
    Tensor result;
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || on_wire_ > 0 || copying_ > 0) return;
      if (status_.ok() && bytes_left_ > 0) return;
      finished_ = true;
      status = status_;
      if (status.ok()) result = std::move(dst_);
      dst_ = Tensor();
    }
    if (cancel_ != nullptr) cancel_->ClearCancelHook();  // drops the hook's reference to us
    done_(status, std::move(result));
  }

  GrpcWorkerClient* const client_;
  const int64_t step_id_;
  const std::string key_;
  Tensor destination_;  // may be uninitialized (RecvTensorAsync)
  Allocator* const allocator_;
  CallCancellation* const cancel_;
  const int64_t chunk_bytes_;
  const int max_in_flight_;
  const GrpcWorkerClient::TensorCallback done_;

  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  Tensor dst_ ABSL_GUARDED_BY(mu_);
  int64_t total_bytes_ = 0;  // set once, under mu_, by the first reply
  int64_t next_offset_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_left_ ABSL_GUARDED_BY(mu_) = 1;
  int on_wire_ ABSL_GUARDED_BY(mu_) = 0;
  int copying_ ABSL_GUARDED_BY(mu_) = 0;
  int next_call_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<int, std::shared_ptr<grpc::ClientContext>> calls_ ABSL_GUARDED_BY(mu_);
};

void GrpcWorkerClient::RecvTensorAsync(int64_t step_id, const std::string& key,
                                       Allocator* allocator, CallCancellation* cancel,
                                       TensorCallback done, Tensor destination) {
  // The first call is a plain one, so that a small tensor (the latency path) costs no more than
  // before ranges existed; only a reply holding part of a tensor sets up a RangedRecvTensor.
  const int64_t first_length = std::max<int64_t>(0, options_.recv_chunk_bytes);
  grpc::ByteBuffer request_buffer = RecvTensorRequestBuffer(step_id, key, 0, first_length);
  auto response = std::make_shared<grpc::ByteBuffer>();
  StartCall<grpc::ByteBuffer>(
      queue_.get(), NewContext(options_, 0),
      [&](grpc::ClientContext* c, grpc::CompletionQueue* cq) {
        return generic_.PrepareUnaryCall(c, kRecvTensorMethod, request_buffer, cq);
      },
      response.get(), cancel,
      [this, response, key, step_id, allocator, cancel, first_length,
       destination = std::move(destination), done = std::move(done)](const grpc::Status& s) {
        if (!s.ok()) {
          done(Annotate("RecvTensor", s), Tensor());
          return;
        }
        auto describe = [&](const absl::Status& error) {
          return absl::Status(
              error.code(), absl::StrCat("RecvTensor of '", key, "' (step ", step_id, ") from ",
                                         task_.empty() ? address_ : task_, ": ", error.message()));
        };
        auto reply = RecvTensorReply::Parse(*response);
        if (!reply.ok()) {
          done(describe(reply.status()), Tensor());
          return;
        }
        if (reply->whole() && Fits(destination, *reply)) {
          Tensor into = destination;
          absl::Status copied = reply->CopyInto(&into);
          if (!copied.ok()) {
            done(describe(copied), Tensor());
          } else {
            done(absl::OkStatus(), std::move(into));
          }
          return;
        }
        if (reply->whole()) {
          auto tensor = reply->ToTensor(allocator);
          if (!tensor.ok()) {
            done(describe(tensor.status()), Tensor());
          } else {
            done(absl::OkStatus(), std::move(tensor).value());
          }
          return;
        }
        std::make_shared<RangedRecvTensor>(this, step_id, key, allocator, cancel, done, destination)
            ->Continue(std::move(reply).value(), first_length);
      });
}

GrpcClientQueue::GrpcClientQueue(int num_threads) {
  for (int i = 0; i < std::max(1, num_threads); ++i) {
    threads_.emplace_back([this] {
      void* tag = nullptr;
      bool ok = false;
      while (cq_.Next(&tag, &ok)) static_cast<Call*>(tag)->OnDone(ok);
    });
  }
}

GrpcClientQueue::~GrpcClientQueue() {
  cq_.Shutdown();
  for (auto& t : threads_) t.join();
}

GrpcWorkerCache::GrpcWorkerCache(GrpcClientOptions options)
    : options_(std::move(options)),
      queue_(std::make_shared<GrpcClientQueue>(options_.queue_threads)) {}

absl::StatusOr<std::shared_ptr<WorkerInterface>> GrpcWorkerCache::GetWorker(
    const std::string& address, const std::string& task) {
  SF_ASSIGN_OR_RETURN(std::shared_ptr<GrpcWorkerClient> client, GetClient(address, task));
  return std::shared_ptr<WorkerInterface>(std::move(client));
}

std::unique_ptr<TensorTransport> GrpcWorkerCache::NewTransport() {
  return std::make_unique<GrpcTensorTransport>(shared_from_this());
}

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
  (*client)->RecvTensorAsync(call.step_id, call.key, call.allocator, cancel, std::move(done),
                             call.destination);
}

}  // namespace shardflow
