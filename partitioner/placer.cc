#include "partitioner/placer.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"
#include "partitioner/placement_policy.h"

namespace shardflow {
namespace {

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<int> parent_;
};

std::string Describe(const Node* n) { return absl::StrCat("'", n->name(), "' (", n->op(), ")"); }

// The node's request: its assigned device when it has one (that is final), else its requested
// spec.
absl::StatusOr<DeviceName> NodeRequest(const Node* n) {
  const std::string& spec =
      n->assigned_device().empty() ? n->requested_device() : n->assigned_device();
  auto parsed = DeviceName::Parse(spec);
  if (!parsed.ok()) {
    return WithContext(parsed.status(), absl::StrCat("node ", Describe(n), " requests a device: "));
  }
  return parsed;
}

// Everything the placer works out before a policy chooses.
struct Constraints {
  std::vector<Node*> nodes;
  PlacementProblem problem;
  std::vector<DeviceName> group_request;
  std::vector<std::vector<std::string>> group_kernels;
  std::vector<bool> group_soft;
};

absl::Status BuildConstraints(Graph* graph, const std::vector<DeviceAttributes>& devices,
                              const PlacerOptions& options, Constraints* c) {
  std::vector<DeviceName> parsed;
  std::vector<std::string> names;
  for (const auto& d : devices) {
    SF_ASSIGN_OR_RETURN(DeviceName n, DeviceName::Parse(d.name));
    parsed.push_back(n);
    names.push_back(d.name);
  }
  const std::string available =
      absl::StrCat("available devices are [", absl::StrJoin(names, ", "), "]");
  c->nodes = graph->nodes();
  UnionFind uf(graph->num_node_ids());
  for (Node* n : c->nodes) {
    // Explicit colocation requests.
    auto it = n->attrs().find(kColocationAttr);
    if (it != n->attrs().end()) {
      for (const std::string& entry : it->second.list().s()) {
        if (!absl::StartsWith(entry, kColocationPrefix)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "node ", Describe(n), " has colocation entry '", entry, "' in attr ", kColocationAttr,
              "; entries look like \"", kColocationPrefix, "<node name>\""));
        }
        std::string other = entry.substr(std::string(kColocationPrefix).size());
        Node* target = graph->FindNode(other);
        if (target == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "node ", Describe(n), " asks to be colocated with '", other,
              "', which is not in the graph; fix or remove the ", kColocationAttr, " attr"));
        }
        uf.Union(n->id(), target->id());
      }
    }
    // A variable's (an accumulator's, a queue's) users live where it lives.
    for (const Edge* e : n->in_edges()) {
      if (!e->IsControl() && IsResourceHandleOp(e->src->op())) uf.Union(n->id(), e->src->id());
    }
  }
  PlacementProblem& p = c->problem;
  p.graph = graph;
  p.group_of.assign(graph->num_node_ids(), -1);
  std::vector<int> root_group(graph->num_node_ids(), -1);
  for (Node* n : c->nodes) {
    int root = uf.Find(n->id());
    if (root_group[root] < 0) {
      root_group[root] = static_cast<int>(p.group_members.size());
      p.group_members.emplace_back();
    }
    p.group_of[n->id()] = root_group[root];
    p.group_members[root_group[root]].push_back(n->id());
  }
  const int g_count = static_cast<int>(p.group_members.size());
  c->group_request.resize(g_count);
  c->group_kernels.resize(g_count);
  c->group_soft.assign(g_count, false);
  p.feasible.resize(g_count);
  for (int g = 0; g < g_count; ++g) {
    const auto& members = p.group_members[g];
    DeviceName request;
    const Node* requester = nullptr;  // the member whose request made `request` specific
    std::vector<std::string> kernels;
    bool first = true;
    for (int id : members) {
      const Node* n = graph->node(id);
      std::vector<std::string> types = KernelRegistry::Global()->SupportedDeviceTypes(n->def());
      if (types.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(NodeErrorPrefix(n->def()),
                                                       "no kernel is registered for this op "
                                                       "with these attrs on any device type"));
      }
      if (first) {
        kernels = types;
        first = false;
      } else {
        std::vector<std::string> common;
        for (const auto& t : kernels) {
          if (std::find(types.begin(), types.end(), t) != types.end()) common.push_back(t);
        }
        if (common.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("nodes ", Describe(graph->node(members[0])), " and ", Describe(n),
                           " must be colocated but have no device type in common (kernels for [",
                           absl::StrJoin(kernels, ", "), "] and [", absl::StrJoin(types, ", "),
                           "]); remove the colocation or the op without a kernel"));
        }
        kernels = std::move(common);
      }
      SF_ASSIGN_OR_RETURN(DeviceName own, NodeRequest(n));
      if (!request.IsCompatibleWith(own)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "nodes ", Describe(requester), " (requests '", requester->requested_device(), "') and ",
            Describe(n), " (requests '", NodeRequest(n)->ToString(),
            "') must be colocated (a colocation attr or a shared variable) but ask for "
            "different devices; request one device for both. ",
            available));
      }
      bool adds = (own.has_job && !request.has_job) || (own.has_task && !request.has_task) ||
                  (own.has_type && !request.has_type) || (own.has_id && !request.has_id) ||
                  (own.has_replica && !request.has_replica);
      SF_RETURN_IF_ERROR(request.MergeFrom(own));
      if (adds || requester == nullptr) requester = n;
    }
    c->group_request[g] = request;
    c->group_kernels[g] = kernels;
    auto has_kernel = [&](size_t i) {
      return std::find(kernels.begin(), kernels.end(), devices[i].device_type) != kernels.end();
    };
    bool any_match = false;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (!request.Matches(parsed[i])) continue;
      any_match = true;
      if (has_kernel(i)) p.feasible[g].push_back(static_cast<int>(i));
    }
    bool pinned = false;
    for (int id : members) pinned |= !graph->node(id)->assigned_device().empty();
    if (p.feasible[g].empty() && options.allow_soft_placement && !pinned) {
      DeviceName relaxed = request;
      relaxed.has_type = relaxed.has_id = false;
      for (size_t i = 0; i < devices.size(); ++i) {
        if (relaxed.Matches(parsed[i]) && has_kernel(i)) p.feasible[g].push_back(i);
      }
      c->group_soft[g] = !p.feasible[g].empty();
    }
    if (p.feasible[g].empty()) {
      std::string why =
          any_match ? absl::StrCat("no matching device has a kernel for it (kernels exist for: ",
                                   absl::StrJoin(kernels, ", "), ")")
                    : "no such device";
      std::string who =
          members.size() == 1
              ? absl::StrCat("node ", Describe(graph->node(members[0])))
              : absl::StrCat("node ", Describe(requester), " and its colocation group (",
                             members.size(), " nodes)");
      return absl::InvalidArgumentError(absl::StrCat(
          who, " was explicitly assigned to '", request.ToString(), "' but ", why, "; ", available,
          ". Change the device", pinned ? "" : ", or set allow_soft_placement"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string FormatNodePlacement(const NodePlacement& p) {
  std::string out = absl::StrCat("node '", p.node, "' (", p.op, ")\n");
  absl::StrAppend(&out, "  requested device:  ", p.requested.empty() ? "(none)" : p.requested,
                  "\n");
  std::vector<std::string> shown(p.group.begin(),
                                 p.group.begin() + std::min<size_t>(p.group.size(), 8));
  absl::StrAppend(&out, "  colocation group:  ", p.group.size(),
                  " node(s): ", absl::StrJoin(shown, ", "),
                  p.group.size() > shown.size() ? ", ..." : "", "\n");
  absl::StrAppend(&out,
                  "  group request:     ", p.group_request.empty() ? "(none)" : p.group_request,
                  p.soft ? "  (no device could satisfy it: relaxed by soft placement)" : "", "\n");
  absl::StrAppend(&out, "  kernels for:       ", absl::StrJoin(p.kernel_types, ", "), "\n");
  absl::StrAppend(&out, "  feasible devices:  ", absl::StrJoin(p.feasible, ", "), "\n");
  absl::StrAppend(&out, "  placed on:         ", p.device, "\n");
  absl::StrAppend(&out, "  why (", p.policy, "): ", p.reason, "\n");
  return out;
}

void DropColocationWithMissingNodes(Graph* graph) {
  for (Node* n : graph->nodes()) {
    auto it = n->attrs().find(kColocationAttr);
    if (it == n->attrs().end()) continue;
    AttrValue kept;
    kept.mutable_list();
    bool dropped = false;
    for (const std::string& entry : it->second.list().s()) {
      bool missing =
          absl::StartsWith(entry, kColocationPrefix) &&
          graph->FindNode(entry.substr(std::string(kColocationPrefix).size())) == nullptr;
      if (missing) {
        dropped = true;
      } else {
        kept.mutable_list()->add_s(entry);
      }
    }
    if (dropped) n->SetAttr(kColocationAttr, std::move(kept));
  }
}

absl::Status PlaceGraph(Graph* graph, const std::vector<DeviceAttributes>& devices,
                        const PlacerOptions& options, std::vector<NodePlacement>* report) {
  if (devices.empty()) return absl::FailedPreconditionError("no devices to place the graph on");
  SF_ASSIGN_OR_RETURN(std::unique_ptr<PlacementPolicy> policy, NewPlacementPolicy(options.policy));
  Constraints c;
  SF_RETURN_IF_ERROR(BuildConstraints(graph, devices, options, &c));
  DeviceTopology default_cluster;
  const DeviceTopology* cluster = options.topology;
  if (cluster == nullptr) {
    default_cluster = DeviceTopology::ForDevices(devices);
    cluster = &default_cluster;
  } else if (cluster->num_devices() != static_cast<int>(devices.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the cluster description lists ", cluster->num_devices(), " devices but ", devices.size(),
        " are being placed on; describe exactly the placement devices"));
  }
  CostModel default_costs;
  c.problem.topology = cluster;
  c.problem.costs = options.costs != nullptr ? options.costs : &default_costs;
  PlacementDecision decision;
  SF_RETURN_IF_ERROR(policy->Place(c.problem, &decision));
  for (Node* n : c.nodes) {
    int g = c.problem.group_of[n->id()];
    const std::string& device = devices[decision.group_device[g]].name;
    n->set_assigned_device(device);
    if (options.log_device_placement) {
      std::fprintf(stderr, "%s (%s) -> %s\n", n->name().c_str(), n->op().c_str(), device.c_str());
    }
    if (report == nullptr) continue;
    NodePlacement r;
    r.node = n->name();
    r.op = n->op();
    r.requested = n->requested_device();
    for (int id : c.problem.group_members[g]) r.group.push_back(graph->node(id)->name());
    r.group_request = c.group_request[g].ToString();
    r.kernel_types = c.group_kernels[g];
    for (int d : c.problem.feasible[g]) r.feasible.push_back(devices[d].name);
    r.soft = c.group_soft[g];
    r.device = device;
    r.policy = policy->name();
    r.reason = decision.reason[n->id()];
    report->push_back(std::move(r));
  }
  return absl::OkStatus();
}

absl::StatusOr<NodePlacement> ExplainPlacement(const GraphDef& graph_def,
                                               const std::vector<DeviceAttributes>& devices,
                                               const PlacerOptions& options,
                                               const std::string& node) {
  SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::FromGraphDef(graph_def));
  if (graph->FindNode(node) == nullptr) {
    return absl::NotFoundError(absl::StrCat("no node named '", node,
                                            "' in the graph; names are case-sensitive and "
                                            "include their scopes (e.g. 'dense/MatMul')"));
  }
  PlacerOptions quiet = options;
  quiet.log_device_placement = false;
  std::vector<NodePlacement> report;
  SF_RETURN_IF_ERROR(PlaceGraph(graph.get(), devices, quiet, &report));
  for (NodePlacement& r : report) {
    if (r.node == node) return std::move(r);
  }
  return absl::InternalError("placed node missing from the report");
}

}  // namespace shardflow
