// Protocols: how the tasks of a cluster talk to each other, chosen by name in the options
// (ServerOptions::protocol, MasterOptions::protocol, `shardflow server --protocol`), so that the
// master and the servers never name an implementation's classes. gRPC registers "grpc"
// (distributed/grpc/grpc_server.cc); another protocol registers its own factories:
//
//   Protocol p;
//   p.new_worker_cache = [](const WorkerClientOptions& o) { ... };
//   p.new_server = [](const ServerOptions& o) { ... };
//   RegisterProtocol("myproto", std::move(p));
//
//   SF_ASSIGN_OR_RETURN(auto cache, NewWorkerCache("grpc", client_options));
//
// Thread safety: registration happens at static-initialisation time; lookups from any thread.
#ifndef SHARDFLOW_DISTRIBUTED_PROTOCOL_H_
#define SHARDFLOW_DISTRIBUTED_PROTOCOL_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "distributed/worker_interface.h"

namespace shardflow {

class Server;
struct ServerOptions;

inline constexpr char kDefaultProtocol[] = "grpc";

struct Protocol {
  std::function<absl::StatusOr<std::shared_ptr<WorkerCacheInterface>>(
      const WorkerClientOptions& options)>
      new_worker_cache;
  std::function<absl::StatusOr<std::unique_ptr<Server>>(const ServerOptions& options)> new_server;
};

// A second registration of a name is a bug in shardflow and aborts with a message.
void RegisterProtocol(const std::string& name, Protocol protocol);
// INVALID_ARGUMENT naming the registered protocols when `name` is not one.
absl::StatusOr<const Protocol*> FindProtocol(const std::string& name);

// The worker cache of protocol `name` ("" = kDefaultProtocol).
absl::StatusOr<std::shared_ptr<WorkerCacheInterface>> NewWorkerCache(
    const std::string& name, const WorkerClientOptions& options);

}  // namespace shardflow

#endif  // SHARDFLOW_DISTRIBUTED_PROTOCOL_H_
