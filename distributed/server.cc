#include "distributed/server.h"

#include "absl/strings/str_cat.h"
#include "distributed/grpc/grpc_worker_service.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "runtime/device_factory.h"

namespace shardflow {
namespace {

// "host:port" -> port; -1 when there is none.
int PortOf(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  try {
    return std::stoi(address.substr(colon + 1));
  } catch (...) {
    return -1;
  }
}

std::string HostOf(const std::string& address) {
  size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  const std::string task_name = ClusterSpec::TaskName(options.job, options.task);
  std::string bind = options.address;
  if (bind.empty()) {
    auto from_cluster = options.cluster.TaskAddress(options.job, options.task);
    if (!from_cluster.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("server for task ", task_name,
                                                     ": no address given and ",
                                                     from_cluster.status().message()));
    }
    bind = IsLoopbackAddress(*from_cluster) ? *from_cluster
                                            : absl::StrCat("0.0.0.0:", PortOf(*from_cluster));
  }
  if (PortOf(bind) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("server for task ", task_name, ": address '", bind,
                     "' has no port; expected \"host:port\" (port 0 lets the system choose)"));
  }
  auto credentials = MakeServerCredentials(options.security, bind);
  if (!credentials.ok()) {
    return absl::Status(
        credentials.status().code(),
        absl::StrCat("server for task ", task_name, ": ", credentials.status().message()));
  }

  std::unique_ptr<Server> server(new Server());
  auto created = DeviceFactory::CreateDevices(options.config, options.job, options.task);
  if (!created.ok()) return created.status();
  server->devices_ = std::move(created).value();
  std::vector<Device*> devices;
  for (auto& d : server->devices_) devices.push_back(d.get());
  GrpcClientOptions client_options;
  client_options.security = options.security;
  server->cache_ = std::make_shared<GrpcWorkerCache>(client_options);
  server->transport_ = std::make_unique<GrpcTensorTransport>(server->cache_);
  WorkerOptions worker_options = options.worker;
  if (worker_options.known_cluster.empty()) {
    worker_options.known_cluster = options.cluster.TaskAddresses();
  }
  server->worker_ = std::make_unique<Worker>(
      task_name, devices, server->transport_.get(),
      options.incarnation != 0 ? options.incarnation : NewIncarnation(), worker_options);
  server->service_ =
      std::make_unique<GrpcWorkerService>(server->worker_.get(), options.security.token);

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(bind, *credentials, &port);
  if (options.max_message_bytes <= 0 || options.max_message_bytes > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server for task ", task_name, ": max_message_bytes ", options.max_message_bytes,
        " is not in [1, 2^31 - 1] (gRPC's largest message)"));
  }
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(-1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  for (const auto& [name, value] : TransferChannelArguments()) {
    builder.AddChannelArgument(name, value);
  }
  builder.RegisterService(server->service_->service());
  for (grpc::Service* s : options.extra_services) builder.RegisterService(s);
  server->service_->AddCompletionQueues(&builder, options.num_threads);
  if (options.configure_builder) options.configure_builder(&builder);
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
    Server* raw = server.get();
    const absl::Duration every = options.gc_interval;
    server->collector_ = std::thread([raw, every] {
      while (!raw->stop_collecting_.WaitForNotificationWithTimeout(every)) {
        raw->worker_->CollectGarbage(absl::Now());
      }
    });
  }
  return server;
}

Server::~Server() { Shutdown(); }

void Server::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  stop_collecting_.Notify();
  if (collector_.joinable()) collector_.join();
  // Every step's pending call gets its reply before the server stops; then no handler runs.
  if (worker_ != nullptr) worker_->Shutdown();
  if (service_ != nullptr) service_->StopAccepting();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  if (service_ != nullptr) service_->Shutdown();
}

void Server::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&shut_down_));
}

std::vector<Device*> Server::devices() const {
  std::vector<Device*> out;
  for (const auto& d : devices_) out.push_back(d.get());
  return out;
}

}  // namespace shardflow
