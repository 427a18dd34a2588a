// GrpcWorkerService: WorkerService over gRPC's asynchronous API, for one Worker.
//
//   GrpcWorkerService service(worker, token);
//   builder.RegisterService(service.service());
//   auto cqs = service.AddCompletionQueues(&builder, /*num_threads=*/2);
//   server = builder.BuildAndStart();
//   service.Start();            // posts the first request of every method, starts the threads
//   ...
//   worker->Shutdown();         // every pending call gets its reply
//   server->Shutdown();
//   service.Shutdown();         // drains the completion queues, joins the threads
//
// Threads: exactly `num_threads`, each polling its own completion queue; no handler blocks on
// another call (RunGraph and RecvTensor finish from the callbacks of the Worker). Every method
// is raw: the service parses each request itself, after checking the token, so garbage bytes
// get INVALID_ARGUMENT naming the method. RecvTensor's reply is the byte buffer of
// distributed/grpc/tensor_coding.h, whose tensor slice points at the sent tensor's memory.
//
// Thread safety: Start and Shutdown are called once each, from one thread.
#ifndef SHARDFLOW_DISTRIBUTED_GRPC_GRPC_WORKER_SERVICE_H_
#define SHARDFLOW_DISTRIBUTED_GRPC_GRPC_WORKER_SERVICE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/protos/worker.grpc.pb.h"
#include "distributed/grpc/ranged_recv_tensor.h"
#include "distributed/worker.h"
#include "grpcpp/server_builder.h"

namespace shardflow {

class GrpcWorkerService {
 public:
  // Every method raw: requests are parsed by the service (see UnaryCall in the .cc).
  using AsyncService =
      WorkerService::WithRawMethod_GetStatus<WorkerService::WithRawMethod_RegisterGraph<
          WorkerService::WithRawMethod_RunGraph<WorkerService::WithRawMethod_RecvTensor<
              WorkerService::WithRawMethod_CleanupGraph<WorkerService::WithRawMethod_AbortStep<
                  WorkerService::WithRawMethod_ResetResources<WorkerService::Service>>>>>>>;

  // `worker` is borrowed and must outlive the service. `token` empty = no token check.
  // `transfer_idle_timeout`: a tensor pulled in ranges whose receiver stopped part-way is freed
  // after this long (RangedRecvTensorServer; zero = never).
  GrpcWorkerService(Worker* worker, std::string token,
                    absl::Duration transfer_idle_timeout = absl::Seconds(60));
  ~GrpcWorkerService();

  grpc::Service* service() { return &service_; }
  // Before BuildAndStart: one completion queue per thread (at least one).
  void AddCompletionQueues(grpc::ServerBuilder* builder, int num_threads);
  // After BuildAndStart.
  void Start();
  // Before the grpc::Server's Shutdown: no new request is posted.
  void StopAccepting() { accepting_.store(false); }
  bool accepting() const { return accepting_.load(); }
  // After the grpc::Server's Shutdown: drains the queues and joins the threads.
  void Shutdown();

  Worker* worker() const { return worker_; }
  const std::string& token() const { return token_; }
  RangedRecvTensorServer* ranged() { return &ranged_; }
  // Frees abandoned ranged transfers (the server's collector calls this).
  void CollectGarbage(absl::Time now) { ranged_.CollectGarbage(now); }

 private:
  void PostRequests(grpc::ServerCompletionQueue* cq);
  void Poll(grpc::ServerCompletionQueue* cq);

  Worker* const worker_;
  const std::string token_;
  RangedRecvTensorServer ranged_;
  AsyncService service_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs_;
  std::vector<std::thread> threads_;
  std::atomic<bool> accepting_{true};
  bool started_ = false;
  bool shut_down_ = false;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_GRPC_GRPC_WORKER_SERVICE_H_
