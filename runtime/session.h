// Session: runs a graph. The local session runs in this process on this machine's devices.
//
//   SessionOptions options;                     // options.config: threads, devices
//   SF_ASSIGN_OR_RETURN(auto session, NewSession(options));
//   SF_RETURN_IF_ERROR(session->Create(graph_def));
//   std::vector<Tensor> out;
//   SF_RETURN_IF_ERROR(session->Run({{"x", x_value}}, {"y:0"}, {"train"}, &out));
//
// Run prunes the graph to what the fetches and targets need (feeds cut it), places it,
// instantiates kernels, and caches all that per (feeds, fetches, targets) signature, so later
// steps with the same signature only execute.
//
// Thread safety: Run may be called concurrently from several threads.
#ifndef SHARDFLOW_RUNTIME_SESSION_H_
#define SHARDFLOW_RUNTIME_SESSION_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/framework/device_base.h"
#include "core/framework/tensor.h"
#include "core/protos/config.pb.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

struct SessionOptions {
  // "" for a local session.
  std::string target;
  SessionOptionsProto config;
};

class Session {
 public:
  virtual ~Session() = default;

  // Sets the graph; validates it whole (see Graph::FromGraphDef). Call once.
  virtual absl::Status Create(const GraphDef& graph) = 0;
  // Adds nodes to the graph; the result is validated again.
  virtual absl::Status Extend(const GraphDef& graph) = 0;

  // feeds: tensor name ("node" or "node:k") -> value; fetches: tensor names whose values are
  // returned in `outputs`, in order; targets: node names to run without fetching anything.
  // `metadata` (may be null) receives step stats when options.trace_level is FULL_TRACE.
  virtual absl::Status Run(const RunOptions& options,
                           const std::vector<std::pair<std::string, Tensor>>& feeds,
                           const std::vector<std::string>& fetches,
                           const std::vector<std::string>& targets, std::vector<Tensor>* outputs,
                           RunMetadata* metadata) = 0;
  absl::Status Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                   const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                   std::vector<Tensor>* outputs) {
    return Run(RunOptions(), feeds, fetches, targets, outputs, nullptr);
  }

  // The devices the session places on. Errors: a remote session's master cannot be reached
  // (or none of its tasks can).
  virtual absl::StatusOr<std::vector<DeviceAttributes>> ListDevices() const = 0;
  // TF1's Session.reset: clears the resources (variables, queues, ...) in `containers` ("" or
  // none: the default one, which holds them all) on every task of a remote session's cluster
  // (those the session's device_filters match). A local session's resources are its own and
  // go with it: nothing to do.
  virtual absl::Status Reset(const std::vector<std::string>& containers) {
    return absl::OkStatus();
  }
  // Releases resources; later calls fail with FailedPrecondition.
  virtual absl::Status Close() = 0;
};

// A session for options.target: "" = local; "grpc://host:port" = the master served at that
// address (distributed/). Error for an unknown target scheme.
absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options);

// Makes sessions for targets that start with "<scheme>://". Registered at static
// initialisation by the layers above the runtime (the distributed runtime registers "grpc").
using SessionFactory =
    std::function<absl::StatusOr<std::unique_ptr<Session>>(const SessionOptions& options)>;
void RegisterSessionFactory(const std::string& scheme, SessionFactory factory);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_SESSION_H_
