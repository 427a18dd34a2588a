// PartitionGraph: cuts a placed graph into one GraphDef per device.
//
//   std::map<std::string, GraphDef> parts;
//   SF_RETURN_IF_ERROR(PartitionGraph(graph, options, &parts));   // parts[device name]
//
// Every node goes to the partition of its assigned device. A data edge whose ends are on
// different devices becomes a _Send on the source device and a _Recv on the destination, one
// pair per (tensor, destination device) however many consumers the tensor has there. A control
// edge across devices becomes a dummy Const on the source device (after the source, by a
// control edge) sent to a _Recv on the destination, which the destination waits for. Node
// names of the inserted nodes start with "_send_", "_recv_" and "_ctrl_".
//
// Tensors that must stay in host memory (a kernel declares such arguments with
// KernelDef::HostMemory: shapes, axes, sizes) are marked on their transfer: the _Recv gets attr
// _host_memory = true when a consumer on its device needs the tensor in host memory, and the
// _Send when the producer keeps it there, so a device with its own memory (a GPU) delivers them
// to host memory instead of copying them to the device. On CPU devices all memory is host
// memory and the mark changes nothing.
#ifndef SHARDFLOW_PARTITIONER_PARTITION_H_
#define SHARDFLOW_PARTITIONER_PARTITION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/graph/graph.h"

namespace shardflow {

inline constexpr char kHostMemoryAttr[] = "_host_memory";

// Which inputs and outputs of `node` the kernel for `device_type` keeps in host memory.
absl::Status HostMemoryArgs(const Node& node, const std::string& device_type,
                            std::vector<bool>* inputs, std::vector<bool>* outputs);

struct PartitionOptions {
  // The incarnation of a device's process, written into rendezvous keys. Default: 1.
  std::function<uint64_t(const std::string& device)> incarnation;
};

// Error when a node has no assigned device.
absl::Status PartitionGraph(const Graph& graph, const PartitionOptions& options,
                            std::map<std::string, GraphDef>* partitions);

}  // namespace shardflow

#endif  // SHARDFLOW_PARTITIONER_PARTITION_H_
