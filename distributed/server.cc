#include "distributed/server.h"

#include "absl/strings/str_cat.h"

namespace shardflow {

int PortOfAddress(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  try {
    return std::stoi(address.substr(colon + 1));
  } catch (...) {
    return -1;
  }
}

absl::StatusOr<std::string> ServerBindAddress(const ServerOptions& options) {
  const std::string task_name = ClusterSpec::TaskName(options.job, options.task);
  std::string bind = options.address;
  if (bind.empty()) {
    auto from_cluster = options.cluster.TaskAddress(options.job, options.task);
    if (!from_cluster.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("server for task ", task_name,
                                                     ": no address given and ",
                                                     from_cluster.status().message()));
    }
    bind = IsLoopbackAddress(*from_cluster)
               ? *from_cluster
               : absl::StrCat("0.0.0.0:", PortOfAddress(*from_cluster));
  }
  if (PortOfAddress(bind) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("server for task ", task_name, ": address '", bind,
                     "' has no port; expected \"host:port\" (port 0 lets the system choose)"));
  }
  return bind;
}

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  auto protocol = FindProtocol(options.protocol);
  if (!protocol.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("server for task ",
                                                   ClusterSpec::TaskName(options.job, options.task),
                                                   ": ", protocol.status().message()));
  }
  return (*protocol)->new_server(options);
}

}  // namespace shardflow
