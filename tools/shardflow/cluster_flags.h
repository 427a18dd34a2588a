// The flags that point a subcommand at a cluster (--cluster, --token, --tls-ca, --plaintext),
// shared by `shardflow train` and `shardflow profile`.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_CLUSTER_FLAGS_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_CLUSTER_FLAGS_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "distributed/cluster_spec.h"
#include "distributed/peer_watch.h"
#include "distributed/worker_interface.h"
#include "runtime/session.h"
#include "tools/shardflow/flags.h"

namespace shardflow {

struct ClusterFlags {
  // A cluster spec file, or "auto": the environment a launcher gives (TF_CONFIG, Slurm,
  // OpenMPI, Kubernetes, torchrun; distributed/cluster_resolver.h).
  std::string cluster;
  std::string token;
  std::string tls_ca;
  bool plaintext = false;
  // The data plane between tasks this process serves (ServerOptions::transport): auto, grpc or
  // ucx.
  std::string transport = "auto";
  // --cluster auto: the first task's port on each host, and where ranks meet when the
  // environment gives no addresses (MPI, torchrun).
  int64_t port_base = 2222;
  std::string coordinator;
  double rendezvous_timeout_secs = 120;
  // How long OpenSession's master waits for a task that does not answer yet (starting).
  absl::Duration connect_timeout = absl::Seconds(3);

  void Register(Flags* flags);
  bool is_auto() const { return cluster == "auto"; }
  // --cluster auto: resolves the environment (and, for MPI and torchrun, gathers every task's
  // address at the coordinator) and sets *job and *task to this process's; prints where it is.
  // Errors name the variable or the ranks missing.
  absl::Status ResolveAuto(std::string* job, int64_t* task);
  // The cluster: the file's, or the resolved one (after ResolveAuto).
  absl::StatusOr<ClusterSpec> Spec() const;
  // The task names of the cluster ("/job:worker/replica:0/task:0", ...); empty without
  // --cluster.
  absl::StatusOr<std::vector<std::string>> Tasks() const;
  // A local session without --cluster; else a session whose master runs in this process and
  // drives the cluster's tasks; with `watch`, a lost task it watches fails every step
  // (distributed/peer_watch.h); with `local_worker` (Server::local_worker() of this process's
  // task) the master calls that task directly.
  absl::StatusOr<std::unique_ptr<Session>> OpenSession(
      const SessionOptions& options, std::shared_ptr<PeerWatch> watch = nullptr,
      std::shared_ptr<WorkerInterface> local_worker = nullptr) const;
  // How tasks are reached with these flags (token, CA, plaintext).
  SecurityOptions Security() const;

 private:
  std::optional<ClusterSpec> resolved_;
};

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_CLUSTER_FLAGS_H_
