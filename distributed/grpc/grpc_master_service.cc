#include "distributed/grpc/grpc_master_service.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "distributed/grpc/grpc_security.h"
#include "distributed/grpc/grpc_status.h"

namespace shardflow {

// One call: its reply buffer, its deadline and cancellation for a step, and its end. Deleted
// by gRPC's OnDone, which comes after Finish; OnCancel may come at any time before that, from
// another thread, and cancels the step (if any) that the call started.
class GrpcMasterService::Call final : public grpc::ServerUnaryReactor {
 public:
  Call(grpc::CallbackServerContext* context, grpc::ByteBuffer* response) : response_(response) {
    const auto deadline = context->deadline();
    // gRPC's "no deadline" is the far future; anything within a century is a real one.
    if (deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365 * 100)) {
      step_.deadline = absl::FromChrono(deadline);
    }
  }

  StepCall* step() { return &step_; }

  // Sends `message` when `status` is OK, else the error. Once.
  template <typename Message>
  void Reply(const absl::Status& status, const Message& message) {
    if (!status.ok()) {
      Finish(ToGrpcStatus(status));
      return;
    }
    bool own_buffer = false;
    grpc::Status serialized =
        grpc::SerializationTraits<Message>::Serialize(message, response_, &own_buffer);
    Finish(serialized);
  }
  void Fail(const absl::Status& status) { Finish(ToGrpcStatus(status)); }

  void OnCancel() override { step_.cancellation.Cancel(); }
  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer* const response_;
  StepCall step_;
};

GrpcMasterService::GrpcMasterService(std::shared_ptr<Master> master, std::string token,
                                     int num_threads)
    : master_(std::move(master)), token_(std::move(token)), pool_("master", num_threads) {}

namespace {

// A RunStep reply is one protobuf message, which cannot pass 2 GiB; the fetched tensors are
// checked before they are copied into it (a fetch named many times, or a huge tensor, would
// otherwise be copied until the server ran out of memory).
absl::Status CheckReplySize(const std::vector<Tensor>& outputs) {
  constexpr uint64_t kMaxReplyBytes = (uint64_t{1} << 31) - (uint64_t{1} << 20);
  uint64_t total = 0;
  for (const Tensor& t : outputs) {
    total += t.TotalBytes();
    if (total > kMaxReplyBytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the step's ", outputs.size(),
                       " fetched tensors pass the 2 GiB a RunStep reply can "
                       "hold; fetch fewer or smaller tensors"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

template <typename Request>
grpc::ServerUnaryReactor* GrpcMasterService::Dispatch(
    const char* method, grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response, std::function<void(Call*, const Request&)> work) {
  auto* call = new Call(context, response);
  grpc::Status auth = CheckBearerToken(*context, token_);
  if (!auth.ok()) {
    call->Finish(auth);
    return call;
  }
  auto parsed = std::make_shared<Request>();
  grpc::ByteBuffer copy(*request);  // shares the slices; Deserialize consumes its argument
  if (copy.Valid() && !grpc::SerializationTraits<Request>::Deserialize(&copy, parsed.get()).ok()) {
    call->Fail(absl::InvalidArgumentError(
        absl::StrCat("MasterService.", method, ": the ", request->Length(),
                     "-byte request is not a ", parsed->GetTypeName(),
                     " (a client built from another master.proto, or not a shardflow client?)")));
    return call;
  }
  pool_.Schedule([call, parsed, work = std::move(work)] { work(call, *parsed); });
  return call;
}

grpc::ServerUnaryReactor* GrpcMasterService::CreateSession(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* request,
                                                           grpc::ByteBuffer* response) {
  return Dispatch<CreateSessionRequest>("CreateSession", context, request, response,
                                        [this](Call* call, const CreateSessionRequest& r) {
                                          CreateSessionResponse out;
                                          auto handle =
                                              master_->CreateSession(r.graph_def(), r.config());
                                          if (handle.ok()) out.set_session_handle(*handle);
                                          call->Reply(handle.status(), out);
                                        });
}

grpc::ServerUnaryReactor* GrpcMasterService::ExtendSession(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* request,
                                                           grpc::ByteBuffer* response) {
  return Dispatch<ExtendSessionRequest>(
      "ExtendSession", context, request, response,
      [this](Call* call, const ExtendSessionRequest& r) {
        call->Reply(master_->ExtendSession(r.session_handle(), r.graph_def()),
                    ExtendSessionResponse());
      });
}

grpc::ServerUnaryReactor* GrpcMasterService::RunStep(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  return Dispatch<RunStepRequest>(
      "RunStep", context, request, response, [this](Call* call, const RunStepRequest& r) {
        std::vector<std::pair<std::string, Tensor>> feeds;
        for (const NamedTensor& f : r.feeds()) {
          auto t = Tensor::FromProto(f.tensor());
          if (!t.ok()) {
            call->Fail(absl::InvalidArgumentError(absl::StrCat(
                "feed '", f.name(), "' is not a valid tensor: ", t.status().message())));
            return;
          }
          feeds.emplace_back(f.name(), std::move(t).value());
        }
        std::vector<std::string> fetches(r.fetches().begin(), r.fetches().end());
        std::vector<std::string> targets(r.targets().begin(), r.targets().end());
        struct Result {
          std::vector<Tensor> outputs;
          RunStepResponse response;
        };
        auto result = std::make_shared<Result>();
        master_->RunStepAsync(r.session_handle(), r.options(), std::move(feeds), fetches, targets,
                              &result->outputs, result->response.mutable_metadata(), call->step(),
                              [call, result](absl::Status s) {
                                if (s.ok()) s = CheckReplySize(result->outputs);
                                if (s.ok()) {
                                  for (const Tensor& t : result->outputs) {
                                    t.AsProto(result->response.add_tensors());
                                  }
                                  result->outputs.clear();
                                }
                                call->Reply(s, result->response);
                              });
      });
}

grpc::ServerUnaryReactor* GrpcMasterService::CloseSession(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request,
                                                          grpc::ByteBuffer* response) {
  return Dispatch<CloseSessionRequest>(
      "CloseSession", context, request, response, [this](Call* call, const CloseSessionRequest& r) {
        call->Reply(master_->CloseSession(r.session_handle()), CloseSessionResponse());
      });
}

grpc::ServerUnaryReactor* GrpcMasterService::ListDevices(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  return Dispatch<ListDevicesRequest>("ListDevices", context, request, response,
                                      [this](Call* call, const ListDevicesRequest&) {
                                        ListDevicesResponse out;
                                        auto devices = master_->ListDevices();
                                        if (devices.ok()) {
                                          for (const DeviceAttributes& d : *devices) {
                                            WorkerDevice* w = out.add_devices();
                                            w->set_name(d.name);
                                            w->set_device_type(d.device_type);
                                            w->set_memory_limit(d.memory_limit_bytes);
                                          }
                                        }
                                        call->Reply(devices.status(), out);
                                      });
}

grpc::ServerUnaryReactor* GrpcMasterService::Reset(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  return Dispatch<ResetRequest>(
      "Reset", context, request, response, [this](Call* call, const ResetRequest& r) {
        call->Reply(master_->Reset({r.container().begin(), r.container().end()},
                                   {r.device_filters().begin(), r.device_filters().end()}),
                    ResetResponse());
      });
}

}  // namespace shardflow
