#include "partitioner/partition.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_names.h"

namespace shardflow {
namespace {

// A name part safe for node names: '/' and ':' become '_'.
std::string Mangle(const std::string& s) {
  return absl::StrReplaceAll(s, {{"/", "_"}, {":", "_"}});
}

}  // namespace

absl::Status HostMemoryArgs(const Node& node, const std::string& device_type,
                            std::vector<bool>* inputs, std::vector<bool>* outputs) {
  return KernelRegistry::Global()->HostMemoryArgs(node.def(), device_type, node.num_inputs(),
                                                  node.num_outputs(), inputs, outputs);
}

namespace {

std::string DeviceType(const std::string& device) {
  auto parsed = DeviceName::Parse(device);
  return parsed.ok() && parsed->has_type ? parsed->type : "CPU";
}

class Partitioner {
 public:
  Partitioner(const PartitionOptions& options, std::map<std::string, GraphDef>* parts)
      : options_(options), parts_(parts) {}

  absl::Status Run(const Graph& graph) {
    for (Node* n : graph.nodes()) {
      if (n->assigned_device().empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("node '", n->name(), "' (", n->op(),
                         ") has no assigned device; place the graph first"));
      }
      (*parts_)[n->assigned_device()];  // every device gets a partition, even if empty
    }
    for (Node* n : graph.nodes()) {
      const std::string& device = n->assigned_device();
      NodeDef* def = (*parts_)[device].add_node();
      *def = n->def();
      def->clear_input();
      std::vector<bool> host_in, host_out;
      HostMemoryArgs(*n, DeviceType(device), &host_in, &host_out).IgnoreError();
      for (int i = 0; i < n->num_inputs(); ++i) {
        const Edge* e = n->input_edge(i);
        if (e->src->assigned_device() == device) {
          def->add_input(TensorRefString(e->src->name(), e->src_output));
          continue;
        }
        std::string recv = RecvFor(e->src, e->src_output, device);
        def->add_input(recv);
        if (host_in[i]) MarkHostMemory(device, recv);
      }
      for (const Edge* e : n->in_edges()) {
        if (!e->IsControl()) continue;
        def->add_input(absl::StrCat("^", e->src->assigned_device() == device
                                             ? e->src->name()
                                             : ControlRecvFor(e->src, device)));
      }
    }
    return absl::OkStatus();
  }

 private:
  uint64_t Incarnation(const std::string& device) const {
    return options_.incarnation ? options_.incarnation(device) : 1;
  }

  NodeDef* AddTransfer(const std::string& op, const std::string& name, const std::string& device,
                       DataType dtype, const std::string& tensor_name,
                       const std::string& send_device, const std::string& recv_device) {
    NodeDef* def = (*parts_)[device].add_node();
    def->set_name(name);
    def->set_op(op);
    def->set_device(device);
    def->set_assigned_device(device);
    auto& attr = *def->mutable_attr();
    attr["T"] = MakeAttr(dtype);
    attr["tensor_name"] = MakeAttr(tensor_name);
    attr["send_device"] = MakeAttr(send_device);
    attr["recv_device"] = MakeAttr(recv_device);
    attr["send_device_incarnation"] = MakeAttr(static_cast<int64_t>(Incarnation(send_device)));
    return def;
  }

  // The _Recv on `dst_device` for output `index` of `src` (created with its _Send once).
  std::string RecvFor(const Node* src, int index, const std::string& dst_device) {
    std::string tensor = TensorRefString(src->name(), index);
    std::string key = absl::StrCat(tensor, "->", dst_device);
    auto it = recvs_.find(key);
    if (it != recvs_.end()) return it->second;
    std::string suffix = absl::StrCat(Mangle(src->name()), "_", index, "_to_", Mangle(dst_device));
    const std::string& src_device = src->assigned_device();
    NodeDef* send = AddTransfer("_Send", "_send_" + suffix, src_device, src->output_type(index),
                                tensor, src_device, dst_device);
    send->add_input(tensor);
    std::vector<bool> host_in, host_out;
    HostMemoryArgs(*src, DeviceType(src_device), &host_in, &host_out).IgnoreError();
    if (index < static_cast<int>(host_out.size()) && host_out[index]) {
      (*send->mutable_attr())[kHostMemoryAttr] = MakeAttr(true);
    }
    AddTransfer("_Recv", "_recv_" + suffix, dst_device, src->output_type(index), tensor, src_device,
                dst_device);
    return recvs_[key] = "_recv_" + suffix;
  }

  // A _Recv on `dst_device` that completes after `src` ran (a control edge across devices).
  std::string ControlRecvFor(const Node* src, const std::string& dst_device) {
    std::string key = absl::StrCat("^", src->name(), "->", dst_device);
    auto it = recvs_.find(key);
    if (it != recvs_.end()) return it->second;
    std::string suffix = absl::StrCat(Mangle(src->name()), "_to_", Mangle(dst_device));
    const std::string& src_device = src->assigned_device();
    NodeDef* dummy = (*parts_)[src_device].add_node();
    dummy->set_name("_ctrl_" + suffix);
    dummy->set_op(kConstOp);
    dummy->set_device(src_device);
    dummy->set_assigned_device(src_device);
    (*dummy->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
    (*dummy->mutable_attr())["value"] = MakeAttr(Tensor::Scalar(0.0f));
    dummy->add_input("^" + src->name());
    std::string tensor = TensorRefString(dummy->name(), 0);
    NodeDef* send = AddTransfer("_Send", "_send_ctrl_" + suffix, src_device, DT_FLOAT, tensor,
                                src_device, dst_device);
    send->add_input(tensor);
    AddTransfer("_Recv", "_recv_ctrl_" + suffix, dst_device, DT_FLOAT, tensor, src_device,
                dst_device);
    return recvs_[key] = "_recv_ctrl_" + suffix;
  }

  // Marks the _Recv `name` on `device`: a consumer needs its tensor in host memory.
  void MarkHostMemory(const std::string& device, const std::string& name) {
    for (NodeDef& n : *(*parts_)[device].mutable_node()) {
      if (n.name() == name) (*n.mutable_attr())[kHostMemoryAttr] = MakeAttr(true);
    }
  }

  const PartitionOptions& options_;
  std::map<std::string, GraphDef>* parts_;
  std::map<std::string, std::string> recvs_;
};

}  // namespace

absl::Status PartitionGraph(const Graph& graph, const PartitionOptions& options,
                            std::map<std::string, GraphDef>* partitions) {
  partitions->clear();
  return Partitioner(options, partitions).Run(graph);
}

}  // namespace shardflow
