// Python bindings for running graphs and reading what a step did: SessionHandle (Session::Run
// with NumPy feeds and fetches, the GIL released while the step runs), RunMetadata and the
// profiler outputs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/graph/graph.h"
#include "python_bindings/src/graph_handle.h"
#include "python_bindings/src/status_exceptions.h"
#include "python_bindings/src/tensor_conversion.h"
#include "runtime/profiler.h"
#include "runtime/session.h"

namespace shardflow {
namespace python {
namespace {

namespace py = pybind11;
using GraphPtr = std::shared_ptr<GraphHandle>;

// Test hook: the data pointers of the tensors the last Run passed to Session::Run, and how many
// feeds and fetches crossed without a copy (shardflow._shardflow._last_run_stats()).
struct LastRunStats {
  std::vector<uintptr_t> feed_pointers;
  int feeds_zero_copy = 0;
  int fetches_zero_copy = 0;
};
LastRunStats g_last_run;

// Note [Feeds the engine may keep]: AssignVariableOp stores its value tensor as the variable's
// buffer (no copy), and later updates write into it. A fed array that reaches such an input
// through buffer-forwarding ops would become the variable's memory: the user's array would
// change with training. Such feeds are copied; all others are wrapped without a copy.
bool FeedMayBeKept(const Graph& graph, const std::string& tensor_name) {
  auto ref = ParseTensorRef(tensor_name);
  if (!ref.ok()) return true;
  Node* start = graph.FindNode(ref->node);
  if (start == nullptr) return true;
  std::vector<std::pair<Node*, int>> stack = {{start, ref->index}};
  std::unordered_set<Node*> seen;
  while (!stack.empty()) {
    auto [node, slot] = stack.back();
    stack.pop_back();
    for (const Edge* e : node->out_edges()) {
      if (e->IsControl() || e->src_output != slot) continue;
      const std::string& op = e->dst->op();
      if (op == "AssignVariableOp" || op == "AssignAddVariableOp") return true;
      bool forwards = op == "Identity" || op == "StopGradient" || op == "Reshape" ||
                      op == "ExpandDims" || op == "Squeeze";
      if (forwards && e->dst_input == 0 && seen.insert(e->dst).second) {
        stack.emplace_back(e->dst, 0);
      }
    }
  }
  return false;
}

struct SessionConfig {
  int inter_op_threads = 0;
  int intra_op_threads = 0;
  int cpu_device_count = 0;
  int gpu_device_count = 0;
  double gpu_memory_fraction = 0;
  int64_t gpu_memory_limit_mb = 0;
  std::string gpu_visible_device_list;
  bool gpu_allow_tf32 = false;
  int gpu_virtual_devices = 1;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  std::string placement_policy;
  std::string auth_token;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  bool plaintext = false;
  // RewriterConfig's toggles (0 DEFAULT, 1 ON, 2 OFF) by pass name, and disable_meta_optimizer.
  std::map<std::string, int> rewrite_options;
  bool disable_meta_optimizer = false;
  std::vector<std::string> device_filters;
  int64_t operation_timeout_in_ms = 0;
};

class SessionHandle {
 public:
  SessionHandle(GraphPtr graph, const std::string& target, const SessionConfig& config)
      : graph_(std::move(graph)) {
    SessionOptions options;
    options.target = target;
    options.config.set_inter_op_threads(config.inter_op_threads);
    options.config.set_intra_op_threads(config.intra_op_threads);
    options.config.set_cpu_device_count(config.cpu_device_count);
    options.config.set_gpu_device_count(config.gpu_device_count);
    GPUOptions* gpu = options.config.mutable_gpu_options();
    gpu->set_per_process_gpu_memory_fraction(config.gpu_memory_fraction);
    gpu->set_memory_limit_mb(config.gpu_memory_limit_mb);
    gpu->set_visible_device_list(config.gpu_visible_device_list);
    gpu->set_allow_tf32(config.gpu_allow_tf32);
    gpu->set_virtual_devices_per_gpu(config.gpu_virtual_devices);
    options.config.set_allow_soft_placement(config.allow_soft_placement);
    options.config.set_log_device_placement(config.log_device_placement);
    options.config.set_placement_policy(config.placement_policy);
    options.config.set_auth_token(config.auth_token);
    options.config.set_tls_ca_file(config.tls_ca_file);
    options.config.set_tls_cert_file(config.tls_cert_file);
    options.config.set_tls_key_file(config.tls_key_file);
    options.config.set_plaintext(config.plaintext);
    for (const std::string& f : config.device_filters) options.config.add_device_filters(f);
    options.config.set_operation_timeout_in_ms(config.operation_timeout_in_ms);
    RewriterConfig* rewrite = options.config.mutable_rewrite_options();
    rewrite->set_disable_meta_optimizer(config.disable_meta_optimizer);
    for (const auto& [pass, toggle] : config.rewrite_options) {
      if (toggle < 0 || toggle > 2) {
        throw StatusError(absl::InvalidArgumentError(absl::StrCat(
            "rewrite_options.", pass, " is ", toggle, "; RewriterConfig.DEFAULT, ON or OFF")));
      }
      const auto t = static_cast<RewriterConfig::Toggle>(toggle);
      if (pass == "arithmetic_optimization") {
        rewrite->set_arithmetic_optimization(t);
      } else if (pass == "constant_folding") {
        rewrite->set_constant_folding(t);
      } else if (pass == "common_subgraph_elimination") {
        rewrite->set_common_subgraph_elimination(t);
      } else if (pass == "dependency_optimization") {
        rewrite->set_dependency_optimization(t);
      } else if (pass == "remapping") {
        rewrite->set_remapping(t);
      } else if (pass == "auto_mixed_precision_onednn_bfloat16") {
        rewrite->set_auto_mixed_precision_onednn_bfloat16(t);
      } else {
        throw StatusError(absl::InvalidArgumentError(absl::StrCat(
            "rewrite_options has no pass '", pass,
            "'; known: arithmetic_optimization, constant_folding, common_subgraph_elimination, "
            "dependency_optimization, remapping, auto_mixed_precision_onednn_bfloat16")));
      }
    }
    SF_PY_ASSIGN_OR_THROW(std::unique_ptr<Session> session, NewSession(options));
    session_ = std::move(session);
  }
  ~SessionHandle() {
    // Executor threads may need the GIL to drop the last reference to a fed array.
    py::gil_scoped_release release;
    session_.reset();
  }

  // feeds: [(tensor name, value)]; returns one array per fetch.
  py::list Run(const py::list& feeds, const std::vector<std::string>& fetches,
               const std::vector<std::string>& targets, int trace_level, int64_t timeout_in_ms,
               bool check_numerics, RunMetadata* metadata) {
    std::shared_ptr<Session> session = Open();
    SyncGraph(*session);
    std::vector<std::pair<std::string, Tensor>> inputs;
    inputs.reserve(feeds.size());
    g_last_run = LastRunStats();
    for (py::handle item : feeds) {
      auto pair = item.cast<py::tuple>();
      std::string name = pair[0].cast<std::string>();
      bool zero_copy = false;
      std::string what = absl::StrCat("feed for '", name, "'");
      Tensor t = ArrayToTensor(pair[1], !MayBeKept(name), &zero_copy, what.c_str());
      g_last_run.feed_pointers.push_back(reinterpret_cast<uintptr_t>(t.raw_data()));
      g_last_run.feeds_zero_copy += zero_copy;
      inputs.emplace_back(std::move(name), std::move(t));
    }
    RunOptions options;
    options.set_trace_level(static_cast<RunOptions::TraceLevel>(trace_level));
    options.set_timeout_in_ms(timeout_in_ms);
    options.set_check_numerics(check_numerics);
    std::vector<Tensor> outputs;
    absl::Status status;
    {
      py::gil_scoped_release release;
      status = session->Run(options, inputs, fetches, targets, &outputs, metadata);
      session.reset();  // the last reference when the session was closed meanwhile
    }
    // `inputs` is destroyed with the GIL held, so releasing the fed arrays is cheap.
    ThrowIfError(status);
    py::list result;
    for (Tensor& t : outputs) {
      bool zero_copy = false;
      result.append(TensorToArray(std::move(t), &zero_copy));
      g_last_run.fetches_zero_copy += zero_copy;
    }
    return result;
  }

  void Reset(const std::vector<std::string>& containers) {
    std::shared_ptr<Session> session = Open();
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = session->Reset(containers);
      session.reset();
    }
    if (!s.ok()) throw StatusError(s);
  }

  std::vector<std::string> ListDevices() const {
    std::vector<std::string> names;
    auto devices = Open()->ListDevices();
    if (!devices.ok()) throw StatusError(devices.status());
    for (const DeviceAttributes& d : *devices) names.push_back(d.name);
    return names;
  }

  void Close() {
    if (!session_) return;
    std::shared_ptr<Session> session = std::move(session_);  // with the GIL: no step sees half
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = session->Close();  // cancels the steps in flight
      // They return and let go of it: the engine session is destroyed here, not in a step's
      // thread, which would then still be in C++ (wanting the GIL back) as a script ends.
      for (int i = 0; i < 2000 && session.use_count() > 1; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      session.reset();
    }
    ThrowIfError(s);
  }

 private:
  // Sends the nodes added to the Python graph since the last step (Create, then Extend).
  std::shared_ptr<Session> Open() const {
    if (!session_) throw StatusError(absl::FailedPreconditionError("the session was closed"));
    return session_;
  }

  void SyncGraph(Session& session) {
    if (created_ && graph_->generation() == synced_generation_) return;
    GraphDef full;
    graph_->graph()->ToGraphDef(&full);
    GraphDef delta;
    for (const NodeDef& n : full.node()) {
      if (sent_.insert(n.name()).second) *delta.add_node() = n;
    }
    if (!created_) {
      ThrowIfError(session.Create(full));
      created_ = true;
    } else if (delta.node_size() > 0) {
      ThrowIfError(session.Extend(delta));
    }
    synced_generation_ = graph_->generation();
    feed_may_be_kept_.clear();
  }

  bool MayBeKept(const std::string& name) {
    auto it = feed_may_be_kept_.find(name);
    if (it != feed_may_be_kept_.end()) return it->second;
    bool kept = FeedMayBeKept(*graph_->graph(), name);
    feed_may_be_kept_.emplace(name, kept);
    return kept;
  }

  GraphPtr graph_;
  // Shared with the steps in flight: Close (another thread, a queue runner's session at exit)
  // lets go of it while they still run, and the last step to return destroys it.
  std::shared_ptr<Session> session_;
  bool created_ = false;
  int64_t synced_generation_ = -1;
  std::unordered_set<std::string> sent_;
  std::unordered_map<std::string, bool> feed_may_be_kept_;
};

py::list NodeStats(const RunMetadata& md) {
  py::list out;
  for (const auto& dev : md.step_stats().dev_stats()) {
    for (const auto& n : dev.node_stats()) {
      py::dict d;
      d["device"] = dev.device();
      d["node"] = n.node_name();
      d["op"] = n.op();
      d["start_micros"] = n.start_micros();
      d["end_micros"] = n.end_micros();
      out.append(d);
    }
  }
  return out;
}

}  // namespace

void RegisterSessionBindings(py::module_& m) {
  py::class_<SessionConfig>(m, "SessionConfig")
      .def(py::init<>())
      .def_readwrite("inter_op_threads", &SessionConfig::inter_op_threads)
      .def_readwrite("intra_op_threads", &SessionConfig::intra_op_threads)
      .def_readwrite("cpu_device_count", &SessionConfig::cpu_device_count)
      .def_readwrite("gpu_device_count", &SessionConfig::gpu_device_count)
      .def_readwrite("gpu_memory_fraction", &SessionConfig::gpu_memory_fraction)
      .def_readwrite("gpu_memory_limit_mb", &SessionConfig::gpu_memory_limit_mb)
      .def_readwrite("gpu_visible_device_list", &SessionConfig::gpu_visible_device_list)
      .def_readwrite("gpu_allow_tf32", &SessionConfig::gpu_allow_tf32)
      .def_readwrite("gpu_virtual_devices", &SessionConfig::gpu_virtual_devices)
      .def_readwrite("allow_soft_placement", &SessionConfig::allow_soft_placement)
      .def_readwrite("log_device_placement", &SessionConfig::log_device_placement)
      .def_readwrite("placement_policy", &SessionConfig::placement_policy)
      .def_readwrite("auth_token", &SessionConfig::auth_token)
      .def_readwrite("tls_ca_file", &SessionConfig::tls_ca_file)
      .def_readwrite("plaintext", &SessionConfig::plaintext)
      .def_readwrite("tls_cert_file", &SessionConfig::tls_cert_file)
      .def_readwrite("tls_key_file", &SessionConfig::tls_key_file)
      .def_readwrite("rewrite_options", &SessionConfig::rewrite_options)
      .def_readwrite("disable_meta_optimizer", &SessionConfig::disable_meta_optimizer)
      .def_readwrite("device_filters", &SessionConfig::device_filters)
      .def_readwrite("operation_timeout_in_ms", &SessionConfig::operation_timeout_in_ms);

  py::class_<SessionHandle>(m, "SessionHandle", "The C++ session behind shardflow.Session.")
      .def(py::init<GraphPtr, std::string, SessionConfig>())
      .def("run", &SessionHandle::Run, py::arg("feeds"), py::arg("fetches"), py::arg("targets"),
           py::arg("trace_level") = 0, py::arg("timeout_in_ms") = 0,
           py::arg("check_numerics") = false, py::arg("metadata") = nullptr)
      .def("list_devices", &SessionHandle::ListDevices)
      .def("reset", &SessionHandle::Reset, py::arg("containers"))
      .def("close", &SessionHandle::Close);

  py::class_<RunMetadata>(m, "RunMetadata",
                          "What one step did: step stats per device, placement, partition "
                          "graphs (filled by Session.run with FULL_TRACE).")
      .def(py::init<>())
      .def_property_readonly("placement",
                             [](const RunMetadata& md) {
                               std::map<std::string, std::string> p(md.placement().begin(),
                                                                    md.placement().end());
                               return p;
                             })
      .def_property_readonly("devices",
                             [](const RunMetadata& md) {
                               std::vector<std::string> d;
                               for (const auto& s : md.step_stats().dev_stats()) {
                                 d.push_back(s.device());
                               }
                               return d;
                             })
      .def_property_readonly("partition_graph_count",
                             [](const RunMetadata& md) { return md.partition_graphs_size(); })
      .def_property_readonly(
          "optimizer_report",
          [](const RunMetadata& md) {
            py::list passes;
            for (const auto& p : md.optimizer_report().passes()) {
              py::dict d;
              d["name"] = p.name();
              d["nodes_before"] = p.nodes_before();
              d["nodes_after"] = p.nodes_after();
              d["seconds"] = p.seconds();
              d["changes"] = std::vector<std::string>(p.changes().begin(), p.changes().end());
              passes.append(d);
            }
            return passes;
          },
          "With FULL_TRACE: one dict per graph optimizer pass run (name, nodes_before, "
          "nodes_after, seconds, changes).")
      .def_property_readonly(
          "optimized_graph_ops",
          [](const RunMetadata& md) {
            std::map<std::string, std::string> ops;
            for (const NodeDef& n : md.optimized_graph().node()) ops[n.name()] = n.op();
            return ops;
          },
          "With FULL_TRACE: node name -> op of the graph after the optimizer.")
      .def("node_stats", &NodeStats,
           "One dict per node execution: device, node, op, start_micros, end_micros.")
      .def("SerializeToString",
           [](const RunMetadata& md) { return py::bytes(md.SerializeAsString()); })
      .def("ParseFromString",
           [](RunMetadata& md, const py::bytes& data) {
             if (!md.ParseFromString(std::string(data))) {
               throw StatusError(absl::InvalidArgumentError("not a serialized RunMetadata"));
             }
           })
      .def("Clear", [](RunMetadata& md) { md.Clear(); });

  m.def("chrome_trace_json", [](const RunMetadata& md) { return ChromeTraceJson(md); });
  m.def("placement_report", [](const RunMetadata& md) { return PlacementReport(md); });
  m.def(
      "placed_graph_dot",
      [](const GraphHandle& g, const RunMetadata* md) {
        GraphDef def;
        g.graph()->ToGraphDef(&def);
        return PlacedGraphDot(def, md);
      },
      py::arg("graph"), py::arg("metadata") = nullptr);
  m.def("dot_to_svg", [](const std::string& dot) {
    SF_PY_ASSIGN_OR_THROW(std::string svg, DotToSvg(dot));
    return svg;
  });
  m.def("_last_run_stats", []() {
    py::dict d;
    d["feed_pointers"] = g_last_run.feed_pointers;
    d["feeds_zero_copy"] = g_last_run.feeds_zero_copy;
    d["fetches_zero_copy"] = g_last_run.fetches_zero_copy;
    return d;
  });
}

}  // namespace python
}  // namespace shardflow
