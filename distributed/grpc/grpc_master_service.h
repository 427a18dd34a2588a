// GrpcMasterService: MasterService over gRPC's callback API, for one Master.
//
//   auto master = Master::Create(options);
//   GrpcMasterService service(*master, token);
//   server_options.extra_services.push_back(&service);   // hosted by a task's Server
//
// Every method is raw (byte buffers in and out): the service parses each request itself, so a
// request that is not the method's message gets INVALID_ARGUMENT naming the method, rather than
// gRPC's empty UNIMPLEMENTED. Every call is checked against the token before it is parsed (the
// server's credentials have already refused a wrong token before the body was read; see
// grpc_security.h).
//
// Handlers return at once. The master's synchronous work (creating a session, placing and
// registering a new Run signature) runs on the service's own pool of `num_threads` threads; a
// step then runs without holding any thread (Master::RunStepAsync) until its last task answers.
// A RunStep call whose client cancels it, or whose deadline passes, aborts the step on every
// task.
//
// Thread safety: the handlers may be called concurrently (gRPC does).
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_GRPC_MASTER_SERVICE_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_GRPC_MASTER_SERVICE_H_

#include <functional>
#include <memory>
#include <string>

#include "core/platform/threadpool.h"
#include "core/protos/master.grpc.pb.h"
#include "distributed/master.h"

namespace shardflow {

using RawMasterService = MasterService::WithRawCallbackMethod_CreateSession<
    MasterService::WithRawCallbackMethod_ExtendSession<MasterService::WithRawCallbackMethod_RunStep<
        MasterService::WithRawCallbackMethod_CloseSession<
            MasterService::WithRawCallbackMethod_ListDevices<
                MasterService::WithRawCallbackMethod_Reset<MasterService::Service>>>>>>;

class GrpcMasterService final : public RawMasterService {
 public:
  GrpcMasterService(std::shared_ptr<Master> master, std::string token, int num_threads = 4);

  grpc::ServerUnaryReactor* CreateSession(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ExtendSession(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RunStep(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CloseSession(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Reset(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;

 private:
  class Call;
  // Checks the token, parses the request into `message` and schedules `work` on the pool. `work`
  // gets the call and finishes it (Call::Reply) exactly once, now or later.
  template <typename Request>
  grpc::ServerUnaryReactor* Dispatch(const char* method, grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request, grpc::ByteBuffer* response,
                                     std::function<void(Call*, const Request&)> work);

  const std::shared_ptr<Master> master_;
  const std::string token_;
  ThreadPool pool_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_GRPC_MASTER_SERVICE_H_
