// Server: one task of a cluster — its devices, its Worker, a server for WorkerService (and,
// when asked, a master that clients reach at the same address), over a protocol chosen by name
// (options.protocol; "grpc" is the one shardflow has: distributed/grpc/grpc_server.h).
//
//   ServerOptions options;
//   options.job = "worker"; options.task = 0;
//   options.address = "127.0.0.1:0";             // port 0: the system picks one
//   options.host_master = true;                  // clients may open grpc://127.0.0.1:<port>
//   SF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
//   server->address();                            // "127.0.0.1:41235"
//   ...
//   server->Shutdown();                           // also done by the destructor
//
// The address comes from options.address, else from options.cluster for (job, task) (bound on
// all interfaces of that port unless the host is a loopback one). Without TLS options the server
// refuses a non-loopback address unless security.plaintext is set (distributed/security.h).
// Threads: the protocol's (for gRPC, options.num_threads completion-queue pollers), the devices'
// threads, and one that collects idle graphs and abandoned steps every options.gc_interval
// (Worker::CollectGarbage).
//
// Limits (docs/distributed.md, "Security and limits"): the token is checked before a request
// is read; no request may be larger than options.max_message_bytes; the worker's limits and
// timeouts are options.worker; when options.cluster lists tasks, RegisterGraph requests must
// agree with its addresses.
//
// Thread safety: every method may be called from any thread; Shutdown is idempotent.
#ifndef SHARDFLOW_DISTRIBUTED_SERVER_H_
#define SHARDFLOW_DISTRIBUTED_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/protos/config.pb.h"
#include "distributed/cluster_spec.h"
#include "distributed/master.h"
#include "distributed/protocol.h"
#include "distributed/security.h"
#include "distributed/worker.h"
#include "distributed/worker_interface.h"
#include "runtime/device.h"

namespace shardflow {

struct ServerOptions {
  // Which protocol serves the task (distributed/protocol.h).
  std::string protocol = kDefaultProtocol;
  // The data plane tensors travel on between tasks: "auto" (UCX's shared memory with peers on
  // this host, gRPC with the others: Note [Same-host data plane] in grpc_server.cc), "grpc"
  // (RecvTensor on the gRPC connection) or "ucx" (distributed/ucx/: UCX's shared memory, TCP or
  // RDMA verbs, whichever UCX_TLS allows, with every peer; gRPC stays the control plane). A peer
  // that cannot be reached over UCX (it serves gRPC only, or the connection fails) is pulled
  // from over gRPC, with one logged line.
  std::string transport = "auto";
  std::string job = "worker";
  int task = 0;
  // "host:port" to bind; empty = the cluster spec's address for (job, task), bound on all
  // interfaces of that port ("0.0.0.0:port") unless the host is a loopback one.
  std::string address;
  ClusterSpec cluster;         // may be empty when `address` is given
  SessionOptionsProto config;  // devices and threads (DeviceFactory::CreateDevices)
  SecurityOptions security;
  // Threads of the protocol's server (for gRPC: completion-queue pollers of WorkerService).
  int num_threads = 2;
  // gRPC only: its I/O polling strategy ("poll", "epoll1", "" = gRPC's default), applied when
  // it is the first gRPC object of the process (distributed/grpc/grpc_poll_strategy.h).
  std::string grpc_poll_strategy = "poll";
  // The largest request the server reads (RESOURCE_EXHAUSTED beyond it).
  int64_t max_message_bytes = int64_t{1} << 30;
  // The worker's limits and timeouts. known_cluster is filled from `cluster` when left empty.
  WorkerOptions worker;
  // A tensor its receiver pulls in parts (a transport's ranged transfer) and stopped pulling
  // part-way is freed after this long, its step aborted. Zero = never.
  absl::Duration transfer_idle_timeout = absl::Seconds(60);
  // How often idle graphs and abandoned steps are collected. Zero = never (tests).
  absl::Duration gc_interval = absl::Seconds(1);
  // Host a master too (clients open sessions at the server's address). Its cluster and its
  // clients' security are the server's when `master` leaves them unset.
  bool host_master = false;
  MasterOptions master;
  // 0 = random (NewIncarnation). Tests only.
  uint64_t incarnation = 0;
};

class Server {
 public:
  // Creates the devices and the worker and starts serving, with options.protocol. Errors: an
  // unknown protocol, no address, an address that cannot be bound (naming it), plaintext
  // refused, unreadable TLS files, a master that cannot be made.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  virtual ~Server() = default;

  // Stops accepting calls, aborts every running step (their callers get UNAVAILABLE), waits
  // for running kernels, and stops the threads.
  virtual void Shutdown() = 0;
  // Blocks until Shutdown has been called (from another thread, e.g. a signal handler's).
  virtual void Wait() = 0;

  // The bound "host:port" (with the port the system chose for port 0).
  virtual const std::string& address() const = 0;
  virtual Worker* worker() const = 0;
  virtual std::vector<Device*> devices() const = 0;
  // The cache the worker's transport uses (with this server's client security options); a
  // master in the same process may share it.
  virtual std::shared_ptr<WorkerCacheInterface> worker_cache() const = 0;
  // The hosted master (options.host_master), else null.
  virtual Master* master() const = 0;
  // This task's worker as a WorkerInterface called directly (distributed/local_worker_client.h),
  // for a master in this process (MasterOptions::local_worker); it fails calls once the server
  // has shut down.
  virtual std::shared_ptr<WorkerInterface> local_worker() const = 0;

  // "/job:J/replica:0/task:T"
  const std::string& task_name() const { return worker()->task(); }
  uint64_t incarnation() const { return worker()->incarnation(); }
};

// The "host:port" a server for (options.job, options.task) binds: options.address, else the
// cluster spec's address for the task ("0.0.0.0:port" unless its host is a loopback one).
// Errors name the task and what is missing.
absl::StatusOr<std::string> ServerBindAddress(const ServerOptions& options);

// "host:port" -> port; -1 when there is none.
int PortOfAddress(const std::string& address);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_SERVER_H_
