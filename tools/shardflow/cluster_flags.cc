#include "tools/shardflow/cluster_flags.h"

#include <algorithm>
#include <cstdio>

#include "core/platform/status.h"
#include "distributed/cluster_resolver.h"
#include "distributed/grpc/grpc_poll_strategy.h"
#include "distributed/master.h"
#include "glog/logging.h"

namespace shardflow {

void ClusterFlags::Register(Flags* flags) {
  flags->String("cluster", &cluster,
                "cluster spec JSON ({\"worker\": [\"host:port\", ...]}): run model-parallel, "
                "layer i on task i mod N, this process as the master (start the tasks with "
                "shardflow server); or auto: this process is a task of the cluster its launcher "
                "describes (TF_CONFIG, srun, mpirun, a Kubernetes indexed Job, torchrun)");
  flags->Int("port-base", &port_base,
             "with --cluster auto: the first task's port on each host (local task k uses "
             "port-base + k; MPI's default rendezvous is port-base - 1 on loopback)");
  flags->String("coordinator", &coordinator,
                "with --cluster auto under mpirun or torchrun: host:port where the ranks meet to "
                "learn each other's addresses (rank 0 listens; default: MASTER_ADDR:MASTER_PORT "
                "for torchrun, 127.0.0.1:port-base-1 for MPI on one node)");
  flags->Double("rendezvous-timeout", &rendezvous_timeout_secs,
                "with --cluster auto: seconds to wait for every rank at the rendezvous");
  flags->String("token", &token, "the cluster's shared token (with --cluster)");
  flags->String("tls-ca", &tls_ca, "CA of the tasks' TLS certificates (with --cluster)");
  flags->Bool("plaintext", &plaintext,
              "talk to non-loopback tasks without TLS (with --cluster; trusted networks only)",
              "SHARDFLOW_PLAINTEXT");
  flags->String(
      "transport", &transport,
      "with --cluster --job/--task: the data plane between tasks: auto (shared memory with "
      "tasks on this host, gRPC with others), grpc, or ucx (UCX with every task: shared "
      "memory, TCP or RDMA verbs as UCX_TLS allows; gRPC stays the control plane)");
}

absl::Status ClusterFlags::ResolveAuto(std::string* job, int64_t* task) {
  ResolveOptions options;
  if (port_base < 2 || port_base > 65535) {
    return absl::InvalidArgumentError("--port-base must be in 2..65535");
  }
  options.base_port = static_cast<int>(port_base);
  options.coordinator = coordinator;
  SF_ASSIGN_OR_RETURN(ClusterResolution r, ResolveCluster(ProcessEnvironment(), options));
  if (r.needs_rendezvous()) {
    if (!(rendezvous_timeout_secs > 0)) {
      return absl::InvalidArgumentError("--rendezvous-timeout must be positive (seconds)");
    }
    SF_ASSIGN_OR_RETURN(r.spec, GatherClusterSpec(r, absl::Seconds(rendezvous_timeout_secs)));
  }
  if (!r.warning.empty()) std::fprintf(stderr, "warning: %s\n", r.warning.c_str());
  std::printf("cluster from %s: this is task %s:%d of %s\n", r.source.c_str(), r.job.c_str(),
              r.task, r.spec.ToJson().c_str());
  std::fflush(stdout);
  *job = r.job;
  *task = r.task;
  resolved_ = std::move(r.spec);
  // A launcher starts every task at once; the others may take a moment to listen.
  connect_timeout = std::max(connect_timeout, absl::Seconds(60));
  return absl::OkStatus();
}

absl::StatusOr<ClusterSpec> ClusterFlags::Spec() const {
  if (resolved_.has_value()) return *resolved_;
  if (is_auto()) {
    return absl::FailedPreconditionError("--cluster auto is not resolved yet");
  }
  return ClusterSpec::FromJsonFile(cluster);
}

absl::StatusOr<std::vector<std::string>> ClusterFlags::Tasks() const {
  std::vector<std::string> out;
  if (cluster.empty()) return out;
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, Spec());
  for (const TaskId& t : spec.tasks()) out.push_back(ClusterSpec::TaskName(t.job, t.task));
  return out;
}

SecurityOptions ClusterFlags::Security() const {
  SecurityOptions security;
  security.token = token;
  security.tls_ca_file = tls_ca;
  security.plaintext = plaintext;
  return security;
}

absl::StatusOr<std::unique_ptr<Session>> ClusterFlags::OpenSession(
    const SessionOptions& options, std::shared_ptr<PeerWatch> watch,
    std::shared_ptr<WorkerInterface> local_worker) const {
  if (cluster.empty()) return NewSession(options);
  // The master in this process talks gRPC to the tasks: with the poll strategy a server uses
  // (it is this process's first gRPC object).
  absl::Status poll = ChooseGrpcPollStrategy(kDefaultGrpcPollStrategy);
  if (!poll.ok()) LOG(WARNING) << poll.message();
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, Spec());
  MasterOptions master_options;
  master_options.cluster = spec;
  master_options.client.security = Security();
  master_options.peer_watch = std::move(watch);
  master_options.local_worker = std::move(local_worker);
  master_options.connect_timeout = connect_timeout;
  SF_ASSIGN_OR_RETURN(std::shared_ptr<Master> master, Master::Create(master_options));
  return NewInProcessMasterSession(master, options);
}

}  // namespace shardflow
