#include "partitioner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/op_names.h"
#include "core/platform/status.h"
#include "google/protobuf/util/json_util.h"

namespace shardflow {
namespace {

bool IsGpu(const DeviceDescription& d) { return d.type() == "GPU"; }

void FillDeviceDefaults(DeviceDescription* d, int threads) {
  if (d->type().empty()) {
    auto parsed = DeviceName::Parse(d->name());
    if (parsed.ok() && parsed->has_type) d->set_type(parsed->type);
  }
  if (d->gflops() <= 0) {
    d->set_gflops(IsGpu(*d) ? kDefaultGpuGflops
                            : kDefaultCpuGflopsPerThread * std::max(1, threads));
  }
  if (d->memory_gbps() <= 0) {
    d->set_memory_gbps(IsGpu(*d) ? kDefaultGpuMemoryGbps
                                 : kDefaultCpuMemoryGbps * std::max(1, threads));
  }
  if (d->slots() <= 0) d->set_slots(1);
}

// Elements of a shape, unknown dimensions counted as `unknown_dim`.
double Elements(const TensorShape& shape, int64_t unknown_dim) {
  if (shape.unknown_rank()) return static_cast<double>(unknown_dim);
  double n = 1;
  for (int64_t d : shape.dims()) n *= static_cast<double>(d < 0 ? unknown_dim : d);
  return n;
}

int64_t ElementBytes(DataType t) {
  int size = DataTypeSize(t);
  return size > 0 ? size : 8;  // strings and handles: a pointer's worth
}

const TensorShape& InputShape(const Node& node, int i) {
  static const TensorShape* unknown = new TensorShape(TensorShape::Unknown());
  const Edge* e = node.input_edge(i);
  if (e == nullptr) return *unknown;
  return e->src->output_shape(e->src_output);
}

// Ops that do no work on the data: they forward, alias or hand over tensors.
bool IsCheapOp(const std::string& op) {
  static const auto* cheap = new absl::flat_hash_set<std::string>{
      "Const",      "Identity",     "NoOp",        "Placeholder",     "_Arg",  "_Retval",
      "_Send",      "_Recv",        "VarHandleOp", "ReadVariableOp",  "Shape", "Reshape",
      "ExpandDims", "StopGradient", "Squeeze",     "PreventGradient", "Size",  "Rank"};
  return cheap->contains(op);
}

}  // namespace

// ---- DeviceTopology
// ------------------------------------------------------------------------------

absl::StatusOr<DeviceTopology> DeviceTopology::FromDescription(
    const TopologyDescription& description) {
  DeviceTopology c;
  c.description_ = description;
  const int n = c.description_.devices_size();
  if (n == 0) return absl::InvalidArgumentError("the cluster description lists no devices");
  for (int i = 0; i < n; ++i) {
    DeviceDescription* d = c.description_.mutable_devices(i);
    auto parsed = DeviceName::Parse(d->name());
    if (!parsed.ok() || !parsed->IsFullySpecified()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster device ", i, " has name '", d->name(),
                       "'; give a full name such as /job:worker/replica:0/task:0/device:CPU:0"));
    }
    if (c.FindDevice(d->name()) != i) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster device '", d->name(), "' is listed twice"));
    }
    if (!std::isfinite(d->gflops()) || !std::isfinite(d->memory_gbps())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cluster device '", d->name(), "' has gflops ", d->gflops(), " and memory_gbps ",
          d->memory_gbps(), "; give finite numbers (0 or leave out for the default)"));
    }
    if (d->memory_bytes() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster device '", d->name(), "' has negative memory_bytes"));
    }
    FillDeviceDefaults(d, 1);
  }
  const LinkDescription& default_link = c.description_.default_link();
  if (!std::isfinite(default_link.gbps()) || !std::isfinite(default_link.latency_us()) ||
      default_link.gbps() < 0 || default_link.latency_us() < 0) {
    return absl::InvalidArgumentError(
        "the cluster's default_link needs a finite, non-negative gbps and latency_us");
  }
  auto to_link = [](const LinkDescription& l) {
    Link out;
    out.latency_us = std::max(0.0, l.latency_us());
    out.us_per_byte = l.gbps() > 0 ? 1.0 / (l.gbps() * 1e3) : 0.0;
    return out;
  };
  c.links_.assign(static_cast<size_t>(n) * n, to_link(c.description_.default_link()));
  std::vector<bool> given(static_cast<size_t>(n) * n, false);
  for (const LinkDescription& l : c.description_.links()) {
    int a = c.FindDevice(l.src()), b = c.FindDevice(l.dst());
    if (a < 0 || b < 0) {
      return absl::InvalidArgumentError(absl::StrCat("cluster link ", l.src(), " -> ", l.dst(),
                                                     " names a device the description does "
                                                     "not list under \"devices\""));
    }
    if (!(l.gbps() >= 0) || !(l.latency_us() >= 0) || !std::isfinite(l.gbps()) ||
        !std::isfinite(l.latency_us())) {
      return absl::InvalidArgumentError(absl::StrCat("cluster link ", l.src(), " -> ", l.dst(),
                                                     " has a negative or non-finite bandwidth or "
                                                     "latency"));
    }
    c.links_[a * n + b] = to_link(l);
    given[a * n + b] = true;
    if (!given[b * n + a]) c.links_[b * n + a] = to_link(l);
  }
  return c;
}

absl::StatusOr<DeviceTopology> DeviceTopology::FromJson(const std::string& json,
                                                        const std::string& source) {
  TopologyDescription description;
  auto status = google::protobuf::util::JsonStringToMessage(json, &description);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": not a valid cluster description (", status.ToString(),
        "); expected {\"devices\": [{\"name\": ..., \"gflops\": ...}], \"links\": [...]}"));
  }
  auto cluster = FromDescription(description);
  if (!cluster.ok()) return WithContext(cluster.status(), source);
  return cluster;
}

absl::StatusOr<DeviceTopology> DeviceTopology::FromJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open cluster description '", path, "'"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return FromJson(text.str(), path);
}

DeviceTopology DeviceTopology::ForDevices(const std::vector<DeviceAttributes>& devices,
                                          const std::vector<int>& intra_op_threads,
                                          const std::vector<int>& slots) {
  DeviceTopology c;
  for (size_t i = 0; i < devices.size(); ++i) {
    DeviceDescription* d = c.description_.add_devices();
    d->set_name(devices[i].name);
    d->set_type(devices[i].device_type);
    d->set_memory_bytes(devices[i].memory_limit_bytes);
    if (i < slots.size()) d->set_slots(slots[i]);
    FillDeviceDefaults(d, i < intra_op_threads.size() ? intra_op_threads[i] : 1);
  }
  c.description_.mutable_default_link()->set_latency_us(kInProcessLatencyUs);
  const size_t n = devices.size();
  c.links_.assign(n * n, Link{kInProcessLatencyUs, 0.0});
  return c;
}

int DeviceTopology::FindDevice(const std::string& name) const {
  for (int i = 0; i < num_devices(); ++i) {
    if (description_.devices(i).name() == name) return i;
  }
  return -1;
}

std::vector<DeviceAttributes> DeviceTopology::Devices() const {
  std::vector<DeviceAttributes> out;
  for (const DeviceDescription& d : description_.devices()) {
    DeviceAttributes a;
    a.name = d.name();
    a.device_type = d.type();
    a.memory_limit_bytes = d.memory_bytes();
    out.push_back(a);
  }
  return out;
}

// ---- CostModel ----------------------------------------------------------------------------

CostModel::Work CostModel::AnalyticWork(const Node& node) const {
  Work w;
  const std::string& op = node.op();
  if (IsCheapOp(op)) {
    w.cheap = true;
    return w;
  }
  const int64_t u = options_.unknown_dim;
  double in_elems = 0, out_elems = 0;
  for (int i = 0; i < node.num_inputs(); ++i) {
    double e = Elements(InputShape(node, i), u);
    in_elems += e;
    w.bytes += e * ElementBytes(node.input_type(i));
  }
  for (int i = 0; i < node.num_outputs(); ++i) {
    double e = Elements(node.output_shape(i), u);
    out_elems += e;
    w.bytes += e * ElementBytes(node.output_type(i));
  }
  // The op's own estimate (registered beside its definition), else a couple of operations
  // per element (element-wise ops, reductions, optimizer updates).
  if (node.op_def().flops_fn) {
    std::vector<TensorShape> inputs, outputs;
    for (int i = 0; i < node.num_inputs(); ++i) inputs.push_back(InputShape(node, i));
    for (int i = 0; i < node.num_outputs(); ++i) outputs.push_back(node.output_shape(i));
    OpCostContext context(node.def(), &inputs, &outputs, u);
    w.flops = node.op_def().flops_fn(context);
  } else {
    w.flops = 2 * std::max(in_elems, out_elems);
  }
  return w;
}

double CostModel::AnalyticMicros(const Work& w, const DeviceDescription& device) const {
  if (w.cheap) return options_.cheap_op_overhead_us;
  double compute = w.flops / (device.gflops() * 1e3);
  double memory = w.bytes / (device.memory_gbps() * 1e3);
  return std::max(compute, memory) + options_.op_overhead_us;
}

double CostModel::ComputeMicros(const Node& node, const DeviceDescription& device) const {
  Work w = AnalyticWork(node);
  auto it = measured_.find(node.name());
  if (it != measured_.end() && it->second.count > 0) {
    const Measured& m = it->second;
    double micros = m.micros_sum / m.count;
    // Scale to this device by the bound the analytic model says the op hits.
    bool compute_bound = w.flops / device.gflops() >= w.bytes / device.memory_gbps();
    double ratio =
        compute_bound ? m.gflops / device.gflops() : m.memory_gbps / device.memory_gbps();
    return micros * ratio;
  }
  return AnalyticMicros(w, device);
}

bool CostModel::IsMeasured(const std::string& node) const {
  auto it = measured_.find(node);
  return it != measured_.end() && it->second.count > 0;
}

int64_t CostModel::OutputBytes(const Node& node, int slot) const {
  auto it = measured_.find(node.name());
  if (it != measured_.end() && slot < static_cast<int>(it->second.output_bytes.size()) &&
      it->second.output_bytes[slot] >= 0) {
    return it->second.output_bytes[slot];
  }
  return static_cast<int64_t>(Elements(node.output_shape(slot), options_.unknown_dim)) *
         ElementBytes(node.output_type(slot));
}

int64_t CostModel::MemoryBytes(const Node& node) const {
  int64_t bytes = 0;
  // Ops that alias their input (a variable's read, a reshape) hold no memory of their own.
  static const auto* aliases = new absl::flat_hash_set<std::string>{
      "Identity", "ReadVariableOp", "Reshape",         "ExpandDims",
      "Squeeze",  "StopGradient",   "PreventGradient", "_Retval"};
  if (!aliases->contains(node.op())) {
    for (int i = 0; i < node.num_outputs(); ++i) bytes += OutputBytes(node, i);
  }
  if (node.op() == kVarHandleOp) {
    TensorShape shape;
    DataType dtype = DT_FLOAT;
    if (GetAttr(node.attrs(), "shape", &shape).ok() &&
        GetAttr(node.attrs(), "dtype", &dtype).ok()) {
      bytes += static_cast<int64_t>(Elements(shape, options_.unknown_dim)) * ElementBytes(dtype);
    }
  }
  return bytes;
}

void CostModel::SetMeasured(const std::string& node, double micros, double gflops,
                            double memory_gbps, std::vector<int64_t> output_bytes) {
  Measured& m = measured_[node];
  m.micros_sum = micros;
  m.count = 1;
  m.gflops = gflops;
  m.memory_gbps = memory_gbps;
  m.output_bytes = std::move(output_bytes);
}

void CostModel::AddStepStats(const StepStats& stats, const DeviceTopology& cluster) {
  DeviceDescription fallback;
  FillDeviceDefaults(&fallback, 1);
  for (const DeviceStepStats& dev : stats.dev_stats()) {
    int d = cluster.FindDevice(dev.device());
    const DeviceDescription& device = d >= 0 ? cluster.device(d) : fallback;
    for (const NodeExecStats& ns : dev.node_stats()) {
      double micros =
          static_cast<double>(std::max<int64_t>(0, ns.end_micros() - ns.start_micros()));
      Measured& m = measured_[ns.node_name()];
      if (m.count > 0 && (m.gflops != device.gflops() || m.memory_gbps != device.memory_gbps())) {
        // Measured on another kind of device before: restart the average on this one.
        m = Measured();
      }
      m.micros_sum += micros;
      m.count += 1;
      m.gflops = device.gflops();
      m.memory_gbps = device.memory_gbps();
      for (const NodeOutputStats& out : ns.output()) {
        if (out.slot() < 0) continue;
        if (static_cast<int>(m.output_bytes.size()) <= out.slot()) {
          m.output_bytes.resize(out.slot() + 1, -1);
        }
        m.output_bytes[out.slot()] = out.bytes();
      }
    }
  }
}

// ---- SimGraph -----------------------------------------------------------------------------

absl::StatusOr<SimGraph> BuildSimGraph(const Graph& graph, const DeviceTopology& cluster,
                                       const CostModel& costs) {
  SF_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.TopologicalOrder());
  SimGraph g;
  g.num_nodes = static_cast<int>(order.size());
  g.num_devices = cluster.num_devices();
  g.index_of.assign(graph.num_node_ids(), -1);
  for (int i = 0; i < g.num_nodes; ++i) g.index_of[order[i]->id()] = i;
  g.nodes.assign(order.begin(), order.end());
  g.cost.resize(static_cast<size_t>(g.num_nodes) * g.num_devices);
  g.memory.resize(g.num_nodes);
  g.in_edges.resize(g.num_nodes);
  g.out_edges.resize(g.num_nodes);
  // Calibration: per op type, the mean ratio of measured to analytic time over the measured
  // nodes of this graph scales the estimates of the unmeasured nodes of that type.
  absl::flat_hash_map<std::string, std::pair<double, int>> scale;
  for (Node* node : order) {
    if (!costs.IsMeasured(node->name())) continue;
    CostModel::Work w = costs.AnalyticWork(*node);
    if (w.cheap) continue;
    double analytic = costs.AnalyticMicros(w, cluster.device(0));
    if (analytic <= 0) continue;
    auto& s = scale[node->op()];
    s.first += costs.ComputeMicros(*node, cluster.device(0)) / analytic;
    s.second += 1;
  }
  for (int n = 0; n < g.num_nodes; ++n) {
    const Node& node = *order[n];
    double factor = 1.0;
    auto it = scale.find(node.op());
    if (it != scale.end() && !costs.IsMeasured(node.name())) {
      factor = it->second.first / it->second.second;
    }
    for (int d = 0; d < g.num_devices; ++d) {
      g.cost[static_cast<size_t>(n) * g.num_devices + d] =
          costs.ComputeMicros(node, cluster.device(d)) * factor;
    }
    g.memory[n] = costs.MemoryBytes(node);
    for (const Edge* e : node.in_edges()) {
      int src = g.index_of[e->src->id()];
      if (src < 0) continue;
      SimGraph::Edge se;
      se.src = src;
      se.dst = n;
      se.slot = e->IsControl() ? -1 : e->src_output;
      se.bytes = e->IsControl() ? 0 : costs.OutputBytes(*e->src, e->src_output);
      g.in_edges[n].push_back(static_cast<int>(g.edges.size()));
      g.out_edges[src].push_back(static_cast<int>(g.edges.size()));
      g.edges.push_back(se);
    }
  }
  return g;
}

}  // namespace shardflow
