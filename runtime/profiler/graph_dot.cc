#include "runtime/profiler/graph_dot.h"

#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/op_names.h"
#include "runtime/profiler/transfers.h"

namespace shardflow {
namespace {

constexpr char kUnplaced[] = "(unplaced)";

std::string DotQuote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

struct DotNode {
  const NodeDef* def;
  std::string device;
  int graph;  // index into the graphs drawn
};

// The nodes to draw and how to find them by name.
class DotGraph {
 public:
  DotGraph(const GraphDef& graph, const RunMetadata* md) {
    std::vector<const GraphDef*> graphs;
    if (md != nullptr && md->partition_graphs_size() > 0) {
      for (const GraphDef& g : md->partition_graphs()) graphs.push_back(&g);
    } else {
      graphs.push_back(&graph);
    }
    for (int gi = 0; gi < static_cast<int>(graphs.size()); ++gi) {
      for (const NodeDef& n : graphs[gi]->node()) {
        std::string device = n.assigned_device();
        if (device.empty() && md != nullptr) {
          auto it = md->placement().find(n.name());
          if (it != md->placement().end()) device = it->second;
        }
        if (device.empty()) device = n.device();
        if (device.empty()) device = kUnplaced;
        by_graph_name_[{gi, n.name()}] = nodes_.size();
        by_name_.emplace(n.name(), nodes_.size());
        nodes_.push_back({&n, device, gi});
      }
    }
  }

  const std::vector<DotNode>& nodes() const { return nodes_; }

  // The node an input of node `from` names, or -1.
  int Find(int from, const std::string& name) const {
    auto it = by_graph_name_.find({nodes_[from].graph, name});
    if (it != by_graph_name_.end()) return it->second;
    auto global = by_name_.find(name);
    return global == by_name_.end() ? -1 : static_cast<int>(global->second);
  }

 private:
  std::vector<DotNode> nodes_;
  absl::flat_hash_map<std::pair<int, std::string>, size_t> by_graph_name_;
  absl::flat_hash_map<std::string, size_t> by_name_;  // first node with the name
};

// Recorded output bytes by (node name, slot) from the step stats.
absl::flat_hash_map<std::pair<std::string, int>, int64_t> OutputBytesByName(const RunMetadata* md) {
  absl::flat_hash_map<std::pair<std::string, int>, int64_t> bytes;
  if (md == nullptr) return bytes;
  for (const DeviceStepStats& dev : md->step_stats().dev_stats()) {
    for (const NodeExecStats& ns : dev.node_stats()) {
      for (const NodeOutputStats& out : ns.output()) {
        bytes[{ns.node_name(), out.slot()}] = out.bytes();
      }
    }
  }
  return bytes;
}

std::string EdgeLine(int src, int dst, bool control, bool crossing, const std::string& label) {
  std::vector<std::string> attrs;
  if (control) attrs.push_back(crossing ? "style=\"bold,dashed\"" : "style=\"dashed\"");
  if (!control && crossing) attrs.push_back("style=\"bold\"");
  if (crossing) attrs.push_back("penwidth=2, color=\"#c0392b\"");
  if (!label.empty()) attrs.push_back(absl::StrCat("label=", DotQuote(label)));
  std::string line = absl::StrCat("  n", src, " -> n", dst);
  if (!attrs.empty()) absl::StrAppend(&line, " [", absl::StrJoin(attrs, ", "), "]");
  return absl::StrCat(line, ";\n");
}

}  // namespace

const std::vector<std::string>& DevicePalette() {
  // ColorBrewer Set3: light, distinct, readable under black text.
  static const auto* const kPalette = new std::vector<std::string>{
      "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
      "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};
  return *kPalette;
}

std::string PlacedGraphDot(const GraphDef& graph, const RunMetadata* md) {
  DotGraph g(graph, md);
  const std::vector<DotNode>& nodes = g.nodes();
  std::map<std::string, std::vector<int>> by_device;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) by_device[nodes[i].device].push_back(i);

  std::string out =
      "digraph placed_graph {\n  rankdir=TB;\n  node [shape=box, style=\"filled,rounded\", "
      "fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n";
  const std::vector<std::string>& palette = DevicePalette();
  int cluster = 0;
  for (const auto& [device, members] : by_device) {
    const bool placed = device != kUnplaced;
    const std::string color = placed ? palette[cluster % palette.size()] : "#ffffff";
    const std::string indent = placed ? "    " : "  ";
    if (placed) {
      absl::StrAppend(&out, "  subgraph \"cluster_", cluster, "\" {\n    label=", DotQuote(device),
                      ";\n    style=\"rounded,bold\";\n    color=", DotQuote(color), ";\n");
      ++cluster;
    }
    for (int i : members) {
      const NodeDef& n = *nodes[i].def;
      const bool transfer = n.op() == kSendOp || n.op() == kRecvOp;
      absl::StrAppend(&out, indent, "n", i, " [label=", DotQuote(n.name() + "\n" + n.op()),
                      ", fillcolor=", DotQuote(color), transfer ? ", shape=cds" : "", "];\n");
    }
    if (placed) absl::StrAppend(&out, "  }\n");
  }

  const auto output_bytes = OutputBytesByName(md);
  for (int dst = 0; dst < static_cast<int>(nodes.size()); ++dst) {
    for (const std::string& input : nodes[dst].def->input()) {
      const bool control = !input.empty() && input[0] == '^';
      std::string name = control ? input.substr(1) : input;
      int slot = 0;
      size_t colon = name.rfind(':');
      if (!control && colon != std::string::npos &&
          absl::SimpleAtoi(absl::string_view(name).substr(colon + 1), &slot)) {
        name.resize(colon);
      }
      int src = g.Find(dst, name);
      if (src < 0) continue;
      const bool crossing = nodes[src].device != nodes[dst].device;
      std::string label;
      auto it = output_bytes.find({name, slot});
      if (crossing && !control && it != output_bytes.end()) label = FormatBytes(it->second);
      absl::StrAppend(&out, EdgeLine(src, dst, control, crossing, label));
    }
  }

  // _Send -> _Recv pairs, labelled with the bytes their transfers moved.
  std::map<TransferKey, std::pair<std::vector<int>, std::vector<int>>> ends;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    TransferKey key;
    const std::string& op = nodes[i].def->op();
    if ((op != "_Send" && op != "_Recv") || !TransferKeyOf(*nodes[i].def, &key)) continue;
    (op == "_Send" ? ends[key].first : ends[key].second).push_back(i);
  }
  std::map<TransferKey, std::pair<int64_t, int64_t>> moved;  // bytes, transfers with bytes
  if (md != nullptr) {
    for (const Transfer& t : MatchTransfers(*md)) {
      if (t.bytes < 0) continue;
      moved[t.key].first += t.bytes;
      ++moved[t.key].second;
    }
  }
  for (const auto& [key, sr] : ends) {
    std::string label;
    auto it = moved.find(key);
    if (it != moved.end()) {
      label = FormatBytes(it->second.first);
      if (it->second.second > 1) absl::StrAppend(&label, " (", it->second.second, " transfers)");
    }
    for (int s : sr.first) {
      for (int r : sr.second) absl::StrAppend(&out, EdgeLine(s, r, false, true, label));
    }
  }
  return absl::StrCat(out, "}\n");
}

}  // namespace shardflow
