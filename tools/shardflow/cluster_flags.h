// The flags that point a subcommand at a cluster (--cluster, --token, --tls-ca, --plaintext),
// shared by `shardflow train` and `shardflow profile`.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_CLUSTER_FLAGS_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_CLUSTER_FLAGS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "distributed/peer_watch.h"
#include "runtime/session.h"
#include "tools/shardflow/flags.h"

namespace shardflow {

struct ClusterFlags {
  std::string cluster;
  std::string token;
  std::string tls_ca;
  bool plaintext = false;
  // How long OpenSession's master waits for a task that does not answer yet (starting).
  absl::Duration connect_timeout = absl::Seconds(3);

  void Register(Flags* flags);
  // The task names of the cluster ("/job:worker/replica:0/task:0", ...); empty without
  // --cluster.
  absl::StatusOr<std::vector<std::string>> Tasks() const;
  // A local session without --cluster; else a session whose master runs in this process and
  // drives the cluster's tasks; with `watch`, a lost task it watches fails every step
  // (distributed/peer_watch.h).
  absl::StatusOr<std::unique_ptr<Session>> OpenSession(
      const SessionOptions& options, std::shared_ptr<PeerWatch> watch = nullptr) const;
  // How tasks are reached with these flags (token, CA, plaintext).
  SecurityOptions Security() const;
};

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_CLUSTER_FLAGS_H_
