// Fuzzes the cluster descriptions of the cost model (partitioner/cost_model.h): the input is
// the JSON a user passes to `shardflow place --topology` or the cost placement policy.
//
// Checked on every input: DeviceTopology::FromJson returns a status and never crashes. Checked when
// it accepts: every device has a full, distinct name and finite, positive speeds and slots;
// every transfer time is finite and non-negative; a small graph's simulation costs are finite
// and non-negative on every device; and the description, written back as JSON, parses to the
// same cluster.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/graph/graph.h"
#include "google/protobuf/util/json_util.h"
#include "ops/ops.h"
#include "partitioner/cost_model.h"

namespace shardflow {
namespace {

// Transfers and simulation costs are checked on at most this many devices (the checks are
// quadratic; the parser is not limited).
constexpr int kMaxCheckedDevices = 32;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "cost_model_fuzzer: invariant violated: %s\n", what.c_str());
  std::abort();
}

bool FiniteNonNegative(double v) { return std::isfinite(v) && v >= 0; }

// x[?,64] @ w[64,32] + b, relu, sum: a little of every kind of cost (matmul, element-wise,
// reduction, constants).
const Graph& SmallGraph() {
  static const Graph* graph = [] {
    Scope s = Scope::NewRootScope();
    auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({-1, 64}));
    auto w = ops::Fill(s.WithOpName("w"), {64, 32}, 0.5f);
    auto y = ops::MatMul(s.WithOpName("y"), x, w);
    auto r = ops::Relu(s.WithOpName("r"), ops::Add(s.WithOpName("a"), y, 1.0f));
    ops::Sum(s.WithOpName("loss"), r, {0, 1});
    GraphDef def;
    absl::Status built = s.ToGraphDef(&def);
    if (!built.ok()) Fail("the small graph does not build: " + built.ToString());
    auto g = Graph::FromGraphDef(def);
    if (!g.ok()) Fail("the small graph does not import: " + g.status().ToString());
    return g->release();
  }();
  return *graph;
}

void CheckAccepted(const DeviceTopology& cluster) {
  const int n = cluster.num_devices();
  if (n <= 0) Fail("a cluster without devices");
  for (int i = 0; i < n; ++i) {
    const DeviceDescription& d = cluster.device(i);
    if (cluster.FindDevice(d.name()) != i)
      Fail("device " + d.name() + " is not found at its index");
    if (!std::isfinite(d.gflops()) || d.gflops() <= 0 || !std::isfinite(d.memory_gbps()) ||
        d.memory_gbps() <= 0 || d.slots() < 1 || d.memory_bytes() < 0) {
      Fail("device " + d.name() + " has a speed, slot count or memory that is not positive");
    }
  }
  const int checked = std::min(n, kMaxCheckedDevices);
  for (int a = 0; a < checked; ++a) {
    for (int b = 0; b < checked; ++b) {
      if (!FiniteNonNegative(cluster.TransferMicros(a, b, int64_t{1} << 20))) {
        Fail("transfer time " + std::to_string(a) + " -> " + std::to_string(b) + " is not finite");
      }
    }
  }
  if (n <= kMaxCheckedDevices) {
    auto sim = BuildSimGraph(SmallGraph(), cluster, CostModel());
    if (!sim.ok()) Fail("BuildSimGraph: " + sim.status().ToString());
    for (double c : sim->cost) {
      if (!FiniteNonNegative(c)) Fail("a simulated cost is " + std::to_string(c));
    }
  }
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(cluster.description(), &json).ok()) {
    Fail("the description does not print as JSON");
  }
  auto again = DeviceTopology::FromJson(json, "round trip");
  if (!again.ok()) Fail("FromJson rejects its own description: " + again.status().ToString());
  if (again->description().SerializeAsString() != cluster.description().SerializeAsString()) {
    Fail("the JSON round trip changes the description: " + json);
  }
}

}  // namespace
}  // namespace shardflow

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto cluster = shardflow::DeviceTopology::FromJson(
      std::string(reinterpret_cast<const char*>(data), size), "fuzz input");
  if (cluster.ok()) shardflow::CheckAccepted(*cluster);
  return 0;
}
