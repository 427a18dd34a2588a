#include "distributed/grpc/grpc_worker_service.h"

#include <atomic>
#include <functional>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "distributed/grpc/grpc_security.h"
#include "distributed/grpc/grpc_status.h"
#include "distributed/grpc/tensor_coding.h"
#include "distributed/remote_rendezvous.h"
#include "grpcpp/support/byte_buffer.h"

namespace shardflow {
namespace {

// One event of one call on a completion queue.
class Call;
struct CallTag {
  Call* call;
  int event;
};
enum Event { kRequested = 0, kFinished = 1, kDone = 2 };

class Call {
 public:
  virtual ~Call() = default;
  virtual void OnEvent(int event, bool ok) = 0;
};

// One unary call: requested, handled (possibly asynchronously), finished. Deleted after both
// its Finish and its done notification (cancellation detection) have come back, or at once
// when the request was never matched (server shutdown).
//
// Every method is raw on the wire: the call parses the request itself (after the token check),
// so bytes that are not the method's message get INVALID_ARGUMENT naming the method, not gRPC's
// INTERNAL "Unable to parse request". A Response of grpc::ByteBuffer is sent as it is (the
// RecvTensor reply); any other is serialized.
template <class Request, class Response>
class UnaryCall final : public Call {
 public:
  using RequestFn = std::function<void(grpc::ServerContext*, grpc::ByteBuffer*,
                                       grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>*,
                                       grpc::ServerCompletionQueue*, void*)>;
  using Handler = std::function<void(UnaryCall*)>;

  // Posts a request for the next call of method `method` on `cq`.
  static void Post(GrpcWorkerService* service, grpc::ServerCompletionQueue* cq, const char* method,
                   RequestFn request, Handler handler) {
    auto* call = new UnaryCall(service, cq, method, std::move(request), std::move(handler));
    call->context_.AsyncNotifyWhenDone(&call->done_tag_);
    call->request_fn_(&call->context_, &call->raw_request_, &call->responder_, cq,
                      &call->requested_tag_);
  }

  void OnEvent(int event, bool ok) override {
    switch (event) {
      case kRequested: {
        if (!ok) {  // the server is shutting down; no done notification will come
          delete this;
          return;
        }
        if (service_->accepting()) {
          Post(service_, cq_, method_, request_fn_, handler_);  // keep one posted
        }
        grpc::Status auth = CheckBearerToken(context_, service_->token());
        if (!auth.ok()) {
          Finish(auth);
          return;
        }
        if (!ParseRequest()) return;
        handler_(this);
        return;
      }
      case kFinished:
      case kDone:
        if (event == kDone && context_.IsCancelled()) {
          std::function<void()> on_cancel = std::move(on_cancel_);
          if (on_cancel) on_cancel();
        }
        if (refs_.fetch_sub(1) == 1) delete this;
        return;
    }
  }

  // Sends the reply (the response when `status` is OK). Callable from any thread, once.
  void Finish(const grpc::Status& status) {
    if (!status.ok()) {
      responder_.FinishWithError(status, &finished_tag_);
      return;
    }
    if constexpr (std::is_same_v<Response, grpc::ByteBuffer>) {
      responder_.Finish(response_, status, &finished_tag_);
    } else {
      bool own_buffer = false;
      grpc::Status serialized =
          grpc::SerializationTraits<Response>::Serialize(response_, &raw_response_, &own_buffer);
      if (!serialized.ok()) {
        responder_.FinishWithError(serialized, &finished_tag_);
        return;
      }
      responder_.Finish(raw_response_, status, &finished_tag_);
    }
  }
  void Finish(const absl::Status& status) { Finish(ToGrpcStatus(status)); }

  const Request& request() const { return request_; }
  Response* response() { return &response_; }
  Worker* worker() const { return service_->worker(); }
  // Runs on this thread of the queue if the client cancels the call (or its deadline passes)
  // before the reply reached it. Set only from the handler.
  void set_on_cancel(std::function<void()> fn) { on_cancel_ = std::move(fn); }

 private:
  UnaryCall(GrpcWorkerService* service, grpc::ServerCompletionQueue* cq, const char* method,
            RequestFn request, Handler handler)
      : service_(service),
        cq_(cq),
        method_(method),
        request_fn_(std::move(request)),
        handler_(std::move(handler)),
        responder_(&context_) {}

  // Parses raw_request_ into request_; on failure finishes the call and returns false.
  bool ParseRequest() {
    grpc::ByteBuffer copy(raw_request_);  // shares the slices; Deserialize consumes its argument
    if (!copy.Valid() || grpc::SerializationTraits<Request>::Deserialize(&copy, &request_).ok()) {
      return true;
    }
    Finish(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("WorkerService.", method_, ": the ", raw_request_.Length(),
                     "-byte request is not a ", request_.GetTypeName(),
                     " (a client built from another worker.proto, or not a shardflow client?)")));
    return false;
  }

  GrpcWorkerService* const service_;
  grpc::ServerCompletionQueue* const cq_;
  const char* const method_;
  const RequestFn request_fn_;
  const Handler handler_;
  grpc::ServerContext context_;
  grpc::ByteBuffer raw_request_;
  grpc::ByteBuffer raw_response_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> responder_;
  CallTag requested_tag_{this, kRequested};
  CallTag finished_tag_{this, kFinished};
  CallTag done_tag_{this, kDone};
  std::atomic<int> refs_{2};  // the finished and the done events
  std::function<void()> on_cancel_;
};

absl::Status CancelledByClient(const std::string& what, int64_t step_id, const std::string& task) {
  return absl::CancelledError(absl::StrCat(what, " of step ", step_id, " on task ", task,
                                           " was cancelled by its caller (or its deadline "
                                           "passed); the step is aborted here"));
}

}  // namespace

GrpcWorkerService::GrpcWorkerService(Worker* worker, std::string token,
                                     absl::Duration transfer_idle_timeout)
    : worker_(worker), token_(std::move(token)), ranged_(worker, transfer_idle_timeout) {
  worker_->SetAbortListener(
      [this](int64_t step_id, const absl::Status& status) { ranged_.DropStep(step_id, status); });
}

GrpcWorkerService::~GrpcWorkerService() {
  Shutdown();
  worker_->SetAbortListener(nullptr);
}

void GrpcWorkerService::AddCompletionQueues(grpc::ServerBuilder* builder, int num_threads) {
  for (int i = 0; i < std::max(1, num_threads); ++i) cqs_.push_back(builder->AddCompletionQueue());
}

void GrpcWorkerService::Start() {
  started_ = true;
  for (auto& cq : cqs_) {
    PostRequests(cq.get());
    threads_.emplace_back([this, q = cq.get()] { Poll(q); });
  }
}

void GrpcWorkerService::Poll(grpc::ServerCompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) {
    auto* t = static_cast<CallTag*>(tag);
    t->call->OnEvent(t->event, ok);
  }
}

void GrpcWorkerService::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& cq : cqs_) cq->Shutdown();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void GrpcWorkerService::PostRequests(grpc::ServerCompletionQueue* cq) {
  AsyncService* s = &service_;
  using GetStatusCall = UnaryCall<GetStatusRequest, GetStatusResponse>;
  GetStatusCall::Post(
      this, cq, "GetStatus",
      [s](auto* ctx, auto* req, auto* resp, auto* q, void* tag) {
        s->RequestGetStatus(ctx, req, resp, q, q, tag);
      },
      [](GetStatusCall* call) {
        call->worker()->GetStatus(call->response());
        call->Finish(grpc::Status::OK);
      });

  using RegisterCall = UnaryCall<RegisterGraphRequest, RegisterGraphResponse>;
  RegisterCall::Post(
      this, cq, "RegisterGraph",
      [s](auto* ctx, auto* req, auto* resp, auto* q, void* tag) {
        s->RequestRegisterGraph(ctx, req, resp, q, q, tag);
      },
      [](RegisterCall* call) {
        call->Finish(call->worker()->RegisterGraph(call->request(), call->response()));
      });

  using RunCall = UnaryCall<RunGraphRequest, RunGraphResponse>;
  RunCall::Post(
      this, cq, "RunGraph",
      [s](auto* ctx, auto* req, auto* resp, auto* q, void* tag) {
        s->RequestRunGraph(ctx, req, resp, q, q, tag);
      },
      [](RunCall* call) {
        Worker* worker = call->worker();
        const int64_t step_id = call->request().step_id();
        call->set_on_cancel([worker, step_id] {
          worker->AbortStep(step_id, CancelledByClient("RunGraph", step_id, worker->task()));
        });
        worker->RunGraphAsync(&call->request(), call->response(),
                              [call](const absl::Status& status) { call->Finish(status); });
      });

  using RecvCall = UnaryCall<RecvTensorRequest, grpc::ByteBuffer>;
  RangedRecvTensorServer* ranged = &ranged_;
  RecvCall::Post(
      this, cq, "RecvTensor",
      [s](auto* ctx, auto* req, auto* resp, auto* q, void* tag) {
        s->RequestRecvTensor(ctx, req, resp, q, q, tag);
      },
      [ranged](RecvCall* call) {
        const RecvTensorRequest& request = call->request();
        if (request.rendezvous_key().empty()) {
          call->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                    "WorkerService.RecvTensor: the request has no rendezvous_key"));
          return;
        }
        Worker* worker = call->worker();
        const int64_t step_id = request.step_id();
        // The puller is the key's destination: name its task, the likely cause (it died, or
        // its step ended), rather than only this task.
        auto parsed = ParseRendezvousKey(request.rendezvous_key());
        std::string puller;
        if (parsed.ok()) {
          auto dst = DeviceName::Parse(parsed->dst_device);
          if (dst.ok()) puller = dst->TaskName();
        }
        call->set_on_cancel([worker, step_id, puller] {
          absl::Status s = CancelledByClient("RecvTensor", step_id, worker->task());
          if (!puller.empty()) {
            s = absl::UnavailableError(
                absl::StrCat("task ", puller, " stopped pulling a tensor of step ", step_id,
                             " from task ", worker->task(),
                             " (it died, lost its connection or ended the step); the step is "
                             "aborted here"));
          }
          worker->AbortStep(step_id, s);
        });
        // When the tensor is already there this runs inline, on this queue's thread: the
        // reply is written without another thread hop (the small-tensor round trip).
        ranged->Serve(step_id, request.rendezvous_key(), {request.offset(), request.length()},
                      [call](const absl::Status& status, const Tensor& tensor,
                             const RangedRecvTensorServer::ByteRange& range) {
                        if (status.ok()) {
                          *call->response() =
                              range.length == 0
                                  ? EncodeTensor(tensor)
                                  : EncodeTensorRange(tensor, range.offset, range.length);
                        }
                        call->Finish(status);
                      });
      });

  using CleanupCall = UnaryCall<CleanupGraphRequest, CleanupGraphResponse>;
  CleanupCall::Post(
      this, cq, "CleanupGraph",
      [s](auto* ctx, auto* req, auto* resp, auto* q, void* tag) {
        s->RequestCleanupGraph(ctx, req, resp, q, q, tag);
      },
      [](CleanupCall* call) {
        call->Finish(call->worker()->CleanupGraph(call->request().graph_handle()));
      });

  using ResetCall = UnaryCall<ResetResourcesRequest, ResetResourcesResponse>;
  ResetCall::Post(
      this, cq, "ResetResources",
      [s](auto* ctx, auto* req, auto* resp, auto* q, void* tag) {
        s->RequestResetResources(ctx, req, resp, q, q, tag);
      },
      [](ResetCall* call) {
        const auto& names = call->request().container();
        call->Finish(call->worker()->ResetResources({names.begin(), names.end()}));
      });

  using AbortCall = UnaryCall<AbortStepRequest, AbortStepResponse>;
  AbortCall::Post(
      this, cq, "AbortStep",
      [s](auto* ctx, auto* req, auto* resp, auto* q, void* tag) {
        s->RequestAbortStep(ctx, req, resp, q, q, tag);
      },
      [](AbortCall* call) {
        const AbortStepRequest& r = call->request();
        absl::Status status(static_cast<absl::StatusCode>(r.code()), r.message());
        if (r.code() == 0 || r.code() < 0 || r.code() > 16) {
          status =
              absl::AbortedError(r.message().empty() ? "step aborted by the master" : r.message());
        }
        call->worker()->AbortStep(r.step_id(), status);
        call->Finish(grpc::Status::OK);
      });
}

}  // namespace shardflow
