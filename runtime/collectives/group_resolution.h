// Which devices form each collective group, decided when a step's graph is prepared
// (GraphExecutionState::BuildPlan, after placement, before partitioning), so the local session
// and the master resolve groups the same way and every member knows its peers before it runs.
//
//   SF_RETURN_IF_ERROR(ResolveCollectiveGroups(graph.get(), incarnation));
//
// The collective ops of a group (ops/collective_ops.cc; the same group_key) are its members,
// one per device, ranked by device name (job, replica, task, type, index; numbers compared as
// numbers). Each op gets the internal attrs _group_devices ("dev0,dev1,...", in rank order) and
// _group_incarnations (each device's process incarnation, for the rendezvous keys).
//
// Errors (INVALID_ARGUMENT, naming the group, the ops and the way out): members that disagree on
// group_size; fewer or more devices in the graph than group_size (every member must be in the
// graph that runs: in-graph replication); two members of an instance on one device; the ops of
// an instance that are not one kind (one CollectiveBcastSend and receivers for a broadcast),
// disagree on dtype, or miss a member of the group; a node not yet placed.
#ifndef SHARDFLOW_RUNTIME_COLLECTIVES_GROUP_RESOLUTION_H_
#define SHARDFLOW_RUNTIME_COLLECTIVES_GROUP_RESOLUTION_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace shardflow {

// True for the ops resolved here (CollectiveReduce, CollectiveBcastSend/Recv, CollectiveGather).
bool IsCollectiveOp(const std::string& op);

// `incarnation` may be unset (every device 1, one process).
absl::Status ResolveCollectiveGroups(
    Graph* graph, const std::function<uint64_t(const std::string& device)>& incarnation);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_COLLECTIVES_GROUP_RESOLUTION_H_
