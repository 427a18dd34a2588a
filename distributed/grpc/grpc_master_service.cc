#include "distributed/grpc/grpc_master_service.h"

#include "distributed/grpc/grpc_security.h"
#include "distributed/grpc/grpc_status.h"

namespace shardflow {

GrpcMasterService::GrpcMasterService(std::shared_ptr<Master> master, std::string token,
                                     int num_threads)
    : master_(std::move(master)), token_(std::move(token)), pool_("master", num_threads) {}

grpc::ServerUnaryReactor* GrpcMasterService::Dispatch(grpc::CallbackServerContext* context,
                                                      std::function<absl::Status()> work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  grpc::Status auth = CheckBearerToken(*context, token_);
  if (!auth.ok()) {
    reactor->Finish(auth);
    return reactor;
  }
  pool_.Schedule([reactor, work = std::move(work)] { reactor->Finish(ToGrpcStatus(work())); });
  return reactor;
}

grpc::ServerUnaryReactor* GrpcMasterService::CreateSession(grpc::CallbackServerContext* context,
                                                           const CreateSessionRequest* request,
                                                           CreateSessionResponse* response) {
  return Dispatch(context, [this, request, response]() -> absl::Status {
    auto handle = master_->CreateSession(request->graph_def(), request->config());
    if (!handle.ok()) return handle.status();
    response->set_session_handle(*handle);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* GrpcMasterService::ExtendSession(grpc::CallbackServerContext* context,
                                                           const ExtendSessionRequest* request,
                                                           ExtendSessionResponse* response) {
  return Dispatch(context, [this, request] {
    return master_->ExtendSession(request->session_handle(), request->graph_def());
  });
}

grpc::ServerUnaryReactor* GrpcMasterService::RunStep(grpc::CallbackServerContext* context,
                                                     const RunStepRequest* request,
                                                     RunStepResponse* response) {
  return Dispatch(context, [this, request, response]() -> absl::Status {
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (const NamedTensor& f : request->feeds()) {
      auto t = Tensor::FromProto(f.tensor());
      if (!t.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("feed '", f.name(), "' is not a valid tensor: ", t.status().message()));
      }
      feeds.emplace_back(f.name(), std::move(*t));
    }
    std::vector<std::string> fetches(request->fetches().begin(), request->fetches().end());
    std::vector<std::string> targets(request->targets().begin(), request->targets().end());
    std::vector<Tensor> outputs;
    absl::Status s = master_->RunStep(request->session_handle(), request->options(), feeds, fetches,
                                      targets, &outputs, response->mutable_metadata());
    if (!s.ok()) return s;
    for (const Tensor& t : outputs) t.AsProto(response->add_tensors());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* GrpcMasterService::CloseSession(grpc::CallbackServerContext* context,
                                                          const CloseSessionRequest* request,
                                                          CloseSessionResponse* response) {
  return Dispatch(context,
                  [this, request] { return master_->CloseSession(request->session_handle()); });
}

grpc::ServerUnaryReactor* GrpcMasterService::ListDevices(grpc::CallbackServerContext* context,
                                                         const ListDevicesRequest* request,
                                                         ListDevicesResponse* response) {
  return Dispatch(context, [this, response]() -> absl::Status {
    auto devices = master_->ListDevices();
    if (!devices.ok()) return devices.status();
    for (const DeviceAttributes& d : *devices) {
      WorkerDevice* out = response->add_devices();
      out->set_name(d.name);
      out->set_device_type(d.device_type);
      out->set_memory_limit(d.memory_limit_bytes);
    }
    return absl::OkStatus();
  });
}

}  // namespace shardflow
