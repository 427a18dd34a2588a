#include "tools/shardflow/cluster_flags.h"

#include "core/platform/status.h"
#include "distributed/grpc/grpc_poll_strategy.h"
#include "distributed/master.h"
#include "glog/logging.h"

namespace shardflow {

void ClusterFlags::Register(Flags* flags) {
  flags->String("cluster", &cluster,
                "cluster spec JSON ({\"worker\": [\"host:port\", ...]}): run model-parallel, "
                "layer i on task i mod N, this process as the master (start the tasks with "
                "shardflow server)");
  flags->String("token", &token, "the cluster's shared token (with --cluster)");
  flags->String("tls-ca", &tls_ca, "CA of the tasks' TLS certificates (with --cluster)");
  flags->Bool("plaintext", &plaintext,
              "talk to non-loopback tasks without TLS (with --cluster; trusted networks only)");
}

absl::StatusOr<std::vector<std::string>> ClusterFlags::Tasks() const {
  std::vector<std::string> out;
  if (cluster.empty()) return out;
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::FromJsonFile(cluster));
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
    const SessionOptions& options, std::shared_ptr<PeerWatch> watch) const {
  if (cluster.empty()) return NewSession(options);
  // The master in this process talks gRPC to the tasks: with the poll strategy a server uses
  // (it is this process's first gRPC object).
  absl::Status poll = ChooseGrpcPollStrategy(kDefaultGrpcPollStrategy);
  if (!poll.ok()) LOG(WARNING) << poll.message();
  SF_ASSIGN_OR_RETURN(ClusterSpec spec, ClusterSpec::FromJsonFile(cluster));
  MasterOptions master_options;
  master_options.cluster = spec;
  master_options.client.security = Security();
  master_options.peer_watch = std::move(watch);
  master_options.connect_timeout = connect_timeout;
  SF_ASSIGN_OR_RETURN(std::shared_ptr<Master> master, Master::Create(master_options));
  return NewInProcessMasterSession(master, options);
}

}  // namespace shardflow
