// Server: one task of a cluster — its devices, its Worker, and a gRPC server hosting
// WorkerService (and any services the caller adds, e.g. the master's).
//
//   ServerOptions options;
//   options.job = "worker"; options.task = 0;
//   options.address = "127.0.0.1:0";             // port 0: the system picks one
//   SF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
//   server->address();                            // "127.0.0.1:41235"
//   ...
//   server->Shutdown();                           // also done by the destructor
//
// The address comes from options.address, else from options.cluster for (job, task). Without
// TLS options the server refuses a non-loopback address unless security.plaintext is set (see
// distributed/grpc/grpc_security.h). Threads: options.num_threads completion-queue pollers for
// WorkerService (default 2), the devices' threads, and one that collects idle graphs and
// abandoned steps every options.gc_interval (Worker::CollectGarbage).
//
// Limits (docs/distributed.md, "Security and limits"): the token is checked before a request
// is read; no request may be larger than options.max_message_bytes; the worker's limits and
// timeouts are options.worker; when options.cluster lists tasks, RegisterGraph requests must
// agree with its addresses.
//
// Thread safety: every method may be called from any thread; Shutdown is idempotent.
#ifndef SHARDFLOW_DISTRIBUTED_SERVER_H_
#define SHARDFLOW_DISTRIBUTED_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/protos/config.pb.h"
#include "distributed/cluster_spec.h"
#include "distributed/grpc/grpc_security.h"
#include "distributed/grpc/grpc_worker_client.h"
#include "distributed/worker.h"
#include "runtime/device.h"

namespace grpc {
class Server;
class ServerBuilder;
class Service;
}  // namespace grpc

namespace shardflow {

class GrpcWorkerService;

struct ServerOptions {
  std::string job = "worker";
  int task = 0;
  // "host:port" to bind; empty = the cluster spec's address for (job, task), bound on all
  // interfaces of that port ("0.0.0.0:port") unless the host is a loopback one.
  std::string address;
  ClusterSpec cluster;         // may be empty when `address` is given
  SessionOptionsProto config;  // devices and threads (DeviceFactory::CreateDevices)
  GrpcSecurityOptions security;
  // Completion-queue threads serving WorkerService (the thread budget of the RPC layer).
  int num_threads = 2;
  // The largest request the server reads (RESOURCE_EXHAUSTED beyond it).
  int64_t max_message_bytes = int64_t{1} << 30;
  // The worker's limits and timeouts. known_cluster is filled from `cluster` when left empty.
  WorkerOptions worker;
  // How often idle graphs and abandoned steps are collected. Zero = never (tests).
  absl::Duration gc_interval = absl::Seconds(1);
  // Services to host beside WorkerService (borrowed; must outlive the server). They should
  // check security.token with CheckBearerToken.
  std::vector<grpc::Service*> extra_services;
  // Called on the builder before it starts (more options, services, completion queues).
  std::function<void(grpc::ServerBuilder*)> configure_builder;
  // 0 = random (NewIncarnation). Tests only.
  uint64_t incarnation = 0;
};

class Server {
 public:
  // Creates the devices and the worker and starts serving. Errors: no address, an address that
  // cannot be bound (naming it), plaintext refused, unreadable TLS files.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~Server();

  // Stops accepting calls, aborts every running step (their callers get UNAVAILABLE), waits
  // for running kernels, and stops the threads.
  void Shutdown();
  // Blocks until Shutdown has been called (from another thread, e.g. a signal handler's).
  void Wait();

  // The bound "host:port" (with the port the system chose for port 0).
  const std::string& address() const { return address_; }
  // "/job:J/replica:0/task:T"
  const std::string& task_name() const { return worker_->task(); }
  uint64_t incarnation() const { return worker_->incarnation(); }
  Worker* worker() const { return worker_.get(); }
  std::vector<Device*> devices() const;
  // The cache the worker's transport uses (with this server's client security options); a
  // master hosted here may share it.
  std::shared_ptr<GrpcWorkerCache> worker_cache() const { return cache_; }

 private:
  Server() = default;

  std::string address_;
  std::vector<std::unique_ptr<Device>> devices_;
  std::shared_ptr<GrpcWorkerCache> cache_;
  std::unique_ptr<TensorTransport> transport_;
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<GrpcWorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  absl::Notification stop_collecting_;
  std::thread collector_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_SERVER_H_
