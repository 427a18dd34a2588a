#include "tools/shardflow/server.h"

#include <signal.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "distributed/grpc/grpc_master_service.h"
#include "distributed/master.h"
#include "distributed/server.h"
#include "tools/shardflow/flags.h"

namespace shardflow {
namespace {

struct ServerConfig {
  std::string cluster;
  std::string job = "worker";
  int64_t task = 0;
  std::string address;
  int64_t devices = 1;
  int64_t threads = 0;
  std::string token;
  std::string tls_cert, tls_key, tls_ca;
  bool require_client_cert = false;
  bool plaintext = false;
  bool master = true;
};

absl::Status Serve(const ServerConfig& c) {
  if (c.cluster.empty()) {
    return absl::InvalidArgumentError(
        "--cluster is required: a JSON file {\"worker\": [\"host:port\", ...]}");
  }
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::FromJsonFile(c.cluster));
  if (!spec.HasTask(c.job, static_cast<int>(c.task))) {
    return absl::InvalidArgumentError(absl::StrCat("the cluster spec ", c.cluster, " has no task ",
                                                   c.task, " in job '", c.job, "'"));
  }
  if (c.devices < 1) return absl::InvalidArgumentError("--devices must be at least 1");
  // SIGTERM and SIGINT are taken by sigwait below: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  ServerOptions options;
  options.job = c.job;
  options.task = static_cast<int>(c.task);
  options.address = c.address;
  options.cluster = spec;
  options.config.set_cpu_device_count(static_cast<int>(c.devices));
  options.config.set_intra_op_threads(static_cast<int>(c.threads));
  options.config.set_inter_op_threads(static_cast<int>(c.threads));
  options.security.token = c.token;
  options.security.tls_cert_file = c.tls_cert;
  options.security.tls_key_file = c.tls_key;
  options.security.tls_ca_file = c.tls_ca;
  options.security.require_client_cert = c.require_client_cert;
  options.security.plaintext = c.plaintext;
  std::unique_ptr<GrpcMasterService> master_service;
  if (c.master) {
    MasterOptions master_options;
    master_options.cluster = spec;
    master_options.client.security = options.security;
    SF_ASSIGN_OR_RETURN(std::shared_ptr<Master> master, Master::Create(master_options));
    master_service = std::make_unique<GrpcMasterService>(master, c.token);
    options.extra_services.push_back(master_service.get());
  }
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
  std::printf("shardflow server %s listening on %s (incarnation %016llx%s)\n",
              server->task_name().c_str(), server->address().c_str(),
              static_cast<unsigned long long>(server->incarnation()),
              c.master ? ", with a master" : "");
  for (Device* d : server->devices()) std::printf("  device %s\n", d->name().c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  std::printf("shardflow server %s: %s, shutting down\n", server->task_name().c_str(),
              received == SIGTERM ? "SIGTERM" : "SIGINT");
  std::fflush(stdout);
  server->Shutdown();
  return absl::OkStatus();
}

}  // namespace

int ServerMain(int argc, char** argv, int first) {
  ServerConfig c;
  Flags flags("shardflow server",
              "Runs one task of a cluster: its devices, a worker service and (unless\n"
              "--master=false) a master service that clients reach as grpc://host:port.\n"
              "Prints its address and devices, serves until SIGTERM or SIGINT, then stops\n"
              "cleanly (running steps fail with UNAVAILABLE on their clients).");
  flags.String("cluster", &c.cluster, "cluster spec JSON: {\"worker\": [\"host:port\", ...]}");
  flags.String("job", &c.job, "this task's job in the cluster spec");
  flags.Int("task", &c.task, "this task's index in its job");
  flags.String("address", &c.address,
               "host:port to bind (default: the cluster spec's address for this task)");
  flags.Int("devices", &c.devices, "CPU devices of this task");
  flags.Int("threads", &c.threads, "threads per device (0 = the cores split between devices)");
  flags.String("token", &c.token, "shared secret every call must carry");
  flags.String("tls-cert", &c.tls_cert, "PEM certificate of this server (enables TLS)");
  flags.String("tls-key", &c.tls_key, "PEM private key of --tls-cert");
  flags.String("tls-ca", &c.tls_ca, "PEM CA that signed the other tasks' certificates");
  flags.Bool("require-client-cert", &c.require_client_cert,
             "only accept clients with a certificate signed by --tls-ca");
  flags.Bool("plaintext", &c.plaintext,
             "serve without TLS on a non-loopback address (trusted networks only)");
  flags.Bool("master", &c.master, "also serve MasterService");
  return flags.RunCommand(
      argc, argv, first, [&c] { return Serve(c); }, "shardflow server: ");
}

}  // namespace shardflow
