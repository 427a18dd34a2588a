// GraphExecutionState: a session's graph, and the plan it makes from it for one Run signature.
// The local session and the master's sessions both go through it, so a step is prepared the
// same way in one process and across a cluster:
//
//   GraphExecutionState state(options);             // the session's devices and config
//   SF_RETURN_IF_ERROR(state.Create(graph_def));    // Session::Create
//   SF_ASSIGN_OR_RETURN(auto plan, state.BuildPlan({"x"}, {"loss"}, {"train"}));
//   plan->partitions                                // device -> the GraphDef it runs
//
// The whole graph is placed once per Create/Extend with the session's policy (nodes placed
// before keep their device, so variables stay put across signatures); BuildPlan then prunes it
// to what the fetches and targets need, turns feeds into _Arg and fetches into _Retval nodes,
// gives every node its whole-graph device (a feed's _Arg goes where its first consumer is, a
// fetch's _Retval where its tensor is produced), and partitions it by device with a _Send/_Recv
// pair on every edge that crosses devices (rendezvous keys carry each device's incarnation).
// The caller caches what it builds on a plan (executors, registered graphs) by RunSignature.
//
// Thread safety: every method may be called concurrently; a plan is immutable.
#ifndef SHARDFLOW_RUNTIME_GRAPH_EXECUTION_STATE_H_
#define SHARDFLOW_RUNTIME_GRAPH_EXECUTION_STATE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/device_base.h"
#include "core/graph/graph.h"
#include "core/protos/config.pb.h"
#include "partitioner/cost_model.h"
#include "runtime/subgraph.h"

namespace shardflow {

// What one Run signature runs.
struct ExecutionPlan {
  std::vector<FeedSpec> feeds;                   // what each fed value must be, in feed order
  std::map<std::string, GraphDef> partitions;    // device -> its part (never empty)
  std::map<std::string, std::string> placement;  // node of the rewritten graph -> device
  std::vector<std::string> feed_devices;         // where each feed's _Arg runs
  std::vector<std::string> fetch_devices;        // where each fetch's _Retval runs
  // The graph after the graph optimizer (before placement) and what each pass changed.
  GraphDef optimized_graph;
  GraphOptimizerReport optimizer_report;
  // Non-empty when the plan holds between-graph collective groups (Note [Between-graph groups]
  // in runtime/collectives/group_resolution.h): every task's steps of it need one step id.
  std::string between_graph_signature;
};

struct GraphExecutionStateOptions {
  // Every device the graph may be placed on.
  std::vector<DeviceAttributes> devices;
  // Placement policy, soft placement, placement logging.
  SessionOptionsProto config;
  // The cost model's view of the devices for the cost policy (speeds, memory, links); unset =
  // DeviceTopology::ForDevices(devices).
  std::function<DeviceTopology()> topology;
  // The incarnation of each device's process, for rendezvous keys; unset = 1 (one process).
  std::function<uint64_t(const std::string& device)> incarnation;
  // Called on the whole graph before it is placed; an error stops placement (the master says
  // here that a node asks for a task that is down).
  std::function<absl::Status(const Graph& graph)> check_graph;
  // A cluster's master: collective groups may span the graphs of several tasks (between-graph
  // replication), their members found among `devices`. A local session: every member must be
  // in the graph.
  bool between_graph_collectives = false;
};

class GraphExecutionState {
 public:
  explicit GraphExecutionState(GraphExecutionStateOptions options);

  // Sets the graph, once. Errors: internal ops (CheckClientGraph), an invalid graph.
  absl::Status Create(const GraphDef& graph);
  // Adds nodes; the whole graph is validated again and placed again at the next BuildPlan.
  absl::Status Extend(const GraphDef& graph);
  bool created() const;

  absl::StatusOr<std::shared_ptr<const ExecutionPlan>> BuildPlan(
      const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
      const std::vector<std::string>& targets);

  const std::vector<DeviceAttributes>& devices() const { return options_.devices; }

 private:
  absl::Status PlaceWholeGraph() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The devices between-graph collective groups may use (none in a local session).
  std::vector<std::string> KnownDevices() const;

  const GraphExecutionStateOptions options_;
  mutable absl::Mutex mu_;
  bool created_ ABSL_GUARDED_BY(mu_) = false;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  // The whole graph's placement, node name -> device; valid until the graph changes.
  std::map<std::string, std::string> placement_ ABSL_GUARDED_BY(mu_);
  bool placement_valid_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_GRAPH_EXECUTION_STATE_H_
