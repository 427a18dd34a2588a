// Gradient checks on the GPU: float gradients of the ops a model trains with, from sessions that
// place on the GPU first, against central finite differences (tests/util/gradient_checker.h,
// delta 1e-2, tolerance 2e-2), on inputs away from the kinks of max and relu.
//
// The op under test is built with the device "/device:GPU:0" and soft placement off, so its
// forward kernel must run there (else the session fails). Before the check, a trace of one step of
// its gradient graph must show the forward node on GPU:0, and every float node of an op with a
// GPU kernel (the backward ops: MatMul, Conv2DBackpropInput, MaxPoolGrad, ReluGrad, ...) on GPU:0
// by default.
//
// Without a GPU (a build without CUDA, or none visible) every test skips with a message.
#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/util/gpu_test_util.h"
#include "tests/util/gradient_checker.h"

namespace shardflow {
namespace {

constexpr char kGpu0[] = "/device:GPU:0";
constexpr double kDelta = 1e-2, kTolerance = 2e-2;

#define SKIP_WITHOUT_GPU() SF_SKIP_WITHOUT_GPU("[gpu gradient]")

Tensor Random(const TensorShape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = static_cast<float>(dist(gen));
  return t;
}

// Distinct values 0.1 apart, shuffled: a 1e-2 nudge never changes which one is a window's max,
// and none is 0 (relu's kink).
Tensor Separated(const TensorShape& shape, uint32_t seed) {
  Tensor t(DT_FLOAT, shape);
  std::vector<int> order(t.NumElements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.data<float>()[i] = 0.1f * order[i] - 0.95f;
  }
  return t;
}

// Builds the op under test: `gpu` requests GPU:0, `root` requests nothing (for index constants).
using Builder =
    std::function<Output(const Scope& root, const Scope& gpu, const std::vector<Output>& xs)>;

bool OnGpu0(const std::string& device) {
  auto d = DeviceName::Parse(device);
  return d.ok() && d->type == kDeviceGpu && d->id == 0;
}

// One step of d(sum y)/d xs with FULL_TRACE: the forward node on GPU:0, and every float node of
// an op with a GPU kernel on GPU:0. Returns "k of n backward nodes on GPU:0".
std::string CheckPlacement(const std::string& what, const Builder& build,
                           const std::vector<Tensor>& values) {
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs;
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (size_t i = 0; i < values.size(); ++i) {
    xs.push_back(
        ops::Placeholder(root.WithOpName(absl::StrCat("x", i)), DT_FLOAT, values[i].shape()));
    feeds.push_back({xs.back().name(), values[i]});
  }
  Output y = build(root, root.WithDevice(kGpu0), xs);
  Scope gs = root.NewSubScope("grad");
  Output loss = ops::Sum(gs, ops::Reshape(gs, y, {-1}), {0});
  std::vector<Output> grads;
  absl::Status st = AddGradients(gs, {loss}, xs, &grads);
  EXPECT_TRUE(st.ok()) << what << ": " << st;
  GraphDef def;
  st = root.ToGraphDef(&def);
  EXPECT_TRUE(st.ok()) << what << ": " << st;
  if (!st.ok()) return "no graph";
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return "no session";
  st = (*session)->Create(def);
  EXPECT_TRUE(st.ok()) << what << ": " << st;
  std::vector<std::string> fetches = {y.name()};
  for (const Output& g : grads) {
    EXPECT_TRUE(g.valid()) << what << ": no gradient";
    if (g.valid()) fetches.push_back(g.name());
  }
  RunOptions trace;
  trace.set_trace_level(RunOptions::FULL_TRACE);
  RunMetadata metadata;
  std::vector<Tensor> out;
  st = (*session)->Run(trace, feeds, fetches, {}, &out, &metadata);
  EXPECT_TRUE(st.ok()) << what << ": the gradient step failed: " << st;
  if (!st.ok()) return "failed";
  auto placed = metadata.placement().find(y.node()->name());
  EXPECT_TRUE(placed != metadata.placement().end() && OnGpu0(placed->second))
      << what << ": the forward node " << y.node()->name() << " ran on "
      << (placed == metadata.placement().end() ? "<missing>" : placed->second);
  int backward = 0, backward_gpu = 0;
  for (const GraphDef& part : metadata.partition_graphs()) {
    for (const NodeDef& n : part.node()) {
      if (n.op().rfind("_", 0) == 0 && n.op().rfind("_Fused", 0) != 0) continue;  // _Send, ...
      auto t = n.attr().find("T");
      if (t == n.attr().end() || t->second.type() != DT_FLOAT) continue;
      auto types = KernelRegistry::Global()->SupportedDeviceTypes(n);
      if (std::count(types.begin(), types.end(), kDeviceGpu) == 0) continue;
      EXPECT_TRUE(OnGpu0(n.assigned_device()))
          << what << ": " << n.name() << " (" << n.op() << ") has a GPU kernel but ran on "
          << n.assigned_device();
      if (n.name().rfind("grad/", 0) == 0) {
        ++backward;
        if (OnGpu0(n.assigned_device())) ++backward_gpu;
      }
    }
  }
  return absl::StrCat(backward_gpu, " of ", backward, " float backward nodes on GPU:0");
}

// The placement check, then the finite-difference check; prints one line.
void CheckGradient(const std::string& what, const Builder& build,
                   const std::vector<Tensor>& values) {
  SCOPED_TRACE(what);
  const std::string placement = CheckPlacement(what, build, values);
  Scope root = Scope::NewRootScope();
  std::vector<Output> xs;
  for (size_t i = 0; i < values.size(); ++i) {
    xs.push_back(
        ops::Placeholder(root.WithOpName(absl::StrCat("x", i)), DT_FLOAT, values[i].shape()));
  }
  Output y = build(root, root.WithDevice(kGpu0), xs);
  auto err = test::MaxGradientError(root, xs, values, y, kDelta);
  ASSERT_TRUE(err.ok()) << what << ": " << err.status();
  EXPECT_LT(*err, kTolerance) << what;
  std::cout << "[gpu gradient] " << what << ": max relative error " << *err << "; " << placement
            << "\n";
}

TEST(GpuGradientTest, MatMul) {
  SKIP_WITHOUT_GPU();
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CheckGradient(absl::StrCat("MatMul transpose_a=", ta, " transpose_b=", tb),
                    [=](const Scope&, const Scope& g, const std::vector<Output>& x) {
                      return ops::MatMul(g, x[0], x[1], ta, tb);
                    },
                    {Random(ta ? TensorShape({4, 3}) : TensorShape({3, 4}), 1),
                     Random(tb ? TensorShape({2, 4}) : TensorShape({4, 2}), 2)});
    }
  }
}

// Small convolutions run in NHWC by default; NCHW (the big ones' layout) is forced once more.
TEST(GpuGradientTest, Conv2DInNchw) {
  SKIP_WITHOUT_GPU();
  setenv("SHARDFLOW_CUDNN_LAYOUT", "nchw", 1);
  for (const char* padding : {"SAME", "VALID"}) {
    CheckGradient(absl::StrCat("Conv2D 3x3 stride 2 ", padding, " on 6x6, NCHW inside"),
                  [=](const Scope&, const Scope& g, const std::vector<Output>& x) {
                    return ops::Conv2D(g, x[0], x[1], {1, 2, 2, 1}, padding);
                  },
                  {Random({2, 6, 6, 2}, 24), Random({3, 3, 2, 3}, 25)});
  }
  unsetenv("SHARDFLOW_CUDNN_LAYOUT");
}

TEST(GpuGradientTest, Conv2D) {
  SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<int64_t> strides;
    std::string padding;
  };
  for (const Case& c :
       {Case{{1, 1, 1, 1}, "SAME"}, Case{{1, 2, 2, 1}, "VALID"}, Case{{1, 2, 2, 1}, "SAME"}}) {
    CheckGradient("Conv2D 3x3 stride " + std::to_string(c.strides[1]) + " " + c.padding,
                  [=](const Scope&, const Scope& g, const std::vector<Output>& x) {
                    return ops::Conv2D(g, x[0], x[1], c.strides, c.padding);
                  },
                  {Random({2, 5, 5, 2}, 3), Random({3, 3, 2, 3}, 4)});
  }
  // Uneven SAME padding (0 rows before, 1 after, as ResNet's stride-2 3x3 layers on even sizes):
  // the input padded at the bottom and right, the input gradient cropped back.
  CheckGradient("Conv2D 3x3 stride 2 SAME on 6x6 (uneven padding)",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::Conv2D(g, x[0], x[1], {1, 2, 2, 1}, "SAME");
                },
                {Random({2, 6, 6, 2}, 20), Random({3, 3, 2, 3}, 21)});
}

TEST(GpuGradientTest, MaxPool) {
  SKIP_WITHOUT_GPU();
  CheckGradient("MaxPool 2x2 stride 2 VALID",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::MaxPool(g, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
                },
                {Separated({2, 4, 4, 2}, 5)});
  CheckGradient("MaxPool 3x3 stride 2 SAME (overlapping windows)",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::MaxPool(g, x[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
                },
                {Separated({1, 5, 5, 2}, 6)});
  CheckGradient("MaxPool 3x3 stride 2 SAME on 6x6 (uneven padding)",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::MaxPool(g, x[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
                },
                {Separated({1, 6, 6, 2}, 22)});
}

TEST(GpuGradientTest, AvgPool) {
  SKIP_WITHOUT_GPU();
  CheckGradient("AvgPool 2x2 stride 2 VALID",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::AvgPool(g, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
                },
                {Random({2, 4, 4, 2}, 7)});
  CheckGradient("AvgPool 3x3 stride 1 SAME (edge windows smaller)",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::AvgPool(g, x[0], {1, 3, 3, 1}, {1, 1, 1, 1}, "SAME");
                },
                {Random({1, 4, 4, 3}, 8)});
  CheckGradient("AvgPool 3x3 stride 2 SAME on 6x6 (uneven padding)",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::AvgPool(g, x[0], {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
                },
                {Random({1, 6, 6, 3}, 23)});
}

TEST(GpuGradientTest, BiasAdd) {
  SKIP_WITHOUT_GPU();
  CheckGradient("BiasAdd [2,3,4] + [4]",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::BiasAdd(g, x[0], x[1]);
                },
                {Random({2, 3, 4}, 9), Random({4}, 10)});
}

TEST(GpuGradientTest, FusedBatchNorm) {
  SKIP_WITHOUT_GPU();
  for (bool training : {true, false}) {
    CheckGradient(
        absl::StrCat("FusedBatchNorm [2,3,4,5] is_training=", training),
        [=](const Scope&, const Scope& g, const std::vector<Output>& x) {
          // Inference uses the given statistics; training ignores them.
          auto mean = ops::Const(g, Random({5}, 14));
          auto variance = ops::Const(g, Random({5}, 15, 0.5, 1.5));
          return ops::FusedBatchNorm(g, x[0], x[1], x[2], mean, variance, 0.001f, training).y;
        },
        {Random({2, 3, 4, 5}, 11), Random({5}, 12, 0.5, 1.5), Random({5}, 13)});
  }
}

TEST(GpuGradientTest, Activations) {
  SKIP_WITHOUT_GPU();
  CheckGradient(
      "Relu",
      [](const Scope&, const Scope& g, const std::vector<Output>& x) { return ops::Relu(g, x[0]); },
      {Separated({3, 5}, 11)});
  CheckGradient(
      "Tanh",
      [](const Scope&, const Scope& g, const std::vector<Output>& x) { return ops::Tanh(g, x[0]); },
      {Random({3, 5}, 12, -2, 2)});
  CheckGradient("Sigmoid",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::Sigmoid(g, x[0]);
                },
                {Random({3, 5}, 13, -3, 3)});
  CheckGradient("Softmax",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::Softmax(g, x[0]);
                },
                {Random({3, 5}, 14, -2, 2)});
}

TEST(GpuGradientTest, SparseSoftmaxCrossEntropyWithLogits) {
  SKIP_WITHOUT_GPU();
  CheckGradient("SparseSoftmaxCrossEntropyWithLogits [4,5]",
                [](const Scope& root, const Scope& g, const std::vector<Output>& x) {
                  auto labels = ops::Const(root.WithOpName("labels"),
                                           Tensor::FromVector<int32_t>({3, 0, 4, 1}));
                  return ops::SparseSoftmaxCrossEntropyWithLogits(g, x[0], labels).loss;
                },
                {Random({4, 5}, 15, -2, 2)});
}

TEST(GpuGradientTest, Reductions) {
  SKIP_WITHOUT_GPU();
  for (bool mean : {false, true}) {
    for (const std::vector<int>& axes :
         {std::vector<int>{1}, std::vector<int>{0}, std::vector<int>{0, 1}}) {
      std::string axes_text;
      for (int a : axes) axes_text += (axes_text.empty() ? "" : ",") + std::to_string(a);
      CheckGradient(absl::StrCat(mean ? "Mean" : "Sum", " of [3,4] over axes {", axes_text, "}"),
                    [=](const Scope& root, const Scope& g, const std::vector<Output>& x) {
                      auto axis = ops::Const(root, Tensor::FromVector<int32_t>(std::vector<int32_t>(
                                                       axes.begin(), axes.end())));
                      return mean ? ops::Mean(g, x[0], axis) : ops::Sum(g, x[0], axis);
                    },
                    {Random({3, 4}, 16)});
    }
  }
  CheckGradient("Sum of [2,3,4] over axis 1, keep_dims",
                [](const Scope& root, const Scope& g, const std::vector<Output>& x) {
                  return ops::Sum(g, x[0], ops::Const(root, Tensor::FromVector<int32_t>({1})),
                                  true);
                },
                {Random({2, 3, 4}, 17)});
}

TEST(GpuGradientTest, BroadcastingMulAndAdd) {
  SKIP_WITHOUT_GPU();
  CheckGradient("Mul [3,4] * [4]",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::Mul(g, x[0], x[1]);
                },
                {Random({3, 4}, 18), Random({4}, 19)});
  CheckGradient("Mul [3,1] * [1,4]",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::Mul(g, x[0], x[1]);
                },
                {Random({3, 1}, 20), Random({1, 4}, 21)});
  CheckGradient("Add [3,1] + [1,4]",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::Add(g, x[0], x[1]);
                },
                {Random({3, 1}, 22), Random({1, 4}, 23)});
  CheckGradient("Add [2,3,4] + [] (a scalar)",
                [](const Scope&, const Scope& g, const std::vector<Output>& x) {
                  return ops::Add(g, x[0], x[1]);
                },
                {Random({2, 3, 4}, 24), Random({}, 25)});
}

// A small network (conv, bias, tanh, average pool, dense, softmax cross entropy: smooth, so no
// kink is crossed) through several GPU kernels at once, gradients of both weights.
TEST(GpuGradientTest, SmallConvNet) {
  SKIP_WITHOUT_GPU();
  CheckGradient(
      "conv 3x3 -> bias -> tanh -> avg pool -> dense -> xent",
      [](const Scope& root, const Scope& g, const std::vector<Output>& x) {
        auto images = ops::Const(root.WithOpName("images"), Random({2, 4, 4, 1}, 26));
        auto h = ops::Tanh(g, ops::BiasAdd(g, ops::Conv2D(g, images, x[0], {1, 1, 1, 1}, "SAME"),
                                           ops::Const(root, Random({2}, 27))));
        auto p = ops::AvgPool(g, h, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
        auto flat = ops::Reshape(g, p, ops::Const(root, Tensor::FromVector<int32_t>({2, 8})));
        auto logits = ops::MatMul(g, flat, x[1]);
        auto labels = ops::Const(root.WithOpName("labels"), Tensor::FromVector<int32_t>({1, 2}));
        return ops::SparseSoftmaxCrossEntropyWithLogits(g, logits, labels).loss;
      },
      {Random({3, 3, 1, 2}, 28), Random({8, 3}, 29)});
}

}  // namespace
}  // namespace shardflow
