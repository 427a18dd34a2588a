#include "tools/shardflow/server.h"

#include <signal.h>

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/framework/allocator.h"
#include "core/platform/status.h"
#include "distributed/grpc/grpc_poll_strategy.h"
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
  // Limits (docs/distributed.md, "Security and limits").
  int64_t max_message_mb = 1024;
  int64_t memory_limit_mb = 0;
  int64_t max_sessions = 1024;
  int64_t max_graphs = 4096;
  int64_t max_step_secs = 0;
  int64_t session_idle_secs = 3600;
  int64_t graph_idle_secs = 7200;
  int64_t transfer_idle_secs = 60;
  int64_t step_idle_secs = 600;
  std::string grpc_poll_strategy = kDefaultGrpcPollStrategy;
  std::string transport = "auto";
};

absl::Status CheckNonNegative(const char* flag, int64_t value) {
  if (value < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " is ", value, "; it must be 0 or more"));
  }
  return absl::OkStatus();
}

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
  if (c.max_message_mb < 1 || c.max_message_mb > 2047) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-message-mb is ", c.max_message_mb, "; it must be in [1, 2047]"));
  }
  if (c.max_sessions < 1 || c.max_graphs < 1) {
    return absl::InvalidArgumentError("--max-sessions and --max-graphs must be at least 1");
  }
  for (const auto& [flag, value] :
       std::vector<std::pair<const char*, int64_t>>{{"memory-limit-mb", c.memory_limit_mb},
                                                    {"max-step-secs", c.max_step_secs},
                                                    {"session-idle-secs", c.session_idle_secs},
                                                    {"graph-idle-secs", c.graph_idle_secs},
                                                    {"transfer-idle-secs", c.transfer_idle_secs},
                                                    {"step-idle-secs", c.step_idle_secs}}) {
    SF_RETURN_IF_ERROR(CheckNonNegative(flag, value));
  }
  if (c.memory_limit_mb > 0) SetCpuMemoryLimit(c.memory_limit_mb << 20);
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
  options.max_message_bytes = c.max_message_mb << 20;
  options.grpc_poll_strategy = c.grpc_poll_strategy;
  options.transport = c.transport;
  options.worker.max_registered_graphs = static_cast<int>(c.max_graphs);
  options.worker.graph_idle_timeout = absl::Seconds(c.graph_idle_secs);
  options.transfer_idle_timeout = absl::Seconds(c.transfer_idle_secs);
  options.worker.abandoned_step_timeout = absl::Seconds(c.step_idle_secs);
  options.host_master = c.master;
  options.master.cluster = spec;
  options.master.client.security = options.security;
  options.master.max_sessions = static_cast<int>(c.max_sessions);
  options.master.session_idle_timeout = absl::Seconds(c.session_idle_secs);
  options.master.max_step_time = absl::Seconds(c.max_step_secs);
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
  GetStatusResponse status;
  server->worker()->GetStatus(&status);  // which data plane the server got (ucx may fall back)
  // "auto" that got UCX: shared memory with this host's tasks, gRPC with the others.
  const std::string over = status.data_plane().empty() ? "grpc"
                           : c.transport == "auto" ? "ucx with this host's tasks, grpc with others"
                                                   : status.data_plane();
  std::printf("shardflow server %s listening on %s (incarnation %016llx%s; tensors over %s)\n",
              server->task_name().c_str(), server->address().c_str(),
              static_cast<unsigned long long>(server->incarnation()),
              c.master ? ", with a master" : "", over.c_str());
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

void AddServerCommand(CommandLine* cli) {
  auto config = std::make_shared<ServerConfig>();
  ServerConfig& c = *config;
  Flags& flags = *cli->AddCommand(
      "server", "run one task of a cluster (worker and master services)",
      "Runs one task of a cluster: its devices, a worker service and (unless\n"
      "--master=false) a master service that clients reach as grpc://host:port.\n"
      "Prints its address and devices, serves until SIGTERM or SIGINT, then stops\n"
      "cleanly (running steps fail with UNAVAILABLE on their clients).",
      [config] { return Serve(*config); }, "shardflow server: ");
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
             "serve without TLS on a non-loopback address (trusted networks only)",
             "SHARDFLOW_PLAINTEXT");
  flags.Bool("master", &c.master, "also serve MasterService");
  flags.String("transport", &c.transport,
               "the data plane tensors travel on between tasks: auto (shared memory with tasks "
               "on this host, gRPC with others), grpc, or ucx (UCX with every task: shared "
               "memory, TCP or RDMA verbs as UCX_TLS allows; gRPC stays the control plane; a "
               "peer without UCX is reached over gRPC)");
  flags.String("grpc-poll-strategy", &c.grpc_poll_strategy,
               "gRPC's I/O polling: poll (measured fastest here), epoll1, or empty for gRPC's "
               "default; GRPC_POLL_STRATEGY in the environment wins");
  flags.Int("max-message-mb", &c.max_message_mb,
            "largest request this server reads, in MiB (larger ones: RESOURCE_EXHAUSTED)");
  flags.Int("memory-limit-mb", &c.memory_limit_mb,
            "most tensor memory in use at once, in MiB (0 = 90% of physical memory); an "
            "allocation past it fails the step with RESOURCE_EXHAUSTED");
  flags.Int("max-sessions", &c.max_sessions, "most sessions the master keeps open at once");
  flags.Int("max-graphs", &c.max_graphs, "most graphs the worker keeps registered at once");
  flags.Int("max-step-secs", &c.max_step_secs,
            "longest a step may run on this master, in seconds (0 = no limit of its own)");
  flags.Int("session-idle-secs", &c.session_idle_secs,
            "close a master session no call has used for this long (0 = never)");
  flags.Int("graph-idle-secs", &c.graph_idle_secs,
            "drop a registered graph no step has run for this long (0 = never)");
  flags.Int("transfer-idle-secs", &c.transfer_idle_secs,
            "abort a step whose ranged tensor transfer stopped part-way this long ago");
  flags.Int("step-idle-secs", &c.step_idle_secs,
            "abort a step that nothing has run or used here for this long (a tensor sent for a "
            "receiver that never came; 0 = never)");
}

}  // namespace shardflow
