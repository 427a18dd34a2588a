#include "distributed/grpc/grpc_server.h"

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "distributed/data_plane.h"
#include "distributed/grpc/grpc_poll_strategy.h"
#include "distributed/grpc/grpc_security.h"
#include "glog/logging.h"
#include "grpcpp/server_builder.h"
#include "runtime/device_factory.h"

namespace shardflow {
namespace {

std::string HostOf(const std::string& address) {
  size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

// The "grpc" protocol.
const bool kRegistered = [] {
  Protocol grpc;
  grpc.new_worker_cache = [](const WorkerClientOptions& options)
      -> absl::StatusOr<std::shared_ptr<WorkerCacheInterface>> {
    return std::shared_ptr<WorkerCacheInterface>(std::make_shared<GrpcWorkerCache>(options));
  };
  grpc.new_server = [](const ServerOptions& options) { return GrpcServer::Create(options); };
  RegisterProtocol("grpc", std::move(grpc));
  return true;
}();

}  // namespace

// Note [Same-host data plane]. Transport "auto", the default, gives a server the UCX data plane
// restricted to peers on its own host: tensors between tasks of one machine (ranks of one node,
// the tests' and benchmarks' loopback clusters) cross through shared memory (UCX's posix/sysv
// segments and CMA: one copy, where TCP over loopback costs two in the kernel and gRPC one more
// out of its slices; docs/benchmarks.md "All-reduce between two processes vs gloo"), and
// tensors from other hosts keep to gRPC, whose TCP path is as fast over a real link (UCX over
// TCP measured no better) and whose port is the only one the server opens. A peer is on this
// host when its address in the cluster is a loopback one, an address of one of this network
// namespace's interfaces, or this machine's host name, so tasks in other network namespaces
// (emulated hosts) are other hosts. UCX is restricted to shared memory (TLS "sm,self", unless
// UCX_TLS is set), so it opens no TCP listener. A server with TLS, or a build without UCX, is
// gRPC only; a peer that serves gRPC only, or cannot be connected, is pulled from over gRPC.
absl::StatusOr<std::unique_ptr<Server>> GrpcServer::Create(const ServerOptions& options) {
  const std::string task_name = ClusterSpec::TaskName(options.job, options.task);
  absl::Status poll = ChooseGrpcPollStrategy(options.grpc_poll_strategy);
  if (absl::IsInvalidArgument(poll)) return poll;
  if (!poll.ok()) LOG(WARNING) << "server for task " << task_name << ": " << poll.message();
  SF_ASSIGN_OR_RETURN(const std::string bind, ServerBindAddress(options));
  if (absl::Status t = CheckTransportName(options.transport); !t.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server for task ", task_name, ": ", t.message()));
  }
  if (options.transport == "ucx" && options.security.tls()) {
    return absl::InvalidArgumentError(
        absl::StrCat("server for task ", task_name,
                     ": --transport ucx cannot encrypt tensors (UCX has no TLS); with TLS use "
                     "--transport grpc, or drop TLS on a trusted network"));
  }
  if (options.max_message_bytes <= 0 || options.max_message_bytes > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server for task ", task_name, ": max_message_bytes ", options.max_message_bytes,
        " is not in [1, 2^31 - 1] (gRPC's largest message)"));
  }
  auto credentials = MakeServerCredentials(options.security, bind);
  if (!credentials.ok()) {
    return absl::Status(
        credentials.status().code(),
        absl::StrCat("server for task ", task_name, ": ", credentials.status().message()));
  }

  std::unique_ptr<GrpcServer> server(new GrpcServer());
  SF_ASSIGN_OR_RETURN(server->devices_,
                      DeviceFactory::CreateDevices(options.config, options.job, options.task));
  std::vector<Device*> devices;
  for (auto& d : server->devices_) devices.push_back(d.get());
  WorkerClientOptions client_options;
  client_options.security = options.security;
  server->cache_ = std::make_shared<GrpcWorkerCache>(client_options);
  // The data plane (ServerOptions::transport): UCX beside gRPC when asked for and available,
  // else RecvTensor on the gRPC connection. Note [Same-host data plane] for "auto".
  const bool same_host = options.transport == "auto" && !options.security.tls() &&
                         absl::c_linear_search(RegisteredDataPlanes(), "ucx");
  if (options.transport == "ucx" || same_host) {
    DataPlaneOptions plane{task_name, options.security.token};
    plane.same_host_only = same_host;
    auto ucx = NewDataPlane("ucx", plane, server->cache_, server->cache_->NewTransport());
    if (ucx.ok()) {
      server->data_plane_ = ucx->get();
      server->transport_ = *std::move(ucx);
    } else if (same_host) {
      LOG(INFO) << "server for task " << task_name << ": " << ucx.status().message()
                << "; tensors travel over gRPC";
    } else {
      LOG(WARNING) << "server for task " << task_name << ": " << ucx.status().message()
                   << "; tensors travel over gRPC";
    }
  }
  if (server->transport_ == nullptr) server->transport_ = server->cache_->NewTransport();
  WorkerOptions worker_options = options.worker;
  if (worker_options.known_cluster.empty()) {
    worker_options.known_cluster = options.cluster.TaskAddresses();
  }
  server->worker_ = std::make_unique<Worker>(
      task_name, devices, server->transport_.get(),
      options.incarnation != 0 ? options.incarnation : NewIncarnation(), worker_options);
  if (server->data_plane_ != nullptr) server->data_plane_->Serve(server->worker_.get());
  server->local_worker_ = std::make_shared<LocalWorkerClient>(server->worker_.get(), bind);
  server->service_ = std::make_unique<GrpcWorkerService>(
      server->worker_.get(), options.security.token, options.transfer_idle_timeout);
  if (options.host_master) {
    MasterOptions master_options = options.master;
    if (master_options.cluster.tasks().empty()) master_options.cluster = options.cluster;
    // The master's calls get channels of their own (the worker's carry the tensors), with the
    // server's security unless the master was given its own.
    const SecurityOptions& own = master_options.client.security;
    if (own.token.empty() && !own.tls() && !own.plaintext) {
      master_options.client.security = options.security;
    }
    master_options.local_worker = server->local_worker_;
    SF_ASSIGN_OR_RETURN(server->master_, Master::Create(master_options));
    server->master_service_ =
        std::make_unique<GrpcMasterService>(server->master_, options.security.token);
  }

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(bind, *credentials, &port);
  // gRPC sets SO_REUSEPORT by default: a second server on this address would start too and
  // the kernel would split the connections between them (a worker started with the wrong
  // task index silently taking another's port). One address, one server.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(-1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  for (const auto& [name, value] : TransferChannelArguments()) {
    builder.AddChannelArgument(name, value);
  }
  builder.RegisterService(server->service_->service());
  if (server->master_service_ != nullptr) builder.RegisterService(server->master_service_.get());
  server->service_->AddCompletionQueues(&builder, options.num_threads);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || port == 0) {
    server->service_->Shutdown();
    return absl::UnavailableError(
        absl::StrCat("server for task ", task_name, ": could not listen on ", bind,
                     " (in use, or not an address of this host); pick another port or 0"));
  }
  server->address_ = absl::StrCat(HostOf(bind), ":", port);
  server->service_->Start();
  if (options.gc_interval > absl::ZeroDuration()) {
    GrpcServer* raw = server.get();
    const absl::Duration every = options.gc_interval;
    server->collector_ = std::thread([raw, every] {
      while (!raw->stop_collecting_.WaitForNotificationWithTimeout(every)) {
        raw->worker_->CollectGarbage(absl::Now());
        raw->service_->CollectGarbage(absl::Now());
      }
    });
  }
  return std::unique_ptr<Server>(std::move(server));
}

GrpcServer::~GrpcServer() { Shutdown(); }

void GrpcServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  stop_collecting_.Notify();
  if (collector_.joinable()) collector_.join();
  // A master in this process calls the worker no more; every step's pending call gets its
  // reply before the server stops; then no handler runs.
  if (local_worker_ != nullptr) local_worker_->Detach();
  if (worker_ != nullptr) worker_->Shutdown();
  if (data_plane_ != nullptr) data_plane_->StopServing();
  if (service_ != nullptr) service_->StopAccepting();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  if (service_ != nullptr) service_->Shutdown();
}

void GrpcServer::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&shut_down_));
}

std::vector<Device*> GrpcServer::devices() const {
  std::vector<Device*> out;
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

}  // namespace shardflow
