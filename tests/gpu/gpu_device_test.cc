// The GPU device end to end, through local sessions: devices listed, ops placed on GPU:0 by
// default, results equal to the CPU's, a model split over two logical GPUs with a CPU op between,
// the memory limit (an error that names it, and the session still works), and a small MLP trained
// on the GPU against the same training on the CPU.
//
// Without a GPU (a build without CUDA, or none visible) every test skips with a message.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "ops/training.h"
#include "runtime/profiler/chrome_trace.h"
#include "runtime/session.h"
#include "tests/util/gpu_test_util.h"

namespace shardflow {
namespace {

constexpr char kGpu0[] = "/device:GPU:0";
constexpr char kGpu1[] = "/device:GPU:1";
constexpr char kCpu0[] = "/device:CPU:0";

#define SKIP_WITHOUT_GPU() SF_SKIP_WITHOUT_GPU("[gpu device]")

SessionOptions CpuOnly() {
  SessionOptions options;
  options.config.set_gpu_device_count(-1);
  return options;
}

// The device type and id of a full device name ("GPU:0"), or the name itself if it does not parse.
std::string ShortDevice(const std::string& name) {
  auto d = DeviceName::Parse(name);
  return d.ok() && d->has_type ? absl::StrCat(d->type, ":", d->id) : name;
}

std::unique_ptr<Session> Open(const Scope& s, const SessionOptions& options) {
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  auto session = NewSession(options);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return nullptr;
  absl::Status st = (*session)->Create(def);
  EXPECT_TRUE(st.ok()) << st;
  return *std::move(session);
}

Tensor RandomTensor(const TensorShape& shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

Tensor Zeros(int64_t n) {
  Tensor t(DT_FLOAT, TensorShape({n}));
  std::fill(t.data<float>(), t.data<float>() + n, 0.0f);
  return t;
}

// Fails unless a and b are float tensors of one shape within rtol * max(1, |b|).
void ExpectAllClose(const Tensor& a, const Tensor& b, double rtol, const std::string& what) {
  ASSERT_EQ(a.dtype(), DT_FLOAT) << what;
  ASSERT_EQ(b.dtype(), DT_FLOAT) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  int failures = 0;
  for (int64_t i = 0; i < a.NumElements() && failures < 3; ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    if (!(std::abs(x - y) <= rtol * std::max(1.0, std::abs(y)))) {
      ADD_FAILURE() << what << ": element " << i << " is " << x << " on the GPU, " << y
                    << " on the CPU";
      ++failures;
    }
  }
}

// The nodes of the executed partition graphs (FULL_TRACE) whose op is one of `ops`, with the
// device each ran on.
std::vector<std::pair<std::string, std::string>> NodesOfOps(const RunMetadata& metadata,
                                                            const std::vector<std::string>& ops) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const GraphDef& part : metadata.partition_graphs()) {
    for (const NodeDef& n : part.node()) {
      if (std::find(ops.begin(), ops.end(), n.op()) != ops.end()) {
        out.push_back({n.name(), n.assigned_device()});
      }
    }
  }
  return out;
}

// memory_limit_mb = 256: a 1 GiB product fails with an error naming the size or limit, and the
// session keeps working (a small and a 16 MiB product, then the big one fails again). First in
// the file: a GPU's allocator is the process's (runtime/gpu/gpu_device.h), made with the limit of
// the first session that uses the GPU, so the later tests here run under 256 MiB too (they need
// a few MiB). test::NoGpuReason() asks CUDA, not a session, so it makes no allocator.
TEST(GpuDeviceTest, AllocationOverTheMemoryLimitFailsAndTheSessionRecovers) {
  SKIP_WITHOUT_GPU();
  SessionOptions limited;
  limited.config.mutable_gpu_options()->set_memory_limit_mb(256);
  Scope s = Scope::NewRootScope();
  Scope g = s.WithDevice(kGpu0);
  auto a = ops::Placeholder(s.WithOpName("a"), DT_FLOAT, TensorShape({-1, 1}));
  auto b = ops::Placeholder(s.WithOpName("b"), DT_FLOAT, TensorShape({1, -1}));
  ops::MatMul(g.WithOpName("outer"), a, b);  // [n, n]
  auto session = Open(s, limited);
  ASSERT_NE(session, nullptr);
  auto ones = [](int64_t n, bool column) {
    Tensor t(DT_FLOAT, column ? TensorShape({n, 1}) : TensorShape({1, n}));
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = 1.0f + static_cast<float>(i % 3);
    return t;
  };
  auto run = [&](int64_t n, std::vector<Tensor>* out) {
    return session->Run({{"a", ones(n, true)}, {"b", ones(n, false)}}, {"outer:0"}, {}, out);
  };
  std::vector<Tensor> out;
  // 16384^2 floats: 1 GiB, four times the limit.
  absl::Status big = run(16384, &out);
  std::cout << "[gpu device] 1 GiB under a 256 MiB limit: " << big << "\n";
  ASSERT_FALSE(big.ok()) << "a 1 GiB output under memory_limit_mb = 256 succeeded";
  EXPECT_EQ(big.code(), absl::StatusCode::kResourceExhausted) << big;
  const std::string msg(big.message());
  const bool names_amount =
      msg.find("1073741824") != std::string::npos || msg.find("268435456") != std::string::npos ||
      msg.find("MiB") != std::string::npos || msg.find("GiB") != std::string::npos;
  EXPECT_TRUE(names_amount) << "the error should name the bytes asked for or the limit: " << big;

  absl::Status small = run(3, &out);
  ASSERT_TRUE(small.ok()) << "the session after the failed allocation: " << small;
  ASSERT_EQ(out[0].shape(), TensorShape({3, 3}));
  // (1 + i % 3)(1 + j % 3)
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(out[0].data<float>()[i * 3 + j], static_cast<float>((1 + i) * (1 + j)));
  }
  absl::Status medium = run(2048, &out);  // 16 MiB
  ASSERT_TRUE(medium.ok()) << "16 MiB under a 256 MiB limit: " << medium;
  EXPECT_EQ(out[0].data<float>()[2047 * 2048 + 2047], 4.0f);  // (1 + 2047 % 3)^2
  absl::Status again = run(16384, &out);
  EXPECT_FALSE(again.ok()) << "the second 1 GiB output succeeded";
}

TEST(GpuDeviceTest, DevicesAreListed) {
  SKIP_WITHOUT_GPU();
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok()) << session.status();
  auto devices = (*session)->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  bool gpu0 = false, cpu0 = false;
  for (const DeviceAttributes& d : *devices) {
    std::cout << "[gpu device] " << d.name << " (" << d.device_type << ", memory limit "
              << d.memory_limit_bytes << " bytes)\n";
    if (d.name == "/job:localhost/replica:0/task:0/device:GPU:0") {
      gpu0 = true;
      EXPECT_EQ(d.device_type, kDeviceGpu);
    }
    if (d.name == "/job:localhost/replica:0/task:0/device:CPU:0") cpu0 = true;
  }
  EXPECT_TRUE(gpu0) << "no /job:localhost/replica:0/task:0/device:GPU:0";
  EXPECT_TRUE(cpu0) << "no /job:localhost/replica:0/task:0/device:CPU:0";
  // GPU devices come first: the default placement takes the first device that can run a node.
  EXPECT_EQ(devices->front().device_type, kDeviceGpu);

  // gpu_device_count = -1: none; 2 virtual devices per GPU: GPU:0 and GPU:1.
  auto none = NewSession(CpuOnly());
  ASSERT_TRUE(none.ok()) << none.status();
  auto none_devices = (*none)->ListDevices();
  ASSERT_TRUE(none_devices.ok()) << none_devices.status();
  for (const DeviceAttributes& d : *none_devices) {
    EXPECT_NE(d.device_type, kDeviceGpu) << "gpu_device_count = -1 still lists " << d.name;
  }
  SessionOptions two;
  two.config.mutable_gpu_options()->set_virtual_devices_per_gpu(2);
  auto split = NewSession(two);
  ASSERT_TRUE(split.ok()) << split.status();
  int gpus = 0;
  bool gpu1 = false;
  auto split_devices = (*split)->ListDevices();
  ASSERT_TRUE(split_devices.ok()) << split_devices.status();
  for (const DeviceAttributes& d : *split_devices) {
    if (d.device_type == kDeviceGpu) ++gpus;
    if (d.name == "/job:localhost/replica:0/task:0/device:GPU:1") gpu1 = true;
  }
  EXPECT_TRUE(gpu1) << "virtual_devices_per_gpu = 2 lists no GPU:1";
  EXPECT_EQ(gpus % 2, 0) << "virtual_devices_per_gpu = 2 lists an odd number of GPU devices";
}

// x [4,3] fed, transpose(relu(x w)): every node that can run on the GPU runs on GPU:0 without
// any device request, and the values equal the CPU's.
TEST(GpuDeviceTest, DefaultPlacementIsTheGpuAndValuesEqualTheCpu) {
  SKIP_WITHOUT_GPU();
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({4, 3}));
  auto w = ops::Const(s.WithOpName("w"), RandomTensor({3, 5}, 3));
  auto y = ops::MatMul(s.WithOpName("matmul"), x, w);
  auto r = ops::Relu(s.WithOpName("relu"), y);
  ops::Transpose(s.WithOpName("transpose"), r, {1, 0});
  const Tensor xv = RandomTensor({4, 3}, 4);

  auto gpu = Open(s, SessionOptions());
  ASSERT_NE(gpu, nullptr);
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> got;
  absl::Status st = gpu->Run(trace, {{"x", xv}}, {"transpose:0", "matmul:0"}, {}, &got, &metadata);
  ASSERT_TRUE(st.ok()) << st;

  // Placement: the node map and the executed partitions agree that the kernels ran on GPU:0.
  for (const char* node : {"w", "matmul", "transpose"}) {
    auto it = metadata.placement().find(node);
    ASSERT_NE(it, metadata.placement().end()) << node << " missing from RunMetadata.placement";
    EXPECT_EQ(ShortDevice(it->second), "GPU:0") << node << " placed on " << it->second;
  }
  for (const auto& [node, device] : NodesOfOps(metadata, {"MatMul", "_FusedMatMul", "Transpose"})) {
    EXPECT_EQ(ShortDevice(device), "GPU:0") << node << " ran on " << device;
  }
  // Nodes of an op with a GPU kernel for their float type ran on the GPU too (Relu's kernel may
  // come later than MatMul's; whichever has one).
  for (const GraphDef& part : metadata.partition_graphs()) {
    for (const NodeDef& n : part.node()) {
      if (n.op().rfind("_", 0) == 0) continue;  // _Send, _Recv, _Arg, _Retval
      auto types = KernelRegistry::Global()->SupportedDeviceTypes(n);
      auto dtype = n.attr().find("T");
      const bool float_node = dtype != n.attr().end() && dtype->second.type() == DT_FLOAT;
      if (float_node && std::count(types.begin(), types.end(), kDeviceGpu) > 0) {
        EXPECT_EQ(ShortDevice(n.assigned_device()), "GPU:0")
            << n.name() << " (" << n.op() << ") has a GPU kernel but ran on "
            << n.assigned_device();
      }
    }
  }
  bool gpu_stats = false, matmul_timed = false;
  for (const DeviceStepStats& dev : metadata.step_stats().dev_stats()) {
    if (ShortDevice(dev.device()) != "GPU:0") continue;
    gpu_stats |= dev.node_stats_size() > 0;
    for (const NodeExecStats& ns : dev.node_stats()) {
      if (ns.device_end_micros() == 0) continue;
      // Kernel time on the stream: inside the host's interval for the node, never negative.
      EXPECT_LE(ns.device_start_micros(), ns.device_end_micros()) << ns.node_name();
      EXPECT_GE(ns.device_start_micros(), ns.start_micros()) << ns.node_name();
      EXPECT_LE(ns.device_end_micros(), ns.end_micros()) << ns.node_name();
      matmul_timed |= ns.op() == "MatMul" || ns.op() == "_FusedMatMul";
    }
  }
  EXPECT_TRUE(gpu_stats) << "FULL_TRACE step stats have no node of GPU:0";
  EXPECT_TRUE(matmul_timed) << "the MatMul's time on the GPU stream was not recorded";
  // The Chrome trace shows that work on GPU:0's stream row.
  const std::string chrome = ChromeTraceJson(metadata);
  EXPECT_NE(chrome.find("stream (kernels and copies on the device)"), std::string::npos);

  auto cpu = Open(s, CpuOnly());
  ASSERT_NE(cpu, nullptr);
  std::vector<Tensor> want;
  st = cpu->Run({{"x", xv}}, {"transpose:0", "matmul:0"}, {}, &want);
  ASSERT_TRUE(st.ok()) << st;
  ExpectAllClose(got[0], want[0], 1e-5, "transpose(relu(x w))");
  ExpectAllClose(got[1], want[1], 1e-5, "x w");

  // The second run reuses the placed graph and gives the same values.
  std::vector<Tensor> again;
  st = gpu->Run({{"x", xv}}, {"transpose:0", "matmul:0"}, {}, &again);
  ASSERT_TRUE(st.ok()) << st;
  ExpectAllClose(again[0], got[0], 0, "the second run");
}

// ResNet's stem has SAME windows with more padding after than before (a 7x7 convolution and a
// 3x3 max pool with stride 2 on even sizes), which cuDNN cannot pad: the GPU kernels pad the
// input (convolutions) or clamp their windows (pooling). Values as on the CPU.
void CheckUnevenSamePadding() {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 8, 8, 3}));
  auto w = ops::Const(s.WithOpName("w"), RandomTensor({7, 7, 3, 4}, 11));
  auto conv = ops::Conv2D(s.WithOpName("conv"), x, w, {1, 2, 2, 1}, "SAME");  // 2/3 padding
  auto max = ops::MaxPool(s.WithOpName("max"), conv, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");  // 0/1
  auto avg = ops::AvgPool(s.WithOpName("avg"), conv, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
  const Tensor xv = RandomTensor({2, 8, 8, 3}, 12);
  const std::vector<std::string> fetches = {"conv:0", "max:0", "avg:0"};
  auto gpu = Open(s, SessionOptions());
  ASSERT_NE(gpu, nullptr);
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> got;
  absl::Status st = gpu->Run(trace, {{"x", xv}}, fetches, {}, &got, &metadata);
  ASSERT_TRUE(st.ok()) << st;
  for (const char* node : {"conv", "max", "avg"}) {
    auto it = metadata.placement().find(node);
    ASSERT_NE(it, metadata.placement().end()) << node;
    EXPECT_EQ(ShortDevice(it->second), "GPU:0") << node << " placed on " << it->second;
  }
  auto cpu = Open(s, CpuOnly());
  ASSERT_NE(cpu, nullptr);
  std::vector<Tensor> want;
  st = cpu->Run({{"x", xv}}, fetches, {}, &want);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(got[0].shape(), TensorShape({2, 4, 4, 4}));
  ASSERT_EQ(got[1].shape(), TensorShape({2, 2, 2, 4}));
  ExpectAllClose(got[0], want[0], 1e-4, "Conv2D 7x7 stride 2 SAME on 8x8");
  ExpectAllClose(got[1], want[1], 1e-5, "MaxPool 3x3 stride 2 SAME on 4x4");
  ExpectAllClose(got[2], want[2], 1e-5, "AvgPool 3x3 stride 2 SAME on 4x4");
}

TEST(GpuDeviceTest, UnevenSamePaddingMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  // In the default layout (NHWC for convolutions this small) and in NCHW inside the kernels.
  for (const char* layout : {"", "nchw"}) {
    SCOPED_TRACE(absl::StrCat("SHARDFLOW_CUDNN_LAYOUT=", layout));
    setenv("SHARDFLOW_CUDNN_LAYOUT", layout, 1);
    CheckUnevenSamePadding();
  }
  unsetenv("SHARDFLOW_CUDNN_LAYOUT");
}

// Two layers on two logical GPUs with a CPU op between: relu(relu(x w1) * 0.5 + 1) w2), built with
// layer devices given, against the same graph all on the CPU.
Output TwoLayers(const Scope& s, const std::string& dev1, const std::string& cpu,
                 const std::string& dev2) {
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({8, 16}));
  Scope l1 = s.WithDevice(dev1);
  auto h1 =
      ops::Relu(l1.WithOpName("layer1/relu"),
                ops::MatMul(l1.WithOpName("layer1/matmul"), x,
                            ops::Const(l1.WithOpName("layer1/w"), RandomTensor({16, 32}, 5))));
  Scope c = s.WithDevice(cpu);
  auto mid =
      ops::Add(c.WithOpName("between/add"), ops::Mul(c.WithOpName("between/mul"), h1, 0.5f), 1.0f);
  Scope l2 = s.WithDevice(dev2);
  return ops::Relu(l2.WithOpName("layer2/relu"),
                   ops::MatMul(l2.WithOpName("layer2/matmul"), mid,
                               ops::Const(l2.WithOpName("layer2/w"), RandomTensor({32, 4}, 6))));
}

TEST(GpuDeviceTest, ModelParallelOverTwoLogicalGpus) {
  SKIP_WITHOUT_GPU();
  SessionOptions two;
  two.config.mutable_gpu_options()->set_virtual_devices_per_gpu(2);
  Scope s = Scope::NewRootScope();
  Output y = TwoLayers(s, kGpu0, kCpu0, kGpu1);
  auto gpu = Open(s, two);
  ASSERT_NE(gpu, nullptr);
  const Tensor xv = RandomTensor({8, 16}, 7);
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> got;
  absl::Status st = gpu->Run(trace, {{"x", xv}}, {y.name()}, {}, &got, &metadata);
  ASSERT_TRUE(st.ok()) << st;
  const std::vector<std::pair<std::string, std::string>> want_devices = {
      {"layer1/matmul", "GPU:0"}, {"layer1/relu", "GPU:0"},   {"between/mul", "CPU:0"},
      {"between/add", "CPU:0"},   {"layer2/matmul", "GPU:1"}, {"layer2/relu", "GPU:1"}};
  for (const auto& [node, device] : want_devices) {
    auto it = metadata.placement().find(node);
    ASSERT_NE(it, metadata.placement().end()) << node << " missing from RunMetadata.placement";
    EXPECT_EQ(ShortDevice(it->second), device) << node << " placed on " << it->second;
  }
  // One partition per device, with tensors crossing GPU:0 -> CPU:0 -> GPU:1.
  std::vector<std::string> parts;
  for (const GraphDef& part : metadata.partition_graphs()) {
    if (part.node_size() > 0) parts.push_back(ShortDevice(part.node(0).assigned_device()));
  }
  std::sort(parts.begin(), parts.end());
  EXPECT_EQ(parts, (std::vector<std::string>{"CPU:0", "GPU:0", "GPU:1"}));
  EXPECT_FALSE(NodesOfOps(metadata, {"_Send"}).empty()) << "no _Send between the devices";

  Scope r = Scope::NewRootScope();
  Output yr = TwoLayers(r, kCpu0, kCpu0, kCpu0);
  auto cpu = Open(r, CpuOnly());
  ASSERT_NE(cpu, nullptr);
  std::vector<Tensor> want;
  st = cpu->Run({{"x", xv}}, {yr.name()}, {}, &want);
  ASSERT_TRUE(st.ok()) << st;
  ExpectAllClose(got[0], want[0], 1e-5, "two layers on GPU:0 and GPU:1");
}

// A 20-32-5 MLP (variables on the GPU by default) trained with `optimizer` for `steps` steps on a
// fixed batch; the loss of every step.
struct TrainResult {
  std::vector<float> losses;
  std::string w1_device;            // where w1's VarHandleOp was placed
  std::vector<std::string> matmul;  // where the MatMuls of the step ran
};

TrainResult TrainMlp(const SessionOptions& options, bool adam, int steps) {
  TrainResult result;
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({64, 20}));
  auto labels = ops::Placeholder(s.WithOpName("labels"), DT_INT32, TensorShape({64}));
  Var w1 = Var::Create(s.WithOpName("w1"), RandomTensor({20, 32}, 11, 0.3f));
  Var b1 = Var::Create(s.WithOpName("b1"), Zeros(32));
  Var w2 = Var::Create(s.WithOpName("w2"), RandomTensor({32, 5}, 12, 0.3f));
  Var b2 = Var::Create(s.WithOpName("b2"), Zeros(5));
  auto h = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, x, w1.value()), b1.value()));
  auto logits = ops::BiasAdd(s, ops::MatMul(s, h, w2.value()), b2.value());
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, labels);
  auto loss = ops::Mean(s.WithOpName("loss"), xent.loss, {0});
  GradientDescentOptimizer sgd(0.1);
  AdamOptimizer adam_opt(0.01);
  auto train = adam ? adam_opt.Minimize(s, loss) : sgd.Minimize(s, loss);
  EXPECT_TRUE(train.ok()) << train.status();
  if (!train.ok()) return result;
  Operation init = InitializeAllVariables(s);
  auto session = Open(s, options);
  if (session == nullptr) return result;

  // Labels a linear map of x can learn: argmax(x r).
  const Tensor xv = RandomTensor({64, 20}, 13);
  const Tensor r = RandomTensor({20, 5}, 14);
  Tensor lv(DT_INT32, TensorShape({64}));
  for (int i = 0; i < 64; ++i) {
    int best = 0;
    double best_v = -1e30;
    for (int k = 0; k < 5; ++k) {
      double v = 0;
      for (int j = 0; j < 20; ++j) v += xv.data<float>()[i * 20 + j] * r.data<float>()[j * 5 + k];
      if (v > best_v) best_v = v, best = k;
    }
    lv.data<int32_t>()[i] = best;
  }
  std::vector<Tensor> out;
  absl::Status st = session->Run({}, {}, {init.name()}, &out);
  EXPECT_TRUE(st.ok()) << st;
  if (!st.ok()) return result;
  for (int step = 0; step < steps; ++step) {
    RunOptions trace;
    if (step == 0) trace.set_trace_level(RunOptions::FULL_TRACE);
    RunMetadata metadata;
    st = session->Run(trace, {{"x", xv}, {"labels", lv}}, {"loss:0"}, {train->name()}, &out,
                      &metadata);
    EXPECT_TRUE(st.ok()) << "step " << step << ": " << st;
    if (!st.ok()) return result;
    result.losses.push_back(out[0].scalar<float>());
    if (step == 0) {
      auto it = metadata.placement().find(w1.handle().node()->name());
      if (it != metadata.placement().end()) result.w1_device = ShortDevice(it->second);
      for (const auto& [node, device] : NodesOfOps(metadata, {"MatMul", "_FusedMatMul"})) {
        result.matmul.push_back(ShortDevice(device));
      }
    }
  }
  return result;
}

void CheckTraining(bool adam) {
  const char* name = adam ? "Adam" : "GradientDescent";
  constexpr int kSteps = 40;
  TrainResult gpu = TrainMlp(SessionOptions(), adam, kSteps);
  ASSERT_EQ(gpu.losses.size(), static_cast<size_t>(kSteps)) << name << " on the GPU";
  TrainResult cpu = TrainMlp(CpuOnly(), adam, kSteps);
  ASSERT_EQ(cpu.losses.size(), static_cast<size_t>(kSteps)) << name << " on the CPU";
  std::cout << "[gpu device] " << name << " MLP loss: GPU " << gpu.losses.front() << " -> "
            << gpu.losses.back() << ", CPU " << cpu.losses.front() << " -> " << cpu.losses.back()
            << "\n";
  EXPECT_EQ(gpu.w1_device, "GPU:0") << "the variable w1 was not placed on the GPU by default";
  EXPECT_FALSE(gpu.matmul.empty()) << "no MatMul in the step's partition graphs";
  for (const std::string& d : gpu.matmul)
    EXPECT_EQ(d, "GPU:0") << name << ": a MatMul ran on " << d;
  EXPECT_LT(gpu.losses.back(), 0.7 * gpu.losses.front()) << name << ": the loss did not go down";
  // The same steps: early losses agree closely, the last within float drift.
  for (int i = 0; i < 5; ++i) {
    EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 1e-4 * std::max(1.0f, cpu.losses[i]))
        << name << " step " << i;
  }
  EXPECT_NEAR(gpu.losses.back(), cpu.losses.back(), 2e-2 * std::max(1.0f, cpu.losses.back()))
      << name << " after " << kSteps << " steps";
}

TEST(GpuDeviceTest, TrainingWithGradientDescentMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  CheckTraining(/*adam=*/false);
}

TEST(GpuDeviceTest, TrainingWithAdamMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  CheckTraining(/*adam=*/true);
}

}  // namespace
}  // namespace shardflow
