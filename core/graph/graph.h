// Graph: nodes (operations) connected by data edges (a tensor flows from an output slot to an
// input slot) and control edges (the destination waits for the source; nothing flows).
//
// A Graph is built either by the C++ API in ops/ (node by node, with shape inference as each
// node is added) or from a GraphDef, which is validated whole:
//
//   SF_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::FromGraphDef(def));
//   for (Node* n : g->nodes()) ...
//   GraphDef out; g->ToGraphDef(&out);
//
// Ownership: the Graph owns its nodes and edges; Node* and Edge* stay valid until removed or
// the graph is destroyed.
// Thread safety: const methods may be called concurrently; mutation needs exclusive access.
#ifndef SHARDFLOW_CORE_GRAPH_GRAPH_H_
#define SHARDFLOW_CORE_GRAPH_GRAPH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/framework/attr_value.h"
#include "core/framework/node_def_util.h"
#include "core/framework/op_def.h"
#include "core/framework/op_names.h"
#include "core/framework/tensor.h"
#include "core/protos/graph.pb.h"

namespace shardflow {

class Node;

struct Edge {
  static constexpr int kControlSlot = -1;
  int id = -1;
  Node* src = nullptr;
  int src_output = 0;
  Node* dst = nullptr;
  int dst_input = 0;
  bool IsControl() const { return src_output == kControlSlot; }
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return def_.name(); }
  const std::string& op() const { return def_.op(); }
  const OpDef& op_def() const { return *op_def_; }
  // The node's definition; its `input` field is not kept up to date (edges are the truth).
  const NodeDef& def() const { return def_; }
  const AttrMap& attrs() const { return def_.attr(); }
  void SetAttr(const std::string& name, AttrValue value);

  int num_inputs() const { return static_cast<int>(input_types_.size()); }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  DataType input_type(int i) const { return input_types_[i]; }
  DataType output_type(int i) const { return output_types_[i]; }
  const DataTypeVector& input_types() const { return input_types_; }
  const DataTypeVector& output_types() const { return output_types_; }

  const std::vector<const Edge*>& in_edges() const { return in_edges_; }
  const std::vector<const Edge*>& out_edges() const { return out_edges_; }
  // The data edge into input slot i, or null when not connected.
  const Edge* input_edge(int i) const { return input_edges_[i]; }

  const std::string& requested_device() const { return def_.device(); }
  void set_requested_device(const std::string& d) { def_.set_device(d); }
  const std::string& assigned_device() const { return def_.assigned_device(); }
  void set_assigned_device(const std::string& d) { def_.set_assigned_device(d); }

  // Inferred shape of output i (unknown before inference).
  const TensorShape& output_shape(int i) const { return output_shapes_[i]; }
  // The value of a Const node (parsed once), or null for any other node.
  const Tensor* constant_value() const;
  bool IsConstant() const { return def_.op() == kConstOp; }

 private:
  friend class Graph;
  int id_ = -1;
  NodeDef def_;
  const OpDef* op_def_ = nullptr;
  DataTypeVector input_types_;
  DataTypeVector output_types_;
  std::vector<const Edge*> in_edges_;
  std::vector<const Edge*> out_edges_;
  std::vector<const Edge*> input_edges_;
  std::vector<TensorShape> output_shapes_;
  mutable std::unique_ptr<Tensor> constant_;
};

class Graph {
 public:
  // `registry` is borrowed and must outlive the graph.
  explicit Graph(const OpRegistry* registry = OpRegistry::Global());
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Validates the op and attrs (adding defaults) and computes the argument types. `def.input` is
  // ignored: connect inputs with AddEdge. Error when the name is empty or already used.
  absl::StatusOr<Node*> AddNode(NodeDef def);
  // Checks slot ranges, that dst_input is still free and that the dtypes agree.
  absl::StatusOr<const Edge*> AddEdge(Node* src, int src_output, Node* dst, int dst_input);
  // No-op (returns the existing edge) when the same control edge exists already.
  const Edge* AddControlEdge(Node* src, Node* dst);
  void RemoveEdge(const Edge* edge);
  // Removes the node and all its edges.
  void RemoveNode(Node* node);

  Node* FindNode(absl::string_view name) const;
  // Null for removed ids.
  Node* node(int id) const { return nodes_[id].get(); }
  int num_node_ids() const { return static_cast<int>(nodes_.size()); }
  int num_nodes() const { return num_nodes_; }
  int num_edge_ids() const { return static_cast<int>(edges_.size()); }
  // Live nodes in id order.
  std::vector<Node*> nodes() const;
  // A name not used yet: `base`, else `base_1`, `base_2`, ...
  std::string UniqueName(const std::string& base) const;

  // Runs the node's shape function on its inputs' current output shapes.
  absl::Status InferShapes(Node* node);
  // Every node once, each after all of its inputs (data and control). Errors name the nodes of a
  // cycle, or a node with an unconnected data input.
  absl::StatusOr<std::vector<Node*>> TopologicalOrder() const;

  // Nodes in topological order when the graph is acyclic, else in id order.
  void ToGraphDef(GraphDef* out) const;
  // Builds and fully validates a graph: unknown ops, bad attrs, duplicate names, missing or
  // dangling inputs, out-of-range output slots, dtype mismatches, cycles, incompatible shapes.
  static absl::StatusOr<std::unique_ptr<Graph>> FromGraphDef(
      const GraphDef& def, const OpRegistry* registry = OpRegistry::Global());

  const OpRegistry* registry() const { return registry_; }

 private:
  const OpRegistry* registry_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Edge>> edges_;
  absl::flat_hash_map<std::string, Node*> by_name_;
  // Next suffix to try per base name, so UniqueName stays O(1) amortised.
  mutable absl::flat_hash_map<std::string, int> next_suffix_;
  int num_nodes_ = 0;
};

// Parses an input reference "node", "node:2" or "^node" (control).
struct TensorRef {
  std::string node;
  int index = 0;  // Edge::kControlSlot for "^node"
};
absl::StatusOr<TensorRef> ParseTensorRef(absl::string_view ref);
// "node:0" -> "node:0"; "node" -> "node:0".
std::string TensorRefString(const std::string& node, int index);

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_GRAPH_GRAPH_H_
