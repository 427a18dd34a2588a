// GrpcMasterService: MasterService over gRPC's callback API, for one Master.
//
//   auto master = Master::Create(options);
//   GrpcMasterService service(*master, token);
//   server_options.extra_services.push_back(&service);   // hosted by a task's Server
//
// Handlers return at once; the master's work (placement, registration, a step) runs on the
// service's own pool of `num_threads` threads, so the RPC layer's threads never block and the
// thread budget is fixed. Every call is checked against the token first.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_GRPC_MASTER_SERVICE_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_GRPC_MASTER_SERVICE_H_

#include <memory>
#include <string>

#include "core/platform/threadpool.h"
#include "core/protos/master.grpc.pb.h"
#include "distributed/master.h"

namespace shardflow {

class GrpcMasterService final : public MasterService::CallbackService {
 public:
  GrpcMasterService(std::shared_ptr<Master> master, std::string token, int num_threads = 4);

  grpc::ServerUnaryReactor* CreateSession(grpc::CallbackServerContext* context,
                                          const CreateSessionRequest* request,
                                          CreateSessionResponse* response) override;
  grpc::ServerUnaryReactor* ExtendSession(grpc::CallbackServerContext* context,
                                          const ExtendSessionRequest* request,
                                          ExtendSessionResponse* response) override;
  grpc::ServerUnaryReactor* RunStep(grpc::CallbackServerContext* context,
                                    const RunStepRequest* request,
                                    RunStepResponse* response) override;
  grpc::ServerUnaryReactor* CloseSession(grpc::CallbackServerContext* context,
                                         const CloseSessionRequest* request,
                                         CloseSessionResponse* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const ListDevicesRequest* request,
                                        ListDevicesResponse* response) override;

 private:
  grpc::ServerUnaryReactor* Dispatch(grpc::CallbackServerContext* context,
                                     std::function<absl::Status()> work);

  const std::shared_ptr<Master> master_;
  const std::string token_;
  ThreadPool pool_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_GRPC_MASTER_SERVICE_H_
