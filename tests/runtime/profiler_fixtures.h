// Hand-built RunMetadata for the profiler tests: two devices, two transfers, exact times.
#ifndef SHARDFLOW_TESTS_RUNTIME_PROFILER_FIXTURES_H_
#define SHARDFLOW_TESTS_RUNTIME_PROFILER_FIXTURES_H_

#include <string>
#include <utility>
#include <vector>

#include "core/protos/config.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace shardflow {
namespace profiler_test {

using Json = nlohmann::json;

constexpr char kA[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kB[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr int64_t kT = 1700000000000000;  // µs since the epoch

inline NodeExecStats* AddStats(RunMetadata* md, const std::string& device, const std::string& name,
                               const std::string& op, int64_t start, int64_t end, int64_t thread,
                               int64_t output_bytes = -1, int64_t alloc = 0) {
  DeviceStepStats* dev = nullptr;
  for (auto& d : *md->mutable_step_stats()->mutable_dev_stats()) {
    if (d.device() == device) dev = &d;
  }
  if (dev == nullptr) {
    dev = md->mutable_step_stats()->add_dev_stats();
    dev->set_device(device);
  }
  NodeExecStats* ns = dev->add_node_stats();
  ns->set_node_name(name);
  ns->set_op(op);
  ns->set_start_micros(kT + start);
  ns->set_end_micros(kT + end);
  ns->set_thread_id(thread);
  ns->set_allocator_bytes_in_use(alloc);
  if (output_bytes >= 0) {
    NodeOutputStats* out = ns->add_output();
    out->set_slot(0);
    out->set_dtype(DT_FLOAT);
    out->mutable_shape()->add_dim(output_bytes / 4);
    out->set_bytes(output_bytes);
  }
  return ns;
}

inline NodeDef* AddNode(GraphDef* g, const std::string& name, const std::string& op,
                        const std::string& device, std::vector<std::string> inputs = {}) {
  NodeDef* n = g->add_node();
  n->set_name(name);
  n->set_op(op);
  n->set_assigned_device(device);
  for (const auto& in : inputs) n->add_input(in);
  return n;
}

inline void AddTransferAttrs(NodeDef* n, const std::string& tensor, const std::string& from,
                             const std::string& to) {
  (*n->mutable_attr())["tensor_name"].set_s(tensor);
  (*n->mutable_attr())["send_device"].set_s(from);
  (*n->mutable_attr())["recv_device"].set_s(to);
  (*n->mutable_attr())["send_device_incarnation"].set_i(1);
  (*n->mutable_attr())["T"].set_type(DT_FLOAT);
}

// The unpartitioned graph: a/MatMul, a/Add, final on A; b/Relu, b/Relu2, b/late on B.
inline GraphDef OriginalGraph() {
  GraphDef g;
  AddNode(&g, "a/MatMul", "MatMul", kA);
  AddNode(&g, "a/Add", "Add", kA, {"a/MatMul"});
  AddNode(&g, "b/Relu", "Relu", kB, {"a/MatMul:0"});
  AddNode(&g, "b/Relu2", "Relu", kB, {"a/MatMul"});
  AddNode(&g, "b/late", "NoOp", kB, {"^b/Relu2"});
  AddNode(&g, "final", "Identity", kA, {"b/Relu", "^a/Add"});
  return g;
}

// Two devices, two transfers: a/MatMul:0 A->B (send1 -> recv1, 24 bytes recorded by the
// _Recv) and b/Relu:0 B->A (send2 -> recv2, 64 bytes recorded only by the _Send).
inline RunMetadata TwoDeviceMetadata(bool with_partitions = true) {
  RunMetadata md;
  AddStats(&md, kA, "a/MatMul", "MatMul", 0, 100, 7, 24, 1000);
  AddStats(&md, kA, "a/Add", "Add", 50, 150, 9, -1, 2000);
  AddStats(&md, kA, "send1", "_Send", 150, 160, 7, -1, 2000);
  AddStats(&md, kA, "recv2", "_Recv", 300, 320, 7, -1, 2064);
  AddStats(&md, kA, "final", "Identity", 400, 410, 7, 64, 2064);
  AddStats(&md, kB, "recv1", "_Recv", 20, 170, 3, 24, 24);
  AddStats(&md, kB, "b/Relu", "Relu", 170, 250, 3, 64, 88);
  AddStats(&md, kB, "b/Relu2", "Relu", 200, 260, 4, 24, 112);
  AddStats(&md, kB, "send2", "_Send", 260, 270, 3, 64, 112);
  AddStats(&md, kB, "b/late", "NoOp", 490, 500, 3);
  if (!with_partitions) return md;
  GraphDef* ga = md.add_partition_graphs();
  AddNode(ga, "a/MatMul", "MatMul", kA);
  AddNode(ga, "a/Add", "Add", kA, {"a/MatMul"});
  AddTransferAttrs(AddNode(ga, "send1", "_Send", kA, {"a/MatMul:0"}), "a/MatMul:0", kA, kB);
  AddTransferAttrs(AddNode(ga, "recv2", "_Recv", kA), "b/Relu:0", kB, kA);
  AddNode(ga, "final", "Identity", kA, {"recv2", "^a/Add"});
  GraphDef* gb = md.add_partition_graphs();
  AddTransferAttrs(AddNode(gb, "recv1", "_Recv", kB), "a/MatMul:0", kA, kB);
  AddNode(gb, "b/Relu", "Relu", kB, {"recv1"});
  AddNode(gb, "b/Relu2", "Relu", kB, {"recv1:0"});
  AddTransferAttrs(AddNode(gb, "send2", "_Send", kB, {"b/Relu"}), "b/Relu:0", kB, kA);
  AddNode(gb, "b/late", "NoOp", kB, {"^b/Relu2"});
  for (const GraphDef& g : md.partition_graphs()) {
    for (const NodeDef& n : g.node()) (*md.mutable_placement())[n.name()] = n.assigned_device();
  }
  return md;
}

inline std::vector<const Json*> EventsWithPh(const Json& trace, const std::string& ph) {
  std::vector<const Json*> out;
  for (const Json& e : trace.at("traceEvents")) {
    if (e.value("ph", "") == ph) out.push_back(&e);
  }
  return out;
}

// The trace parsed by nlohmann-json (strictly: a byte that is not UTF-8 fails the parse), or an
// empty trace after a test failure.
inline Json ParseTrace(const std::string& json) {
  Json v = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(v.is_discarded()) << json;
  EXPECT_TRUE(v.is_object()) << json;
  if (v.is_discarded() || !v.is_object()) return Json{{"traceEvents", Json::array()}};
  EXPECT_TRUE(v.contains("traceEvents") && v["traceEvents"].is_array()) << json;
  return v;
}

}  // namespace profiler_test
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_RUNTIME_PROFILER_FIXTURES_H_
