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
// Note [Between-graph groups]. A group whose ops in the graph are on fewer devices than
// group_size, all on one task, is a between-graph group (Horovod's and TF1's between-graph
// replication: each task of a job runs its own graph with its own members): its members are
// those same devices on every task of the job, all of which must be among `known_devices` (the
// master's: every task that answered). With 2 worker tasks and one op on each task's CPU:0,
// group_size 2 is /job:worker/task:0/device:CPU:0 and /job:worker/task:1/device:CPU:0, in that
// rank order. Each task's graph must hold its members of the same instances, and a broadcast's
// source must be on the job's first task (the others cannot know where it is). The members
// meet in a step only if every task runs it under the same step id: `between_graph_signature`
// is set to a string naming those groups, instances, devices and incarnations (empty when there
// are none), from which the master derives each step's id (distributed/master_session.h).
//
// Errors (INVALID_ARGUMENT, naming the group, the ops and the way out): members that disagree on
// group_size; fewer or more devices in the graph than group_size that are not a between-graph
// group (members on several tasks, a job with another number of tasks, a device a task lacks,
// no cluster: a local session); two members of an instance on one device; the ops of an
// instance that are not one kind (one CollectiveBcastSend and receivers for a broadcast),
// disagree on dtype, or miss a member of the group; a node not yet placed.
#ifndef SHARDFLOW_RUNTIME_COLLECTIVES_GROUP_RESOLUTION_H_
#define SHARDFLOW_RUNTIME_COLLECTIVES_GROUP_RESOLUTION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace shardflow {

// True for the ops resolved here (CollectiveReduce, CollectiveBcastSend/Recv, CollectiveGather).
bool IsCollectiveOp(const std::string& op);

// `incarnation` may be unset (every device 1, one process). `known_devices`: every device of
// the cluster (full names), for between-graph groups; `between_graph_signature` may be null.
absl::Status ResolveCollectiveGroups(
    Graph* graph, const std::function<uint64_t(const std::string& device)>& incarnation,
    const std::vector<std::string>& known_devices = {},
    std::string* between_graph_signature = nullptr);

}  // namespace shardflow

#endif  // SHARDFLOW_RUNTIME_COLLECTIVES_GROUP_RESOLUTION_H_
