// GrpcServer: the "grpc" protocol's Server (distributed/server.h) — WorkerService over gRPC's
// asynchronous API and, with ServerOptions::host_master, MasterService over its callback API,
// in one gRPC server. It registers the protocol "grpc" (its worker cache and its server) at
// static-initialisation time; nothing outside distributed/grpc/ names it.
//
// Thread safety: as Server.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_GRPC_SERVER_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_GRPC_SERVER_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "distributed/grpc/grpc_master_service.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "distributed/grpc/grpc_worker_service.h"
#include "distributed/local_worker_client.h"
#include "distributed/server.h"
#include "grpcpp/server.h"

namespace shardflow {

class DataPlane;

class GrpcServer final : public Server {
 public:
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~GrpcServer() override;

  void Shutdown() override;
  void Wait() override;
  const std::string& address() const override { return address_; }
  Worker* worker() const override { return worker_.get(); }
  std::vector<Device*> devices() const override;
  std::shared_ptr<WorkerCacheInterface> worker_cache() const override { return cache_; }
  Master* master() const override { return master_.get(); }
  std::shared_ptr<WorkerInterface> local_worker() const override { return local_worker_; }
  GrpcWorkerService* worker_service() const { return service_.get(); }

 private:
  GrpcServer() = default;

  std::string address_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::shared_ptr<GrpcWorkerCache> cache_;
  std::unique_ptr<TensorTransport> transport_;
  // transport_ when it is a data plane (ServerOptions::transport "ucx"), else null.
  DataPlane* data_plane_ = nullptr;
  std::unique_ptr<Worker> worker_;
  std::shared_ptr<LocalWorkerClient> local_worker_;
  std::shared_ptr<Master> master_;
  std::unique_ptr<GrpcMasterService> master_service_;
  std::unique_ptr<GrpcWorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  absl::Notification stop_collecting_;
  std::thread collector_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_GRPC_SERVER_H_
