// GPU op conformance: every op with a kernel registered for device type "GPU", for every dtype of
// that kernel's type constraint, runs the op's case from the conformance table
// (tests/kernels/conformance_table.h) on "/device:GPU:0" and compares it with the same node on
// "/device:CPU:0" in the same session: float within 1e-5 (relative), half and bfloat16 within
// 1e-2, integers and bools exactly, every output of the node. Where the CPU has no kernel for a
// dtype the GPU has, the table's reference in double stands in for it.
//
// Each (op, dtype) runs in its own session with the graph optimizer off (no folding: the node
// must run on the GPU), twice on the GPU: with its inputs fed (Placeholders, which become _Arg
// nodes) and with them as Consts (placed by default, so on the GPU where it has a Const kernel);
// RunMetadata.placement must show the node on GPU:0. Other constraints of a GPU kernel (Cast's
// DstT, an index type such as Tidx) are set to the kernel's values, index inputs cast to them.
//
// Ops whose case is a check by hand (variables, optimizers, NoOp, random ops) have GPU checks here
// (GpuCustomChecks): the same stateful graph run on the CPU and on the GPU must agree. Internal
// ops (_Send, _Recv, _Arg, _Retval) run in every session above and are not checked alone. The
// test fails for a GPU-registered op without a case or a GPU check.
//
// Without a GPU (a build without CUDA, or none visible to CUDA) the GPU runs skip with a message;
// the registry check (every GPU kernel has a case or a GPU check) needs no GPU and always runs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/node_def_util.h"
#include "core/framework/op_def.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "runtime/session.h"
#include "tests/kernels/conformance_table.h"
#include "tests/util/gpu_test_util.h"

#ifdef SHARDFLOW_HAVE_CUDA
#include "kernels/gpu/gpu_launchers.h"
#endif

namespace shardflow {
namespace {

using conformance::Attrs;
using conformance::ConformanceCase;
using conformance::ConformanceTable;
using conformance::Values;

constexpr char kGpu0[] = "/device:GPU:0";
constexpr char kCpu0[] = "/device:CPU:0";

// ---- finding the GPU --------------------------------------------------------------------------

// OK when a default session lists GPU:0.
absl::Status SessionListsGpu0() {
  auto session = NewSession(SessionOptions());
  if (!session.ok()) return session.status();
  auto devices = (*session)->ListDevices();
  if (!devices.ok()) return devices.status();
  std::string names;
  for (const DeviceAttributes& d : *devices) {
    auto parsed = DeviceName::Parse(d.name);
    if (parsed.ok() && parsed->type == kDeviceGpu && parsed->id == 0) return absl::OkStatus();
    names += " " + d.name;
  }
  return absl::NotFoundError("CUDA sees a GPU, but a session lists only" + names);
}

#define SKIP_WITHOUT_GPU() SF_SKIP_WITHOUT_GPU("[gpu conformance]")

std::vector<const KernelDef*> GpuKernels(const std::string& op) {
  std::vector<const KernelDef*> out;
  for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp(op)) {
    if (k->device_type() == kDeviceGpu) out.push_back(k);
  }
  return out;
}

// Ops the runtime inserts; every session run exercises them.
bool IsInternal(const std::string& op) {
  return !op.empty() && op[0] == '_' && op.rfind("_Fused", 0) != 0;
}

// ---- comparing --------------------------------------------------------------------------------

double Tolerance(DataType dtype) {
  switch (dtype) {
    case DT_DOUBLE:
      return 1e-10;
    case DT_FLOAT:
      return 1e-5;
    default:
      return 1e-2;  // half, bfloat16
  }
}

// Adds a failure (at most 3 elements) unless `got` matches `want`: same dtype and shape, floats
// within Tolerance relative to max(1, |want|), NaN where NaN, infinities equal.
void ExpectClose(const std::string& what, const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.dtype(), want.dtype()) << what << ": dtype " << DataTypeString(got.dtype())
                                       << ", want " << DataTypeString(want.dtype());
  ASSERT_EQ(got.shape(), want.shape())
      << what << ": got " << got.DebugString() << ", want " << want.DebugString();
  if (got.dtype() == DT_STRING) return;  // handles: device-specific names
  const std::vector<double> g = Values(got), w = Values(want);
  ASSERT_EQ(g.size(), w.size()) << what;
  const bool exact = !DataTypeIsFloating(got.dtype());
  const double tol = Tolerance(got.dtype());
  int failures = 0;
  for (size_t i = 0; i < w.size() && failures < 3; ++i) {
    bool ok;
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      ok = std::isnan(w[i]) && std::isnan(g[i]);
    } else if (exact || std::isinf(w[i])) {
      ok = g[i] == w[i];
    } else {
      ok = std::abs(g[i] - w[i]) <= tol * std::max(1.0, std::abs(w[i]));
    }
    if (!ok) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << w[i]
                    << "\n  got  " << got.DebugString() << "\n  want " << want.DebugString();
      ++failures;
    }
  }
}

// True when `device` (a full name from RunMetadata.placement) is GPU:0.
bool IsGpu0(const std::string& device) {
  auto parsed = DeviceName::Parse(device);
  return parsed.ok() && parsed->type == kDeviceGpu && parsed->id == 0;
}

SessionOptions NoOptimizer() {
  SessionOptions options;
  options.config.mutable_rewrite_options()->set_disable_meta_optimizer(true);
  return options;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : " ") + p;
  return s;
}

// ---- one (op, attrs) variant through a session ----------------------------------------------

// One way to run a case on the GPU: the node's attrs, the inputs cast for them.
struct Variant {
  std::string label;  // "float", "float DstT=half", ...
  Attrs attrs;
  std::vector<Tensor> inputs;  // as fed
  std::vector<Tensor> seen;    // the inputs as double, for the reference
  bool reference_ok = true;    // the table's reference applies (the case's attrs unchanged)
};

NodeDef MakeNode(const std::string& name, const std::string& op, const Attrs& attrs,
                 const std::vector<std::string>& inputs, const std::string& device) {
  NodeDef n;
  n.set_name(name);
  n.set_op(op);
  n.set_device(device);
  for (const std::string& in : inputs) n.add_input(in);
  for (const auto& [k, v] : attrs) (*n.mutable_attr())[k] = v;
  return n;
}

// The variant for GPU kernel `k` and swept dtype `dt` (DT_INVALID: the op has no such attr), or
// an error saying why the case cannot take it.
absl::StatusOr<Variant> MakeVariant(const OpDef& def, const ConformanceCase& c, DataType dt,
                                    const KernelDef& k) {
  Variant v;
  v.attrs = c.attrs ? c.attrs(dt) : Attrs();
  v.label = dt == DT_INVALID ? "fixed types" : DataTypeString(dt);
  if (dt != DT_INVALID) v.attrs[c.type_attr] = MakeAttr(dt);
  for (const auto& [name, type] : k.constraints()) {
    if (name == c.type_attr) continue;
    auto it = v.attrs.find(name);
    if (it != v.attrs.end() && it->second.type() == type) continue;
    if (it != v.attrs.end()) v.reference_ok = false;  // the case fixed another type
    v.attrs[name] = MakeAttr(type);
    absl::StrAppend(&v.label, " ", name, "=", DataTypeString(type));
  }
  // Cast: negative values have no unsigned counterpart (C++ leaves them undefined).
  const bool to_unsigned =
      def.name == "Cast" && v.attrs.count("DstT") > 0 && v.attrs.at("DstT").type() == DT_UINT8;
  size_t next = 0;
  for (size_t a = 0; a < def.inputs.size(); ++a) {
    const ArgDef& arg = def.inputs[a];
    size_t n = 1;
    if (!arg.number_attr.empty()) n = c.inputs.size() - next - (def.inputs.size() - a - 1);
    if (!arg.number_attr.empty() && v.attrs.count(arg.number_attr) == 0) {
      v.attrs[arg.number_attr] = MakeAttr(static_cast<int64_t>(n));
    }
    for (size_t i = 0; i < n && next < c.inputs.size(); ++i, ++next) {
      Tensor given = c.inputs[next];
      if (to_unsigned) {
        auto d = CastTensor(given, DT_DOUBLE);
        if (!d.ok()) return d.status();
        for (int64_t e = 0; e < d->NumElements(); ++e) {
          d->data<double>()[e] = std::abs(d->data<double>()[e]);
        }
        given = *d;
      }
      DataType to = arg.type;
      if (to == DT_INVALID && !arg.type_attr.empty()) {
        auto it = v.attrs.find(arg.type_attr);
        if (it != v.attrs.end()) to = it->second.type();
      }
      if (to != DT_INVALID && to != given.dtype()) {
        auto cast = CastTensor(given, to);
        if (!cast.ok()) return cast.status();
        given = *cast;
      }
      if (!arg.type_attr.empty() && v.attrs.count(arg.type_attr) == 0) {
        v.attrs[arg.type_attr] = MakeAttr(given.dtype());
      }
      auto back = CastTensor(given, DT_DOUBLE);
      v.seen.push_back(back.ok() ? *back : given);
      v.inputs.push_back(given);
    }
  }
  if (next != c.inputs.size()) {
    return absl::InvalidArgumentError("the case has more inputs than the op takes");
  }
  return v;
}

// Runs `v` on the GPU (fed and with Const inputs) and on the CPU, and compares.
void CheckVariant(const OpDef& def, const ConformanceCase& c, const Variant& v,
                  std::set<const KernelDef*>* reached, std::string* summary) {
  const std::string what = def.name + " " + v.label;
  SCOPED_TRACE(what);
  std::vector<std::string> fed, consts;
  std::vector<std::pair<std::string, Tensor>> feeds;
  GraphDef graph;
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    const Tensor& t = v.inputs[i];
    fed.push_back(absl::StrCat("x", i));
    consts.push_back(absl::StrCat("k", i));
    feeds.push_back({fed.back(), t});
    *graph.add_node() =
        MakeNode(fed.back(), "Placeholder",
                 {{"dtype", MakeAttr(t.dtype())}, {"shape", MakeAttr(t.shape())}}, {}, "");
    *graph.add_node() = MakeNode(consts.back(), "Const",
                                 {{"dtype", MakeAttr(t.dtype())}, {"value", MakeAttr(t)}}, {}, "");
  }
  NodeDef gpu = MakeNode("op_gpu", def.name, v.attrs, fed, kGpu0);
  absl::Status st = AddDefaultsAndValidate(def, &gpu);
  ASSERT_TRUE(st.ok()) << what << ": " << st;
  DataTypeVector in_types, out_types;
  st = ComputeArgTypes(def, gpu, &in_types, &out_types);
  ASSERT_TRUE(st.ok()) << what << ": " << st;
  auto kernel = KernelRegistry::Global()->Find(gpu, kDeviceGpu);
  ASSERT_TRUE(kernel.ok()) << what << ": no GPU kernel takes the node " << gpu.ShortDebugString()
                           << ": " << kernel.status();
  reached->insert(*kernel);
  *graph.add_node() = gpu;
  NodeDef gpu_const = gpu;
  gpu_const.set_name("opc_gpu");
  gpu_const.clear_input();
  for (const std::string& k : consts) gpu_const.add_input(k);
  if (!v.inputs.empty()) *graph.add_node() = gpu_const;
  NodeDef cpu = gpu;
  cpu.set_name("op_cpu");
  cpu.set_device(kCpu0);
  const bool cpu_kernel = KernelRegistry::Global()->Find(cpu, kDeviceCpu).ok();
  if (cpu_kernel) *graph.add_node() = cpu;

  auto session = NewSession(NoOptimizer());
  ASSERT_TRUE(session.ok()) << session.status();
  st = (*session)->Create(graph);
  ASSERT_TRUE(st.ok()) << what << ": Create: " << st;
  auto fetches = [&](const std::string& node) {
    std::vector<std::string> f;
    for (size_t i = 0; i < out_types.size(); ++i) f.push_back(absl::StrCat(node, ":", i));
    return f;
  };

  // The expectation: the CPU's outputs, else the table's reference for output 0.
  std::vector<Tensor> want;
  std::string against;
  if (cpu_kernel) {
    st = (*session)->Run(feeds, fetches("op_cpu"), {}, &want);
    ASSERT_TRUE(st.ok()) << what << ": the CPU run failed (the graph holds the GPU node too, so "
                         << "a placement error may be the GPU node's): " << st;
    against = "CPU";
  } else if (v.reference_ok && c.reference && !out_types.empty()) {
    Tensor ref = c.reference(v.seen);
    auto cast = CastTensor(ref, out_types[0]);
    ASSERT_TRUE(cast.ok()) << what << ": " << cast.status();
    want = {*cast};
    against = "reference (no CPU kernel)";
  } else {
    *summary += " " + v.label +
                " (unchecked: no CPU kernel, and the case's reference is for "
                "other attrs)";
    return;
  }

  struct Mode {
    const char* name;
    std::string node;
    bool fed;
  };
  std::vector<Mode> modes = {{"fed", "op_gpu", true}};
  if (!v.inputs.empty()) modes.push_back({"const inputs", "opc_gpu", false});
  for (const Mode& m : modes) {
    RunOptions trace;
    trace.set_trace_level(RunOptions::FULL_TRACE);
    RunMetadata metadata;
    std::vector<Tensor> got;
    st = (*session)->Run(trace, m.fed ? feeds : std::vector<std::pair<std::string, Tensor>>(),
                         fetches(m.node), {}, &got, &metadata);
    const std::string label = what + " (" + m.name + ")";
    if (!st.ok()) {
      ADD_FAILURE() << label << ": the GPU run failed: " << st;
      continue;
    }
    auto placed = metadata.placement().find(m.node);
    EXPECT_TRUE(placed != metadata.placement().end() && IsGpu0(placed->second))
        << label << ": RunMetadata.placement has the node on "
        << (placed == metadata.placement().end() ? "<missing>" : placed->second) << ", want GPU:0";
    ASSERT_EQ(got.size(), out_types.size()) << label;
    for (size_t i = 0; i < want.size(); ++i) {
      ExpectClose(absl::StrCat(label, " output ", i, " vs ", against), got[i], want[i]);
    }
  }
  *summary += " " + v.label + (cpu_kernel ? "" : " (vs reference: no CPU kernel)");
}

// ---- checks by hand: stateful graphs run on each device ------------------------------------

// Builds a graph whose ops request `device`, and returns the steps to run: each step's targets
// and fetches (fetched values are compared between devices).
struct Step {
  std::vector<std::string> targets;
  std::vector<std::string> fetches;
};
using StatefulBuilder = std::function<std::vector<Step>(const Scope& s)>;

// Runs the steps on `device`; the fetched values in order. FULL_TRACE on every step; every node
// that requested `device` must have been placed there.
absl::StatusOr<std::vector<Tensor>> RunStateful(const StatefulBuilder& build,
                                                const std::string& device) {
  Scope root = Scope::NewRootScope();
  std::vector<Step> steps = build(root.WithDevice(device));
  GraphDef graph;
  absl::Status st = root.ToGraphDef(&graph);
  if (!st.ok()) return st;
  auto session = NewSession(NoOptimizer());
  if (!session.ok()) return session.status();
  st = (*session)->Create(graph);
  if (!st.ok()) return st;
  std::vector<Tensor> all;
  for (const Step& step : steps) {
    RunOptions trace;
    trace.set_trace_level(RunOptions::FULL_TRACE);
    RunMetadata metadata;
    std::vector<Tensor> out;
    st = (*session)->Run(trace, {}, step.fetches, step.targets, &out, &metadata);
    if (!st.ok()) return st;
    for (const auto& [node, placed] : metadata.placement()) {
      auto want = DeviceName::Parse(device);
      auto got = DeviceName::Parse(placed);
      if (node.rfind("_", 0) == 0 || !want.ok() || !got.ok()) continue;
      if (got->type != want->type) {
        return absl::InternalError(
            absl::StrCat("node '", node, "' ran on ", placed, ", not on ", device));
      }
    }
    all.insert(all.end(), out.begin(), out.end());
  }
  return all;
}

// Runs `build` on the CPU and on GPU:0 and compares every fetched value.
void CompareStateful(const std::string& what, const StatefulBuilder& build) {
  SCOPED_TRACE(what);
  auto cpu = RunStateful(build, kCpu0);
  ASSERT_TRUE(cpu.ok()) << what << " on the CPU: " << cpu.status();
  auto gpu = RunStateful(build, kGpu0);
  ASSERT_TRUE(gpu.ok()) << what << " on the GPU: " << gpu.status();
  ASSERT_EQ(gpu->size(), cpu->size()) << what;
  for (size_t i = 0; i < cpu->size(); ++i) {
    ExpectClose(absl::StrCat(what, ": fetch ", i, " GPU vs CPU"), (*gpu)[i], (*cpu)[i]);
  }
}

// The dtypes of the GPU kernels of `op` for `attr` (float when unconstrained).
std::vector<DataType> GpuTypes(const std::string& op, const std::string& attr) {
  std::set<DataType> out;
  for (const KernelDef* k : GpuKernels(op)) {
    bool constrained = false;
    for (const auto& [name, type] : k->constraints()) {
      if (name == attr) {
        out.insert(type);
        constrained = true;
      }
    }
    if (!constrained) out.insert(DT_FLOAT);
  }
  return std::vector<DataType>(out.begin(), out.end());
}

bool HasGpuKernel(const std::string& op, DataType dtype, const std::string& attr = "dtype") {
  for (DataType t : GpuTypes(op, attr)) {
    if (t == dtype) return true;
  }
  return false;
}

Tensor AsType(const Tensor& t, DataType dt) {
  auto c = CastTensor(t, dt);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : Tensor();
}

// VarHandleOp, AssignVariableOp, ReadVariableOp (and AssignAddVariableOp, VarIsInitializedOp
// where the GPU has them): a variable created, assigned, added to and read on each device.
std::string CheckVariables() {
  static std::string* summary = nullptr;  // one check for the five ops
  if (summary != nullptr) return *summary + " (checked above)";
  std::vector<std::string> done;
  for (DataType dt : GpuTypes("VarHandleOp", "dtype")) {
    if (!HasGpuKernel("ReadVariableOp", dt) || !HasGpuKernel("AssignVariableOp", dt)) continue;
    const bool add = HasGpuKernel("AssignAddVariableOp", dt);
    const bool is_init = !GpuKernels("VarIsInitializedOp").empty();
    CompareStateful("variables " + DataTypeString(dt), [=](const Scope& s) {
      Var w = Var::Create(s.WithOpName("w"),
                          ops::Const(s, AsType(conformance::D({1, -2, 3, 4, 0.5, 6}, {2, 3}), dt)));
      std::vector<Step> steps;
      if (is_init) {
        OpBuilder(s.WithOpName("is_init"), "VarIsInitializedOp").Input(w.handle()).Finalize();
        steps.push_back({{}, {"is_init:0"}});  // false: not yet assigned
      }
      steps.push_back({{w.initializer().name()}, {}});
      steps.push_back({{}, {w.value().name()}});
      if (add) {
        OpBuilder(s.WithOpName("add"), "AssignAddVariableOp")
            .Input(w.handle())
            .Input(ops::Const(s, AsType(conformance::D({1, 1, 1, 2, 2, 2}, {2, 3}), dt)))
            .Finalize();
        steps.push_back({{"add"}, {}});
        steps.push_back({{}, {w.value().name()}});
      }
      if (is_init) steps.push_back({{}, {"is_init:0"}});
      return steps;
    });
    done.push_back(DataTypeString(dt));
  }
  summary = new std::string(
      Join(done) + " (create, assign, assign-add, read, is-initialized on GPU:0 vs CPU:0)");
  return *summary;
}

// A value for a scalar hyperparameter of an optimizer op, by its argument name.
double Hyperparameter(const std::string& name) {
  if (name == "beta1" || name == "beta1_power" || name == "momentum") return 0.9;
  if (name == "beta2" || name == "beta2_power") return 0.999;
  if (name == "epsilon") return 1e-8;
  return 0.1;  // lr, alpha
}

// A ResourceApply* op: variables (and slots) on each device, three updates, every variable read.
std::string CheckOptimizer(const std::string& op) {
  const OpDef* def = OpRegistry::Global()->LookUp(op);
  std::vector<std::string> done;
  for (DataType dt : GpuTypes(op, "T")) {
    CompareStateful(op + " " + DataTypeString(dt), [=](const Scope& s) {
      std::vector<Var> vars;
      const Scope apply_scope = s.WithOpName("apply");  // OpBuilder keeps a reference
      OpBuilder apply(apply_scope, op);
      for (const ArgDef& arg : def->inputs) {
        if (arg.type == DT_STRING) {
          const double k = 1.0 + vars.size();
          std::vector<double> init = {0.5 * k, -1 * k, 2 * k, 0.25 * k, 1.5 * k};
          if (!vars.empty()) {
            for (double& e : init) e = std::abs(e) * 0.1;  // slots (Adam's v) non-negative
          }
          vars.push_back(Var::Create(s.WithOpName(arg.name),
                                     ops::Const(s, AsType(conformance::D(init, {5}), dt))));
          apply.Input(vars.back().handle());
        } else if (arg.name == "grad" || arg.name == "delta") {
          apply.Input(ops::Const(s, AsType(conformance::D({0.3, -0.7, 1.1, 0, -2}, {5}), dt)));
        } else {
          apply.Input(ops::Const(s, AsType(Tensor::Scalar(Hyperparameter(arg.name)), dt)));
        }
      }
      apply.Finalize();
      std::vector<Step> steps;
      Step init;
      for (const Var& v : vars) init.targets.push_back(v.initializer().name());
      steps.push_back(init);
      for (int i = 0; i < 3; ++i) steps.push_back({{"apply"}, {}});
      Step read;
      for (const Var& v : vars) read.fetches.push_back(v.value().name());
      steps.push_back(read);
      return steps;
    });
    done.push_back(DataTypeString(dt));
  }
  return Join(done) + " (3 updates of variables on GPU:0 vs CPU:0)";
}

// NoOp on the GPU: runs as a target after a GPU op, placed on GPU:0.
std::string CheckNoOp() {
  Scope root = Scope::NewRootScope();
  Scope g = root.WithDevice(kGpu0);
  auto x = ops::Const(g.WithOpName("x"), Tensor::FromVector<float>({1, 2}));
  auto y = ops::Identity(g.WithOpName("y"), x);
  ops::NoOp(g.WithOpName("noop").WithControlDependencies(y));
  GraphDef graph;
  EXPECT_TRUE(root.ToGraphDef(&graph).ok()) << root.status();
  auto session = NewSession(NoOptimizer());
  EXPECT_TRUE(session.ok() && (*session)->Create(graph).ok());
  if (!session.ok()) return "no session";
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  absl::Status st = (*session)->Run(trace, {}, {}, {"noop"}, &out, &metadata);
  EXPECT_TRUE(st.ok()) << "NoOp on the GPU: " << st;
  EXPECT_TRUE(out.empty());
  auto placed = metadata.placement().find("noop");
  EXPECT_TRUE(placed != metadata.placement().end() && IsGpu0(placed->second))
      << "NoOp placed on " << (placed == metadata.placement().end() ? "<missing>" : placed->second);
  return "a target after a GPU op, placed on GPU:0";
}

// An unfed Placeholder pinned to the GPU: the documented error.
std::string CheckPlaceholder() {
  Scope root = Scope::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x").WithDevice(kGpu0), DT_FLOAT, TensorShape({2}));
  ops::Identity(root.WithOpName("y").WithDevice(kGpu0), x);
  GraphDef graph;
  EXPECT_TRUE(root.ToGraphDef(&graph).ok()) << root.status();
  auto session = NewSession(NoOptimizer());
  EXPECT_TRUE(session.ok() && (*session)->Create(graph).ok());
  if (!session.ok()) return "no session";
  std::vector<Tensor> out;
  absl::Status st = (*session)->Run({}, {"y:0"}, {}, &out);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << "an unfed Placeholder: " << st;
  EXPECT_NE(st.message().find("not fed"), std::string::npos) << st;
  st = (*session)->Run({{"x", Tensor::FromVector<float>({3, 4})}}, {"y:0"}, {}, &out);
  EXPECT_TRUE(st.ok()) << st;
  if (st.ok()) ExpectClose("fed Placeholder on the GPU", out[0], Tensor::FromVector<float>({3, 4}));
  return "float (unfed: the documented error; fed: its value)";
}

// A random op on the GPU: range, mean, stddev of 10,000 values; the same seed twice, the same
// values.
std::string CheckRandom(const std::string& op, double lo, double hi, double mean, double stddev) {
  std::vector<std::string> done;
  for (DataType dt : GpuTypes(op, "dtype")) {
    std::vector<Tensor> runs;
    for (int r = 0; r < 2; ++r) {
      Scope root = Scope::NewRootScope();
      OpBuilder(root.WithOpName("r").WithDevice(kGpu0), op)
          .Input(Tensor::FromVector<int32_t>({100, 100}))
          .Attr("dtype", dt)
          .Attr("seed", int64_t{5})
          .Finalize();
      GraphDef graph;
      EXPECT_TRUE(root.ToGraphDef(&graph).ok()) << root.status();
      auto session = NewSession(NoOptimizer());
      std::vector<Tensor> out;
      absl::Status st = session.ok() ? (*session)->Create(graph) : session.status();
      if (st.ok()) st = (*session)->Run({}, {"r:0"}, {}, &out);
      EXPECT_TRUE(st.ok()) << op << " " << DataTypeString(dt) << " on the GPU: " << st;
      if (!st.ok()) return "failed";
      runs.push_back(out[0]);
    }
    EXPECT_TRUE(TensorsEqual(runs[0], runs[1])) << op << ": the same seed, other values";
    const std::vector<double> x = Values(runs[0]);
    double sum = 0, sum_sq = 0;
    for (double v : x) {
      EXPECT_TRUE(v >= lo && v <= hi) << op << " value " << v;
      sum += v;
      sum_sq += v * v;
    }
    const double n = static_cast<double>(x.size()), m = sum / n;
    EXPECT_NEAR(m, mean, 0.03) << op;
    EXPECT_NEAR(std::sqrt(sum_sq / n - m * m), stddev, 0.03) << op;
    done.push_back(DataTypeString(dt));
  }
  return Join(done) + " (range, mean, stddev, seeded repeatability)";
}

// Collectives among `members` GPU devices (`per_gpu` logical devices per GPU): float, against the
// sum, the concatenation or the source's value, every member placed on its GPU device, and each
// collective's trace label saying whether it went through NCCL as `nccl` says it should.
std::string CheckGpuCollective(const std::string& op, int members = 3, int per_gpu = 3,
                               bool nccl = false) {
  const int source = std::min(1, members - 1);
  Scope s = Scope::NewRootScope();
  std::vector<std::string> fetches;
  std::vector<std::vector<float>> inputs;
  for (int m = 0; m < members; ++m) {
    const std::string device = "/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(m);
    std::vector<float> v = {float(m), 1, float(m % 2), 0.5f};
    inputs.push_back(v);
    Scope d = s.WithDevice(device);
    auto x = ops::Const(d.WithOpName("x" + std::to_string(m)),
                        Tensor::FromVector<float>(v, TensorShape({2, 2})));
    Output y;
    if (op == "CollectiveReduce") y = ops::CollectiveReduce(d, x, members, 1, 1);
    if (op == "CollectiveGather") y = ops::CollectiveGather(d, x, members, 1, 1);
    if (op == "CollectiveBcastSend" || op == "CollectiveBcastRecv") {
      y = m == source ? ops::CollectiveBcastSend(d, x, members, 1, 1, {2, 2})
                      : ops::CollectiveBcastRecv(d, DT_FLOAT, {2, 2}, members, 1, 1);
    }
    // A GPU kernel after the collective: its result is used in device memory.
    fetches.push_back(ops::Mul(d, y, ops::Const(d, 2.0f)).name());
  }
  SessionOptions options = NoOptimizer();
  options.config.mutable_gpu_options()->set_virtual_devices_per_gpu(per_gpu);
  GraphDef graph;
  EXPECT_TRUE(s.ToGraphDef(&graph).ok()) << s.status();
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return "no session";
  std::vector<Tensor> out;
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  absl::Status st = (*session)->Create(graph);
  // Twice: the second step reuses the communicators (NCCL) and the placed graph.
  for (int step = 0; step < 2 && st.ok(); ++step) {
    metadata = RunMetadata();
    st = (*session)->Run(trace, {}, fetches, {}, &out, &metadata);
  }
  EXPECT_TRUE(st.ok()) << op << " on " << members << " GPU devices: " << st;
  if (!st.ok()) return st.ToString();
  for (const auto& [node, placed] : metadata.placement()) {
    if (node.rfind("Collective", 0) == 0) {
      EXPECT_NE(placed.find("/device:GPU:"), std::string::npos) << node << " ran on " << placed;
    }
  }
  int labelled = 0;
  for (const DeviceStepStats& dev : metadata.step_stats().dev_stats()) {
    for (const NodeExecStats& ns : dev.node_stats()) {
      if (ns.op().rfind("Collective", 0) != 0) continue;
      ++labelled;
      EXPECT_EQ(ns.timeline_label().find("via NCCL") != std::string::npos, nccl)
          << op << " " << ns.node_name() << ": " << ns.timeline_label();
    }
  }
  EXPECT_EQ(labelled, members) << op;
  std::vector<double> want;
  if (op == "CollectiveReduce") {
    for (int j = 0; j < 4; ++j) {
      double sum = 0;
      for (const auto& v : inputs) sum += v[j];
      want.push_back(2 * sum);
    }
  } else if (op == "CollectiveGather") {
    for (const auto& v : inputs) {
      for (float x : v) want.push_back(2 * x);
    }
  } else {
    for (float x : inputs[source]) want.push_back(2 * x);
  }
  for (int m = 0; m < members; ++m) {
    std::vector<double> got;
    for (int64_t i = 0; i < out[m].NumElements(); ++i) got.push_back(out[m].data<float>()[i]);
    EXPECT_EQ(got, want) << op << " member " << m;
  }
  return absl::StrCat("float over GPU:0..", members - 1, " (", per_gpu,
                      " logical devices per GPU), results used on the GPU",
                      nccl ? ", through NCCL" : ", staged through host memory");
}

// GPU checks for ops whose conformance case is a check by hand.
const std::map<std::string, std::function<std::string()>>& GpuCustomChecks() {
  static const auto* checks = [] {
    auto* m = new std::map<std::string, std::function<std::string()>>;
    for (const char* op : {"VarHandleOp", "ReadVariableOp", "AssignVariableOp",
                           "AssignAddVariableOp", "VarIsInitializedOp"}) {
      (*m)[op] = CheckVariables;
    }
    for (const char* op :
         {"ResourceApplyGradientDescent", "ResourceApplyMomentum", "ResourceApplyAdam"}) {
      (*m)[op] = [op] { return CheckOptimizer(op); };
    }
    for (const char* op :
         {"CollectiveReduce", "CollectiveGather", "CollectiveBcastSend", "CollectiveBcastRecv"}) {
      (*m)[op] = [op] { return CheckGpuCollective(op); };
    }
    (*m)["NoOp"] = CheckNoOp;
    (*m)["Placeholder"] = CheckPlaceholder;
    (*m)["RandomUniform"] = [] {
      return CheckRandom("RandomUniform", 0, 1, 0.5, std::sqrt(1.0 / 12));
    };
    (*m)["RandomStandardNormal"] = [] {
      return CheckRandom("RandomStandardNormal", -10, 10, 0, 1);
    };
    (*m)["TruncatedNormal"] = [] {
      return CheckRandom("TruncatedNormal", -2, 2, 0, 0.87962566103423978);
    };
    return m;
  }();
  return *checks;
}

// The ops with a GPU kernel, internal ones left out, sorted.
std::vector<std::string> GpuOps() {
  std::vector<std::string> out;
  for (const std::string& name : OpRegistry::Global()->ListOpNames()) {
    if (!IsInternal(name) && !GpuKernels(name).empty()) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---- the tests --------------------------------------------------------------------------------

// Needs no GPU: the kernel registry of a CUDA build lists the GPU kernels.
TEST(GpuConformanceTest, EveryGpuKernelHasACase) {
  const auto& table = ConformanceTable();
  const std::vector<std::string> ops = GpuOps();
  for (const std::string& name : ops) {
    auto it = table.find(name);
    if (it == table.end()) {
      ADD_FAILURE() << "op " << name << " has a GPU kernel but no conformance case: add one to "
                    << "ConformanceTable() in tests/kernels/conformance_table.h";
    } else if (it->second.custom && GpuCustomChecks().count(name) == 0) {
      ADD_FAILURE() << "op " << name << " has a GPU kernel and a CPU check by hand, but no GPU "
                    << "check: add one to GpuCustomChecks() in tests/gpu/gpu_conformance_test.cc";
    }
  }
  std::cout << "[gpu conformance] " << ops.size() << " ops with a GPU kernel"
            << (ops.empty() ? " (a build without CUDA registers none)" : "") << "\n";
}

TEST(GpuConformanceTest, EveryGpuOpEveryDtypeMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const absl::Status listed = SessionListsGpu0();
  ASSERT_TRUE(listed.ok()) << listed;
  const auto& table = ConformanceTable();
  int ops_checked = 0, variants = 0;
  for (const std::string& name : GpuOps()) {
    auto it = table.find(name);
    if (it == table.end()) continue;  // EveryGpuKernelHasACase reports it
    const ConformanceCase& c = it->second;
    const OpDef* def = OpRegistry::Global()->LookUp(name);
    ASSERT_NE(def, nullptr) << name;
    SCOPED_TRACE("op " + name);
    ++ops_checked;
    if (c.custom) {
      auto check = GpuCustomChecks().find(name);
      if (check == GpuCustomChecks().end()) continue;  // reported by EveryGpuKernelHasACase
      std::cout << "[gpu conformance] " << name << ": " << check->second() << "\n";
      ++variants;
      continue;
    }
    // Every (kernel, dtype) pair; variants with the same attrs run once.
    std::set<std::string> seen_attrs;
    std::set<const KernelDef*> reached;
    std::string summary;
    const std::vector<const KernelDef*> kernels = GpuKernels(name);
    for (const KernelDef* k : kernels) {
      std::vector<DataType> dtypes;
      bool constrained = false;
      for (const auto& [attr, type] : k->constraints()) {
        if (attr == c.type_attr) {
          dtypes.push_back(type);
          constrained = true;
        }
      }
      const AttrDef* attr = def->FindAttr(c.type_attr);
      if (!constrained && attr == nullptr) dtypes.push_back(DT_INVALID);
      if (!constrained && attr != nullptr) {
        for (DataType dt : {DT_FLOAT, DT_INT32}) {
          const auto& allowed = attr->allowed_types;
          if (allowed.empty() || std::count(allowed.begin(), allowed.end(), dt) > 0) {
            dtypes.push_back(dt);
          }
        }
      }
      for (DataType dt : dtypes) {
        auto v = MakeVariant(*def, c, dt, *k);
        if (!v.ok()) {
          ADD_FAILURE() << name << ": the case cannot run GPU kernel " << k->DebugString()
                        << " for " << DataTypeString(dt) << ": " << v.status();
          continue;
        }
        std::string key;
        for (const auto& [a, value] : v->attrs) key += a + "=" + value.ShortDebugString() + ";";
        if (!seen_attrs.insert(key).second) continue;
        CheckVariant(*def, c, *v, &reached, &summary);
        ++variants;
      }
    }
    for (const KernelDef* k : kernels) {
      if (reached.count(k) == 0) summary += " [not reached: " + k->DebugString() + "]";
    }
    std::cout << "[gpu conformance] " << name << ":" << summary << "\n";
  }
  std::cout << "[gpu conformance] " << ops_checked << " ops, " << variants
            << " (op, dtype) runs on GPU:0 against CPU:0\n";
  EXPECT_GT(ops_checked, 0) << "a GPU device but no op with a GPU kernel";
}

#ifdef SHARDFLOW_HAVE_CUDA
// NCCL on a machine with one GPU: a group of one member, which only $SHARDFLOW_NCCL=force sends
// through NCCL (a one-rank communicator: the meeting, the launch and the stream order).
TEST(GpuCollectiveTest, OneMemberThroughNcclWhenForced) {
  SKIP_WITHOUT_GPU();
  if (!gpu::BuiltWithNccl()) GTEST_SKIP() << "built without NCCL";
  setenv("SHARDFLOW_NCCL", "force", 1);
  for (const char* op : {"CollectiveReduce", "CollectiveGather", "CollectiveBcastSend"}) {
    std::cout << op << ": " << CheckGpuCollective(op, 1, 1, true) << "\n";
  }
  unsetenv("SHARDFLOW_NCCL");
}

// NCCL between two GPUs of the machine (one device per GPU); skipped with fewer GPUs.
TEST(GpuCollectiveTest, TwoGpusThroughNccl) {
  SKIP_WITHOUT_GPU();
  if (!gpu::BuiltWithNccl()) GTEST_SKIP() << "built without NCCL";
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    GTEST_SKIP() << "this machine has " << count
                 << " GPU(s); NCCL needs two (it refuses two ranks on one GPU)";
  }
  for (const char* op :
       {"CollectiveReduce", "CollectiveGather", "CollectiveBcastSend", "CollectiveBcastRecv"}) {
    std::cout << op << ": " << CheckGpuCollective(op, 2, 1, true) << "\n";
  }
}
#endif  // SHARDFLOW_HAVE_CUDA

}  // namespace
}  // namespace shardflow
