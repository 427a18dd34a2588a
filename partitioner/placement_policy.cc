#include "partitioner/placement_policy.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/platform/status.h"
#include "partitioner/simulator.h"

namespace shardflow {
namespace {

// "CPU:1" for "/job:localhost/replica:0/task:0/device:CPU:1": enough in a reason.
std::string Short(const DeviceTopology& cluster, int d) {
  const std::string& name = cluster.device(d).name();
  size_t pos = name.find("/device:");
  return pos == std::string::npos ? name : name.substr(pos + 8);
}

class ConstraintsPolicy final : public PlacementPolicy {
 public:
  std::string name() const override { return "constraints"; }
  absl::Status Place(const PlacementProblem& p, PlacementDecision* out) const override {
    out->group_device.resize(p.feasible.size());
    out->reason.assign(p.graph->num_node_ids(), "");
    for (size_t g = 0; g < p.feasible.size(); ++g) {
      out->group_device[g] = p.feasible[g][0];
      for (int id : p.group_members[g]) {
        out->reason[id] = p.feasible[g].size() == 1
                              ? "the only device that satisfies its constraints"
                              : "the first device in the list that satisfies its constraints";
      }
    }
    return absl::OkStatus();
  }
};

// Earliest-finish-time list scheduling on the cost model, then simulator-checked local moves.
class CostPolicy final : public PlacementPolicy {
 public:
  explicit CostPolicy(CostPolicyOptions options) : options_(options) {}
  std::string name() const override { return "cost"; }

  absl::Status Place(const PlacementProblem& p, PlacementDecision* out) const override {
    const DeviceTopology& cluster = *p.topology;
    SF_ASSIGN_OR_RETURN(SimGraph g, BuildSimGraph(*p.graph, cluster, *p.costs));
    const int n_count = g.num_nodes;
    const int d_count = g.num_devices;
    const int g_count = static_cast<int>(p.feasible.size());
    out->reason.assign(p.graph->num_node_ids(), "");
    std::vector<int> group(n_count);
    for (int n = 0; n < n_count; ++n) group[n] = p.group_of[g.nodes[n]->id()];
    std::vector<int64_t> group_memory(g_count, 0);
    for (int n = 0; n < n_count; ++n) group_memory[group[n]] += g.memory[n];

    // Upward ranks with costs averaged over the feasible devices and links.
    double avg_latency = 0, avg_us_per_byte = 0;
    if (d_count > 1) {
      for (int a = 0; a < d_count; ++a) {
        for (int b = 0; b < d_count; ++b) {
          if (a == b) continue;
          double lat = cluster.TransferMicros(a, b, 0);
          avg_latency += lat;
          avg_us_per_byte += (cluster.TransferMicros(a, b, 1 << 20) - lat) / (1 << 20);
        }
      }
      const double pairs = d_count * (d_count - 1.0);
      avg_latency = avg_latency / pairs * (d_count - 1.0) / d_count;
      avg_us_per_byte = avg_us_per_byte / pairs * (d_count - 1.0) / d_count;
    }
    std::vector<double> avg_cost(n_count, 0.0), rank(n_count, 0.0);
    for (int n = 0; n < n_count; ++n) {
      const auto& f = p.feasible[group[n]];
      for (int d : f) avg_cost[n] += g.Cost(n, d);
      avg_cost[n] /= f.size();
    }
    for (int n = n_count - 1; n >= 0; --n) {
      double tail = 0;
      for (int ei : g.out_edges[n]) {
        const SimGraph::Edge& e = g.edges[ei];
        tail = std::max(tail, avg_latency + avg_us_per_byte * e.bytes + rank[e.dst]);
      }
      rank[n] = avg_cost[n] + tail;
    }

    std::vector<int> group_device(g_count, -1);
    std::vector<int64_t> used(d_count, 0);
    auto fits = [&](int grp, int d) {
      int64_t limit = cluster.device(d).memory_bytes();
      return limit <= 0 || used[d] + group_memory[grp] <= limit;
    };
    auto pin = [&](int grp, int d) {
      group_device[grp] = d;
      used[d] += group_memory[grp];
    };
    for (int grp = 0; grp < g_count; ++grp) {
      if (p.feasible[grp].size() == 1) {
        if (!fits(grp, p.feasible[grp][0])) return OutOfMemory(p, grp, group_memory[grp]);
        pin(grp, p.feasible[grp][0]);
      }
    }

    std::vector<int> dev(n_count, -1);
    std::vector<double> finish(n_count, 0.0);
    std::vector<char> deferred(n_count, 0);
    std::vector<std::vector<double>> lanes(d_count);
    for (int d = 0; d < d_count; ++d) lanes[d].assign(std::max(1, cluster.device(d).slots()), 0);
    std::vector<int> pending(n_count);
    using Item = std::pair<double, int>;  // (rank, -node): highest rank, then topological order
    std::priority_queue<Item> ready;
    for (int n = 0; n < n_count; ++n) {
      pending[n] = static_cast<int>(g.in_edges[n].size());
      if (pending[n] == 0) ready.push({rank[n], -n});
    }
    // The device a deferred (not yet placed) node will get if its consumer goes to `d`.
    auto deferred_device = [&](int node, int d) {
      int grp = group[node];
      if (group_device[grp] >= 0) return group_device[grp];
      const auto& f = p.feasible[grp];
      return std::find(f.begin(), f.end(), d) != f.end() ? d : f[0];
    };
    // Places the deferred ancestors of `node` (just placed on `d`) by the same rule.
    auto place_deferred_inputs = [&](int node, int d) -> absl::Status {
      std::vector<int> stack = {node};
      while (!stack.empty()) {
        int m = stack.back();
        stack.pop_back();
        for (int ei : g.in_edges[m]) {
          int src = g.edges[ei].src;
          if (!deferred[src] || dev[src] >= 0) continue;
          int grp = group[src];
          if (group_device[grp] < 0) {
            int want = deferred_device(src, d);
            if (!fits(grp, want)) {
              want = -1;
              for (int c : p.feasible[grp]) {
                if (fits(grp, c)) {
                  want = c;
                  break;
                }
              }
              if (want < 0) return OutOfMemory(p, grp, group_memory[grp]);
            }
            pin(grp, want);
          }
          dev[src] = group_device[grp];
          out->reason[g.nodes[src]->id()] =
              absl::StrCat("does no work of its own, so it goes where its first consumer '",
                           g.nodes[node]->name(), "' goes (cost policy)");
          stack.push_back(src);
        }
      }
      return absl::OkStatus();
    };

    while (!ready.empty()) {
      const int n = -ready.top().second;
      ready.pop();
      const int grp = group[n];
      const int node_id = g.nodes[n]->id();
      bool inputs_deferred = true;
      for (int ei : g.in_edges[n]) inputs_deferred &= deferred[g.edges[ei].src] != 0;
      if (group_device[grp] < 0 && avg_cost[n] <= kCheapMicros && inputs_deferred) {
        deferred[n] = 1;
      } else {
        std::vector<int> candidates;
        if (group_device[grp] >= 0) {
          candidates = {group_device[grp]};
        } else {
          for (int d : p.feasible[grp]) {
            if (fits(grp, d)) candidates.push_back(d);
          }
          if (candidates.empty()) return OutOfMemory(p, grp, group_memory[grp]);
        }
        struct Option {
          int d;
          double ready, finish;
        };
        std::vector<Option> options;
        for (int d : candidates) {
          double data_ready = 0;
          for (int ei : g.in_edges[n]) {
            const SimGraph::Edge& e = g.edges[ei];
            int src_dev = dev[e.src] >= 0 ? dev[e.src] : deferred_device(e.src, d);
            double arrival = finish[e.src] + cluster.TransferMicros(src_dev, d, e.bytes);
            data_ready = std::max(data_ready, arrival);
          }
          double lane = *std::min_element(lanes[d].begin(), lanes[d].end());
          options.push_back({d, data_ready, std::max(data_ready, lane) + g.Cost(n, d)});
        }
        std::stable_sort(options.begin(), options.end(),
                         [](const Option& a, const Option& b) { return a.finish < b.finish; });
        const Option& best = options[0];
        dev[n] = best.d;
        finish[n] = best.finish;
        *std::min_element(lanes[best.d].begin(), lanes[best.d].end()) = best.finish;
        if (group_device[grp] < 0) pin(grp, best.d);
        std::string why;
        if (options.size() == 1) {
          why = p.feasible[grp].size() == 1
                    ? "the only device that satisfies its constraints"
                    : absl::StrCat("its colocation group is already on ", Short(cluster, best.d));
        } else {
          why = absl::StrFormat(
              "earliest finish: %.1f us on %s (inputs ready at %.1f us, compute %.1f us)",
              best.finish, Short(cluster, best.d), best.ready, g.Cost(n, best.d));
          for (size_t i = 1; i < options.size() && i < 3; ++i) {
            absl::StrAppendFormat(&why, "; %s would finish at %.1f us",
                                  Short(cluster, options[i].d), options[i].finish);
          }
        }
        out->reason[node_id] = absl::StrCat(why, " (cost policy, list scheduling)");
        SF_RETURN_IF_ERROR(place_deferred_inputs(n, best.d));
      }
      for (int ei : g.out_edges[n]) {
        int dst = g.edges[ei].dst;
        if (--pending[dst] == 0) ready.push({rank[dst], -dst});
      }
    }
    // Groups nothing placed (only cheap nodes without consumers): first device that fits.
    for (int grp = 0; grp < g_count; ++grp) {
      if (group_device[grp] >= 0) continue;
      for (int d : p.feasible[grp]) {
        if (fits(grp, d)) {
          pin(grp, d);
          break;
        }
      }
      if (group_device[grp] < 0) return OutOfMemory(p, grp, group_memory[grp]);
      for (int id : p.group_members[grp]) {
        if (out->reason[id].empty()) {
          out->reason[id] = "nothing it feeds was placed first; the first feasible device";
        }
      }
    }
    // Local search from several starts: the list schedule, and every device alone (list
    // scheduling is greedy: with slow links the best step often keeps everything together).
    struct Start {
      std::vector<int> group_device;
      std::vector<int64_t> used;
      std::vector<std::string> reason;
      double micros = 0;
    };
    std::vector<Start> starts;
    starts.push_back({group_device, used, out->reason, 0});
    for (int d = 0; d < d_count; ++d) {
      Start all{std::vector<int>(g_count, d), std::vector<int64_t>(d_count, 0), out->reason, 0};
      bool ok = true;
      for (int grp = 0; grp < g_count && ok; ++grp) {
        const auto& f = p.feasible[grp];
        ok = std::find(f.begin(), f.end(), d) != f.end();
        all.used[d] += group_memory[grp];
      }
      int64_t limit = cluster.device(d).memory_bytes();
      if (!ok || (limit > 0 && all.used[d] > limit) || all.group_device == group_device) continue;
      for (int n = 0; n < n_count; ++n) {
        if (p.feasible[group[n]].size() > 1) {
          all.reason[g.nodes[n]->id()] =
              absl::StrCat("the whole graph on ", Short(cluster, d),
                           " simulated faster than list scheduling's placement (cost policy)");
        }
      }
      starts.push_back(std::move(all));
    }
    const int64_t budget = options_.refine_budget_node_visits / static_cast<int64_t>(starts.size());
    size_t best = 0;
    for (size_t i = 0; i < starts.size(); ++i) {
      Start& st = starts[i];
      st.micros = Refine(p, g, group, group_memory, budget, &st.used, &st.group_device, &st.reason);
      if (st.micros < starts[best].micros * (1 - 1e-9)) best = i;
    }
    out->group_device = std::move(starts[best].group_device);
    out->reason = std::move(starts[best].reason);
    return absl::OkStatus();
  }

 private:
  static constexpr double kCheapMicros = 0.5;

  // Moves one group at a time to another feasible device while the simulated step gets
  // faster, within the budget of simulated node visits.
  // Returns the simulated step time of the refined placement.
  double Refine(const PlacementProblem& p, const SimGraph& g, const std::vector<int>& group,
                const std::vector<int64_t>& group_memory, int64_t budget,
                std::vector<int64_t>* used, std::vector<int>* group_device,
                std::vector<std::string>* reason) const {
    const DeviceTopology& cluster = *p.topology;
    const int g_count = static_cast<int>(group_device->size());
    std::vector<int> where(g.num_nodes);
    for (int n = 0; n < g.num_nodes; ++n) where[n] = (*group_device)[group[n]];
    double best = SimulateStepMicros(g, where, cluster);
    int64_t visits = g.num_nodes;
    bool improved = true;
    while (improved && visits < budget) {
      improved = false;
      for (int grp = 0; grp < g_count && visits < budget; ++grp) {
        if (p.feasible[grp].size() < 2) continue;
        const int from = (*group_device)[grp];
        for (int d : p.feasible[grp]) {
          if (d == from || visits >= budget) continue;
          int64_t limit = cluster.device(d).memory_bytes();
          if (limit > 0 && (*used)[d] + group_memory[grp] > limit) continue;
          for (int id : p.group_members[grp]) where[g.index_of[id]] = d;
          double t = SimulateStepMicros(g, where, cluster);
          visits += g.num_nodes;
          if (t < best * (1 - 1e-9)) {
            for (int id : p.group_members[grp]) {
              (*reason)[id] = absl::StrFormat(
                  "moved from %s to %s by local search: the simulated step went from "
                  "%.2f to %.2f us (cost policy, refinement)",
                  Short(cluster, (*group_device)[grp]), Short(cluster, d), best, t);
            }
            (*used)[(*group_device)[grp]] -= group_memory[grp];
            (*used)[d] += group_memory[grp];
            (*group_device)[grp] = d;
            best = t;
            improved = true;
          } else {
            for (int id : p.group_members[grp]) where[g.index_of[id]] = (*group_device)[grp];
          }
        }
      }
    }
    return best;
  }

  static absl::Status OutOfMemory(const PlacementProblem& p, int grp, int64_t bytes) {
    std::string limits;
    for (int d : p.feasible[grp]) {
      absl::StrAppend(&limits, limits.empty() ? "" : ", ", p.topology->device(d).name(), " (",
                      p.topology->device(d).memory_bytes(), " bytes)");
    }
    const Node* first = p.graph->node(p.group_members[grp][0]);
    return absl::ResourceExhaustedError(absl::StrCat(
        "node '", first->name(), "' (", first->op(), ") and its colocation group need ", bytes,
        " bytes, more than is left on any device it may run on: ", limits,
        ". Raise the memory limits, add devices, or place some large tensors explicitly"));
  }

  CostPolicyOptions options_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> NewConstraintsPolicy() {
  return std::make_unique<ConstraintsPolicy>();
}

std::unique_ptr<PlacementPolicy> NewCostPolicy(CostPolicyOptions options) {
  return std::make_unique<CostPolicy>(options);
}

absl::StatusOr<std::unique_ptr<PlacementPolicy>> NewPlacementPolicy(const std::string& name) {
  if (name.empty() || name == "constraints") return NewConstraintsPolicy();
  if (name == "cost") return NewCostPolicy();
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown placement policy '", name, "'; the policies are \"constraints\" and \"cost\""));
}

}  // namespace shardflow
