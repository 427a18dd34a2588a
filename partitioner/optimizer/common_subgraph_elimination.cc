// common_subgraph_elimination: two pure nodes with the same op, attrs, devices, data inputs and
// control inputs compute the same values; the later one's consumers read the earlier one.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "core/platform/status.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "partitioner/optimizer/graph_optimizer.h"

namespace shardflow {
namespace {

// Attrs in name order, each serialized deterministically (a map inside an AttrValue would
// otherwise serialize in any order).
std::string AttrsKey(const Node& n) {
  std::map<std::string, const AttrValue*> sorted;
  for (const auto& [name, value] : n.attrs()) sorted[name] = &value;
  std::string out;
  for (const auto& [name, value] : sorted) {
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      value->SerializeToCodedStream(&coded);
    }
    absl::StrAppend(&out, name, "=", bytes.size(), ":", bytes, ";");
  }
  return out;
}

class CommonSubgraphElimination : public GraphOptimizationPass {
 public:
  const char* name() const override { return "common_subgraph_elimination"; }

  absl::Status Run(const GraphOptimizerOptions& options, Graph* graph,
                   std::vector<std::string>* changes) override {
    SF_ASSIGN_OR_RETURN(std::vector<Node*> order, graph->TopologicalOrder());
    // Inputs are named by their producer's id: producers come first in topological order, so a
    // producer that was merged already reads as its survivor.
    std::map<std::string, Node*> seen;
    for (Node* n : order) {
      if (optimizer::IsFixed(*n, options) || n->num_outputs() == 0) continue;
      std::string key =
          absl::StrCat(n->op(), "|", n->requested_device(), "|", n->assigned_device(), "|");
      bool connected = true;
      for (int i = 0; i < n->num_inputs(); ++i) {
        const Edge* in = n->input_edge(i);
        if (in == nullptr) {
          connected = false;
          break;
        }
        absl::StrAppend(&key, in->src->id(), ":", in->src_output, ",");
      }
      if (!connected) continue;
      std::vector<int> waits;
      for (const Edge* e : n->in_edges()) {
        if (e->IsControl()) waits.push_back(e->src->id());
      }
      std::sort(waits.begin(), waits.end());
      absl::StrAppend(&key, "|^");
      for (int w : waits) absl::StrAppend(&key, w, ",");
      absl::StrAppend(&key, "|", AttrsKey(*n));
      if (key.size() > (1 << 20)) continue;  // a large constant: not worth comparing byte by byte
      auto [it, inserted] = seen.emplace(std::move(key), n);
      if (inserted) continue;
      Node* survivor = it->second;
      for (int i = 0; i < n->num_outputs(); ++i) {
        SF_RETURN_IF_ERROR(optimizer::MoveOutputs(graph, n, i, survivor, i));
      }
      optimizer::MoveControlOutputs(graph, n, survivor);
      changes->push_back(
          absl::StrCat("merged '", n->name(), "' (", n->op(), ") into '", survivor->name(), "'"));
      graph->RemoveNode(n);
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<GraphOptimizationPass> NewCommonSubgraphElimination() {
  return std::make_unique<CommonSubgraphElimination>();
}

}  // namespace shardflow
