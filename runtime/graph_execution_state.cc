#include "runtime/graph_execution_state.h"

#include <algorithm>

#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/platform/status.h"
#include "partitioner/optimizer/graph_optimizer.h"
#include "partitioner/partition.h"
#include "partitioner/placer.h"
#include "runtime/collectives/group_resolution.h"
#include "runtime/op_runner.h"

namespace shardflow {

GraphExecutionState::GraphExecutionState(GraphExecutionStateOptions options)
    : options_(std::move(options)) {}

absl::Status GraphExecutionState::Create(const GraphDef& graph) {
  SF_RETURN_IF_ERROR(CheckClientGraph(graph));
  SF_RETURN_IF_ERROR(Graph::FromGraphDef(graph).status());
  absl::MutexLock lock(&mu_);
  if (created_) {
    return absl::FailedPreconditionError(
        "Session::Create was called twice; use Extend to add nodes");
  }
  graph_def_ = graph;
  created_ = true;
  placement_.clear();
  placement_valid_ = false;
  return absl::OkStatus();
}

absl::Status GraphExecutionState::Extend(const GraphDef& graph) {
  SF_RETURN_IF_ERROR(CheckClientGraph(graph));
  absl::MutexLock lock(&mu_);
  GraphDef merged = graph_def_;
  for (const NodeDef& n : graph.node()) *merged.add_node() = n;
  SF_RETURN_IF_ERROR(Graph::FromGraphDef(merged).status());
  graph_def_ = std::move(merged);
  created_ = true;
  placement_valid_ = false;  // new nodes; the placed ones keep their devices
  return absl::OkStatus();
}

bool GraphExecutionState::created() const {
  absl::MutexLock lock(&mu_);
  return created_;
}

std::vector<std::string> GraphExecutionState::KnownDevices() const {
  std::vector<std::string> names;
  if (!options_.between_graph_collectives) return names;
  for (const DeviceAttributes& d : options_.devices) names.push_back(d.name);
  return names;
}

absl::Status GraphExecutionState::PlaceWholeGraph() {
  if (placement_valid_) return absl::OkStatus();
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(graph_def_));
  if (options_.check_graph) SF_RETURN_IF_ERROR(options_.check_graph(*graph));
  ApplyWholeGraphPlacement(graph.get(), placement_);
  DeviceTopology cluster =
      options_.topology ? options_.topology() : DeviceTopology::ForDevices(options_.devices);
  PlacerOptions placer;
  placer.allow_soft_placement = options_.config.allow_soft_placement();
  placer.log_device_placement = options_.config.log_device_placement();
  placer.policy = options_.config.placement_policy();
  placer.topology = &cluster;
  SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), options_.devices, placer));
  // Collective ops learn their group's members.
  SF_RETURN_IF_ERROR(ResolveCollectiveGroups(graph.get(), options_.incarnation, KnownDevices()));
  for (Node* n : graph->nodes()) placement_[n->name()] = n->assigned_device();
  placement_valid_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const ExecutionPlan>> GraphExecutionState::BuildPlan(
    const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
    const std::vector<std::string>& targets) {
  absl::MutexLock lock(&mu_);
  if (!created_) return absl::FailedPreconditionError("Session::Run before Session::Create");
  SF_RETURN_IF_ERROR(PlaceWholeGraph());
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(graph_def_));
  auto plan = std::make_shared<ExecutionPlan>();
  SF_RETURN_IF_ERROR(RewriteForRun(graph.get(), feeds, fetches, targets, &plan->feeds));
  // The optimizer sees the pruned graph; its rewritten nodes keep the names of those they
  // replace, so the whole graph's placement still applies (Note [graph optimizer]).
  GraphOptimizerOptions optimize;
  optimize.config = options_.config.rewrite_options();
  for (const std::string& t : targets) {
    auto ref = ParseTensorRef(t);
    optimize.keep.insert(ref.ok() ? ref->node : t);
  }
  optimize.evaluate = [](const NodeDef& node, std::vector<Tensor> inputs) {
    std::map<std::string, AttrValue> attrs(node.attr().begin(), node.attr().end());
    RunOpOptions run;
    run.intra_op_threads = 1;
    return RunOp(node.op(), std::move(inputs), attrs, run);
  };
  std::vector<std::string> before;
  for (Node* n : graph->nodes()) before.push_back(n->name());
  SF_RETURN_IF_ERROR(OptimizeGraph(optimize, graph.get(), &plan->optimizer_report));
  graph->ToGraphDef(&plan->optimized_graph);
  ApplyWholeGraphPlacement(graph.get(), placement_);
  // A node the optimizer made in place of others (a fused op) inherits their device, which may
  // have no kernel for it (no GPU kernel of an inference-only fusion): it is placed afresh.
  for (Node* n : graph->nodes()) {
    if (n->assigned_device().empty()) continue;
    auto device = DeviceName::Parse(n->assigned_device());
    if (!device.ok()) continue;
    std::vector<std::string> types = KernelRegistry::Global()->SupportedDeviceTypes(n->def());
    if (std::find(types.begin(), types.end(), device->type) == types.end()) {
      n->set_assigned_device("");
    }
  }
  // What the whole-graph placement does not cover (the new _Arg/_Retval nodes it could not
  // place) gets the constraints policy; colocation with a node this run prunes was honoured
  // there.
  DropColocationWithMissingNodes(graph.get());
  PlacerOptions placer;
  placer.allow_soft_placement = options_.config.allow_soft_placement();
  SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), options_.devices, placer));
  // Collective ops learn their group's members (Note [Between-graph groups]).
  SF_RETURN_IF_ERROR(ResolveCollectiveGroups(graph.get(), options_.incarnation, KnownDevices(),
                                             &plan->between_graph_signature));
  plan->feed_devices.resize(feeds.size());
  plan->fetch_devices.resize(fetches.size());
  for (Node* n : graph->nodes()) {
    plan->placement[n->name()] = n->assigned_device();
    if (n->op() != kArgOp && n->op() != kRetvalOp) continue;
    int index = 0;
    SF_RETURN_IF_ERROR(GetAttr(n->attrs(), "index", &index));
    auto& slots = n->op() == kArgOp ? plan->feed_devices : plan->fetch_devices;
    if (index >= 0 && index < static_cast<int>(slots.size())) {
      slots[index] = n->assigned_device();
    }
  }
  // Nodes the optimizer folded, merged or fused away still report where the whole graph put them
  // (RunMetadata.placement keeps every node the user's step needed).
  for (const std::string& name : before) {
    auto it = placement_.find(name);
    if (it != placement_.end() && plan->placement.count(name) == 0) {
      plan->placement[name] = it->second;
    }
  }
  PartitionOptions partition;
  partition.incarnation = options_.incarnation;
  std::map<std::string, GraphDef> parts;
  SF_RETURN_IF_ERROR(PartitionGraph(*graph, partition, &parts));
  for (auto& [device, part] : parts) {
    if (part.node_size() > 0) plan->partitions[device] = std::move(part);
  }
  if (plan->partitions.empty()) {
    return absl::InvalidArgumentError("nothing to run: the fetches and targets need no node");
  }
  return std::shared_ptr<const ExecutionPlan>(std::move(plan));
}

}  // namespace shardflow
