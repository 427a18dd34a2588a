// Gradient checks of the nn ops' gradient functions (ops/nn_grad.cc) against central finite
// differences (tests/util/gradient_checker.h). Ops with double kernels are checked in double with
// a tight tolerance; the float-only ones (convolution, pooling, batch norm) in float with
// delta 1e-2 and tolerance 1e-2, on inputs away from the kinks of max and relu.
#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

template <typename T>
Tensor Random(const TensorShape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = static_cast<T>(dist(gen));
  return t;
}

// Distinct values 0.1 apart, shuffled: a 1e-2 nudge never changes which one is a window's max.
Tensor Separated(const TensorShape& shape, uint32_t seed) {
  Tensor t(DT_FLOAT, shape);
  std::vector<int> order(t.NumElements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t i = 0; i < t.NumElements(); ++i)
    t.data<float>()[i] = 0.1f * order[i] - 0.95f;  // never 0 (relu's kink)
  return t;
}

constexpr double kFloatDelta = 1e-2, kFloatTol = 1e-2;
constexpr double kDoubleDelta = 1e-6, kDoubleTol = 1e-6;

Output Placeholder(const Scope& s, const std::string& name, const Tensor& value) {
  return ops::Placeholder(s.WithOpName(name), value.dtype(), value.shape());
}

// ---- float: convolution, pooling, batch norm ------------------------------------------------

struct ConvGradCase {
  TensorShape input, filter;
  int64_t stride;
  std::string padding;
};

TEST(NnGradTest, Conv2D) {
  const std::vector<ConvGradCase> cases = {{{1, 5, 5, 2}, {3, 3, 2, 3}, 1, "SAME"},
                                           {{2, 6, 7, 2}, {2, 3, 2, 2}, 2, "VALID"},
                                           {{1, 5, 6, 3}, {3, 3, 3, 2}, 2, "SAME"}};
  uint32_t seed = 1;
  for (const ConvGradCase& c : cases) {
    SCOPED_TRACE(c.input.DebugString() + " * " + c.filter.DebugString() + " " + c.padding);
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>(c.input, seed++), fv = Random<float>(c.filter, seed++);
    Output x = Placeholder(s, "x", xv), f = Placeholder(s, "f", fv);
    Output y = ops::Conv2D(s, x, f, {1, c.stride, c.stride, 1}, c.padding);
    auto err = test::MaxGradientError(s, {x, f}, {xv, fv}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// Conv2DBackpropInput as conv2d_transpose: dz [n, h, w, out] up to input_sizes through the
// filter; gradients to the filter and to dz.
TEST(NnGradTest, Conv2DBackpropInputAsTransposedConvolution) {
  const std::vector<ConvGradCase> cases = {{{1, 5, 5, 2}, {3, 3, 2, 3}, 1, "SAME"},
                                           {{2, 6, 7, 2}, {2, 3, 2, 2}, 2, "VALID"},
                                           {{1, 6, 6, 3}, {3, 3, 3, 2}, 2, "SAME"}};
  uint32_t seed = 40;
  for (const ConvGradCase& c : cases) {
    SCOPED_TRACE(c.input.DebugString() + " * " + c.filter.DebugString() + " " + c.padding);
    // dz has the forward convolution's output shape.
    auto out_dim = [&](int64_t in, int64_t k) {
      return c.padding == "SAME" ? (in + c.stride - 1) / c.stride : (in - k) / c.stride + 1;
    };
    const TensorShape dz_shape({c.input.dim(0), out_dim(c.input.dim(1), c.filter.dim(0)),
                                out_dim(c.input.dim(2), c.filter.dim(1)), c.filter.dim(3)});
    Tensor fv = Random<float>(c.filter, seed++), dzv = Random<float>(dz_shape, seed++);
    Scope s = Scope::NewRootScope();
    Output f = Placeholder(s, "f", fv), dz = Placeholder(s, "dz", dzv);
    std::vector<int32_t> sizes(c.input.dims().begin(), c.input.dims().end());
    Output y = ops::Conv2DBackpropInput(s, Tensor::FromVector<int32_t>(sizes), f, dz,
                                        {1, c.stride, c.stride, 1}, c.padding);
    auto err = test::MaxGradientError(s, {f, dz}, {fv, dzv}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

TEST(NnGradTest, LocalResponseNormalization) {
  for (int64_t radius : {0, 1, 2}) {
    SCOPED_TRACE(radius);
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<double>({2, 2, 3, 5}, 80 + radius, -2, 2);
    Output x = Placeholder(s, "x", xv);
    Output y(OpBuilder(s, "LRN")
                 .Input(x)
                 .Attr("depth_radius", radius)
                 .Attr("bias", 1.5f)
                 .Attr("alpha", 0.3f)
                 .Attr("beta", 0.75f)
                 .Finalize()
                 .node(),
             0);
    auto err = test::MaxGradientError(s, {x}, {xv}, y, kDoubleDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kDoubleTol);
  }
}

// For Relu: weights scaled to [-0.1, 0.1] and biases of +2 and -3 keep every pre-activation at
// least 0.2 from relu's kink, on both sides, so the finite differences never straddle it.
void AwayFromKink(const std::string& activation, Tensor* weights, Tensor* bias) {
  if (activation != "Relu") return;
  for (int64_t i = 0; i < weights->NumElements(); ++i) weights->data<float>()[i] *= 0.1f;
  for (int64_t i = 0; i < bias->NumElements(); ++i) bias->data<float>()[i] = i % 2 ? -3.0f : 2.0f;
}

// The graph optimizer's fused kernels (partitioner/optimizer/remapper.cc) and their gradients
// (ops/nn_grad.cc), for each activation and transpose.
TEST(NnGradTest, FusedMatMulAndFusedConv2D) {
  uint32_t seed = 40;
  for (const std::string activation : {"", "Relu", "Tanh", "Sigmoid"}) {
    for (bool ta : {false, true}) {
      SCOPED_TRACE("_FusedMatMul activation '" + activation + "' transpose_a " +
                   std::to_string(ta));
      Scope s = Scope::NewRootScope();
      Tensor av = Random<float>(ta ? TensorShape({4, 3}) : TensorShape({3, 4}), seed++);
      Tensor bv = Random<float>({4, 5}, seed++), biasv = Random<float>({5}, seed++);
      AwayFromKink(activation, &bv, &biasv);
      Output a = Placeholder(s, "a", av), b = Placeholder(s, "b", bv);
      Output bias = Placeholder(s, "bias", biasv);
      Output y(OpBuilder(s, "_FusedMatMul")
                   .Input(a)
                   .Input(b)
                   .Input(bias)
                   .Attr("transpose_a", ta)
                   .Attr("activation", activation)
                   .Finalize());
      auto err = test::MaxGradientError(s, {a, b, bias}, {av, bv, biasv}, y, kFloatDelta);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LT(*err, kFloatTol);
    }
    SCOPED_TRACE("_FusedConv2D activation '" + activation + "'");
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>({1, 5, 5, 2}, seed++), fv = Random<float>({3, 3, 2, 3}, seed++);
    Tensor biasv = Random<float>({3}, seed++);
    AwayFromKink(activation, &fv, &biasv);
    Output x = Placeholder(s, "x", xv), f = Placeholder(s, "f", fv);
    Output bias = Placeholder(s, "bias", biasv);
    Output y(OpBuilder(s, "_FusedConv2D")
                 .Input(x)
                 .Input(f)
                 .Input(bias)
                 .Attr("strides", std::vector<int64_t>{1, 2, 2, 1})
                 .Attr("padding", std::string("SAME"))
                 .Attr("activation", activation)
                 .Finalize());
    auto err = test::MaxGradientError(s, {x, f, bias}, {xv, fv, biasv}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// _FusedConv2DBatchNorm of (input, filter, scale, offset, mean, variance), or with a seventh
// input (the side) _FusedConv2DBatchNormAdd: SAME, stride 1, epsilon 0.001.
Output FusedConvBatchNorm(const Scope& s, const std::vector<Output>& inputs,
                          const std::string& activation) {
  OpBuilder b(s, inputs.size() == 7 ? "_FusedConv2DBatchNormAdd" : "_FusedConv2DBatchNorm");
  for (const Output& in : inputs) b.Input(in);
  return Output(b.Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
                    .Attr("padding", std::string("SAME"))
                    .Attr("epsilon", 0.001f)
                    .Attr("activation", activation)
                    .Finalize());
}

// Conv2D + inference batch norm (+ activation) as the remapper fuses them, with respect to the
// input, the filter, the scale and the offset.
TEST(NnGradTest, FusedConv2DBatchNorm) {
  uint32_t seed = 60;
  for (const std::string activation : {"", "Relu", "Tanh"}) {
    SCOPED_TRACE("_FusedConv2DBatchNorm activation '" + activation + "'");
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>({2, 4, 5, 2}, seed++), fv = Random<float>({3, 3, 2, 3}, seed++);
    Tensor scalev = Random<float>({3}, seed++, 0.5, 1.5), offsetv = Random<float>({3}, seed++);
    Tensor meanv = Random<float>({3}, seed++), varv = Random<float>({3}, seed++, 0.5, 1.5);
    AwayFromKink(activation, &fv, &offsetv);
    Output x = Placeholder(s, "x", xv), f = Placeholder(s, "f", fv);
    Output scale = Placeholder(s, "scale", scalev), offset = Placeholder(s, "offset", offsetv);
    // The mean stays within 0.1 of 0, so Relu's offsets of +2 and -3 keep clear of the kink.
    for (int64_t i = 0; i < 3; ++i) meanv.data<float>()[i] *= 0.1f;
    Output y = FusedConvBatchNorm(
        s, {x, f, scale, offset, ops::Const(s, meanv), ops::Const(s, varv)}, activation);
    auto err =
        test::MaxGradientError(s, {x, f, scale, offset}, {xv, fv, scalev, offsetv}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// A residual block's end as the remapper fuses it, with respect to the input, the filter, the
// scale, the offset and the side input (the shortcut), also when the side has batch 1 and is
// broadcast over the convolution's batch of 2.
TEST(NnGradTest, FusedConv2DBatchNormAdd) {
  uint32_t seed = 80;
  for (const int64_t side_batch : {2, 1}) {
    SCOPED_TRACE("_FusedConv2DBatchNormAdd, side batch " + std::to_string(side_batch));
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>({2, 4, 5, 2}, seed++), fv = Random<float>({3, 3, 2, 3}, seed++);
    Tensor scalev = Random<float>({3}, seed++, 0.5, 1.5), offsetv = Random<float>({3}, seed++);
    Tensor meanv = Random<float>({3}, seed++), varv = Random<float>({3}, seed++, 0.5, 1.5);
    Tensor sidev = Random<float>({side_batch, 4, 5, 3}, seed++);
    Output x = Placeholder(s, "x", xv), f = Placeholder(s, "f", fv);
    Output scale = Placeholder(s, "scale", scalev), offset = Placeholder(s, "offset", offsetv);
    Output side = Placeholder(s, "side", sidev);
    Output y = FusedConvBatchNorm(
        s, {x, f, scale, offset, ops::Const(s, meanv), ops::Const(s, varv), side}, "Tanh");
    auto err = test::MaxGradientError(s, {x, f, scale, offset, side},
                                      {xv, fv, scalev, offsetv, sidev}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// The frozen-graph form of a residual block's end, with respect to the input, the filter, the
// bias and the side input, also with a side of batch 1 broadcast over a batch of 2.
TEST(NnGradTest, FusedConv2DAdd) {
  uint32_t seed = 90;
  for (const int64_t side_batch : {2, 1}) {
    SCOPED_TRACE("_FusedConv2DAdd, side batch " + std::to_string(side_batch));
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>({2, 4, 5, 2}, seed++), fv = Random<float>({3, 3, 2, 3}, seed++);
    Tensor bv = Random<float>({3}, seed++), sidev = Random<float>({side_batch, 4, 5, 3}, seed++);
    Output x = Placeholder(s, "x", xv), f = Placeholder(s, "f", fv);
    Output b = Placeholder(s, "b", bv), side = Placeholder(s, "side", sidev);
    Output y(OpBuilder(s, "_FusedConv2DAdd")
                 .Input(x)
                 .Input(f)
                 .Input(b)
                 .Input(side)
                 .Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
                 .Attr("padding", std::string("SAME"))
                 .Attr("activation", std::string("Tanh"))
                 .Finalize());
    auto err = test::MaxGradientError(s, {x, f, b, side}, {xv, fv, bv, sidev}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

TEST(NnGradTest, MaxPoolAndAvgPool) {
  struct PoolGradCase {
    TensorShape input;
    int64_t k, stride;
    std::string padding;
  };
  const std::vector<PoolGradCase> cases = {
      {{1, 4, 4, 2}, 2, 2, "VALID"}, {{2, 5, 5, 2}, 3, 2, "SAME"}, {{1, 5, 4, 3}, 2, 1, "VALID"}};
  uint32_t seed = 10;
  for (const PoolGradCase& c : cases) {
    for (bool max : {true, false}) {
      SCOPED_TRACE(std::string(max ? "MaxPool " : "AvgPool ") + c.input.DebugString() + " " +
                   c.padding);
      Scope s = Scope::NewRootScope();
      Tensor xv = Separated(c.input, seed++);
      Output x = Placeholder(s, "x", xv);
      const std::vector<int64_t> ksize = {1, c.k, c.k, 1}, strides = {1, c.stride, c.stride, 1};
      Output y = max ? ops::MaxPool(s, x, ksize, strides, c.padding)
                     : ops::AvgPool(s, x, ksize, strides, c.padding);
      auto err = test::MaxGradientError(s, {x}, {xv}, y, kFloatDelta);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LT(*err, kFloatTol);
    }
  }
}

// 3-D convolution (strides, SAME / VALID, dilations), its transpose, and 3-D pooling.
TEST(NnGradTest, Conv3DAndPool3D) {
  struct Conv3DCase {
    TensorShape input, filter;
    std::vector<int64_t> strides, dilations;
    std::string padding;
  };
  const std::vector<Conv3DCase> cases = {
      {{1, 4, 4, 3, 2}, {3, 2, 2, 2, 3}, {1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}, "SAME"},
      {{2, 5, 4, 5, 2}, {2, 3, 2, 2, 2}, {1, 2, 1, 2, 1}, {1, 1, 1, 1, 1}, "VALID"},
      {{1, 5, 5, 4, 1}, {2, 2, 2, 1, 2}, {1, 1, 1, 1, 1}, {1, 2, 1, 2, 1}, "SAME"}};
  uint32_t seed = 40;
  for (const Conv3DCase& c : cases) {
    SCOPED_TRACE(c.input.DebugString() + " * " + c.filter.DebugString() + " " + c.padding);
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>(c.input, seed++), fv = Random<float>(c.filter, seed++);
    Output x = Placeholder(s, "x", xv), f = Placeholder(s, "f", fv);
    Output y = ops::Conv3D(s, x, f, c.strides, c.padding, c.dilations);
    auto err = test::MaxGradientError(s, {x, f}, {xv, fv}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
  {
    SCOPED_TRACE("Conv3DBackpropInputV2 as conv3d_transpose");
    Scope s = Scope::NewRootScope();
    Tensor fv = Random<float>({2, 2, 2, 2, 3}, 50), dzv = Random<float>({1, 2, 3, 2, 3}, 51);
    Output f = Placeholder(s, "f", fv), dz = Placeholder(s, "dz", dzv);
    Output y = ops::Conv3DBackpropInputV2(s, Tensor::FromVector<int32_t>({1, 4, 5, 4, 2}), f, dz,
                                          {1, 2, 2, 2, 1}, "SAME");
    auto err = test::MaxGradientError(s, {f, dz}, {fv, dzv}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
  for (const std::string padding : {"VALID", "SAME"}) {
    for (bool max : {true, false}) {
      SCOPED_TRACE(std::string(max ? "MaxPool3D " : "AvgPool3D ") + padding);
      Scope s = Scope::NewRootScope();
      Tensor xv = Separated({2, 3, 5, 4, 2}, max ? 60 : 61);
      Output x = Placeholder(s, "x", xv);
      const std::vector<int64_t> ksize = {1, 2, 3, 2, 1}, strides = {1, 1, 2, 2, 1};
      Output y = max ? ops::MaxPool3D(s, x, ksize, strides, padding)
                     : ops::AvgPool3D(s, x, ksize, strides, padding);
      auto err = test::MaxGradientError(s, {x}, {xv}, y, kFloatDelta);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LT(*err, kFloatTol);
    }
  }
}

TEST(NnGradTest, MaxPoolWithArgmax) {
  for (const std::string padding : {"VALID", "SAME"}) {
    SCOPED_TRACE(padding);
    Scope s = Scope::NewRootScope();
    Tensor xv = Separated({2, 5, 4, 3}, 70);
    Output x = Placeholder(s, "x", xv);
    Operation pool = OpBuilder(s, "MaxPoolWithArgmax")
                         .Input(x)
                         .Attr("ksize", std::vector<int64_t>{1, 2, 3, 1})
                         .Attr("strides", std::vector<int64_t>{1, 2, 1, 1})
                         .Attr("padding", padding)
                         .Finalize();
    ASSERT_TRUE(s.ok()) << s.status();
    auto err = test::MaxGradientError(s, {x}, {xv}, Output(pool.node(), 0), kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// DepthwiseConv2dNative: channels x multiplier, strides, SAME / VALID, dilations.
TEST(NnGradTest, DepthwiseConv2dNative) {
  struct Case {
    TensorShape input, filter;
    std::vector<int64_t> strides, dilations;
    std::string padding;
  };
  const std::vector<Case> cases = {
      {{1, 5, 5, 3}, {3, 3, 3, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, "SAME"},
      {{2, 6, 7, 2}, {2, 3, 2, 2}, {1, 2, 2, 1}, {1, 1, 1, 1}, "VALID"},
      {{1, 7, 6, 3}, {2, 2, 3, 2}, {1, 1, 1, 1}, {1, 2, 2, 1}, "SAME"}};
  uint32_t seed = 80;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input.DebugString() + " * " + c.filter.DebugString() + " " + c.padding);
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>(c.input, seed++), fv = Random<float>(c.filter, seed++);
    Output x = Placeholder(s, "x", xv), f = Placeholder(s, "f", fv);
    Operation conv = OpBuilder(s, "DepthwiseConv2dNative")
                         .Input(x)
                         .Input(f)
                         .Attr("strides", c.strides)
                         .Attr("dilations", c.dilations)
                         .Attr("padding", c.padding)
                         .Finalize();
    ASSERT_TRUE(s.ok()) << s.status();
    auto err = test::MaxGradientError(s, {x, f}, {xv, fv}, Output(conv.node(), 0), kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

TEST(NnGradTest, FusedBatchNormTrainingAndInference) {
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>({2, 3, 3, 2}, 20, -2, 2);
    Tensor scale_v = Tensor::FromVector<float>({1.5f, -0.75f});
    Tensor offset_v = Tensor::FromVector<float>({0.1f, 0.2f});
    Output x = Placeholder(s, "x", xv), scale = Placeholder(s, "scale", scale_v),
           offset = Placeholder(s, "offset", offset_v);
    Output mean = ops::Const(s, Tensor::FromVector<float>({0.2f, -0.1f}));
    Output var = ops::Const(s, Tensor::FromVector<float>({1.5f, 0.5f}));
    auto bn = ops::FusedBatchNorm(s, x, scale, offset, mean, var, 0.001f, training);
    auto err =
        test::MaxGradientError(s, {x, scale, offset}, {xv, scale_v, offset_v}, bn.y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// ---- double: bias, activations, softmax, losses, dropout ------------------------------------

TEST(NnGradTest, BiasAddAndRelu) {
  Scope s = Scope::NewRootScope();
  Tensor vv = Random<double>({2, 3, 4}, 30), bv = Random<double>({4}, 31);
  // Keep relu inputs away from 0, where it has a kink.
  for (int64_t i = 0; i < vv.NumElements(); ++i) {
    double& e = vv.data<double>()[i];
    e = e < 0 ? e - 0.5 : e + 1.5;
  }
  Output v = Placeholder(s, "v", vv), b = Placeholder(s, "b", bv);
  Output y = ops::Relu(s, ops::BiasAdd(s, v, b));
  auto err = test::MaxGradientError(s, {v, b}, {vv, bv}, y, kDoubleDelta);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, kDoubleTol);
}

TEST(NnGradTest, ReluFloat) {
  Scope s = Scope::NewRootScope();
  Tensor xv = Separated({3, 5}, 32);
  Output x = Placeholder(s, "x", xv);
  auto err = test::MaxGradientError(s, {x}, {xv}, ops::Relu(s, x), kFloatDelta);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, kFloatTol);
}

TEST(NnGradTest, SoftmaxAndLogSoftmax) {
  for (bool log : {false, true}) {
    SCOPED_TRACE(log ? "LogSoftmax" : "Softmax");
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<double>({2, 3, 5}, 40, -2, 2);
    Output x = Placeholder(s, "x", xv);
    Output y = log ? ops::LogSoftmax(s, x) : ops::Softmax(s, x);
    auto err = test::MaxGradientError(s, {x}, {xv}, y, kDoubleDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kDoubleTol);
  }
}

TEST(NnGradTest, SoftmaxCrossEntropyWithLogits) {
  Scope s = Scope::NewRootScope();
  Tensor xv = Random<double>({4, 6}, 50, -3, 3);
  Tensor lv = Random<double>({4, 6}, 51, 0, 1);
  for (int64_t r = 0; r < 4; ++r) {
    double sum = 0;
    for (int64_t k = 0; k < 6; ++k) sum += lv.data<double>()[r * 6 + k];
    for (int64_t k = 0; k < 6; ++k) lv.data<double>()[r * 6 + k] /= sum;
  }
  Output x = Placeholder(s, "x", xv);
  auto xent = ops::SoftmaxCrossEntropyWithLogits(s, x, ops::Const(s, lv));
  auto err = test::MaxGradientError(s, {x}, {xv}, xent.loss, kDoubleDelta);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, kDoubleTol);
}

TEST(NnGradTest, SparseSoftmaxCrossEntropyWithLogits) {
  for (bool wide : {false, true}) {
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<double>({5, 4}, 60, -3, 3);
    Tensor labels = wide ? Tensor::FromVector<int64_t>({0, 3, 1, 1, 2})
                         : Tensor::FromVector<int32_t>({0, 3, 1, 1, 2});
    Output x = Placeholder(s, "x", xv);
    auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, x, ops::Const(s, labels));
    // Through Mean, as a training loss is.
    Output loss = ops::Mean(s, xent.loss, 0);
    auto err = test::MaxGradientError(s, {x}, {xv}, loss, kDoubleDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kDoubleTol);
  }
}

// Regression: the gradient flowing into the fused ops' backprop output (a second derivative:
// a gradient penalty, MAML's meta-gradient) was dropped, so Hessian-vector products through
// the losses were zero. The Jacobian of backprop = softmax(x) - labels is softmax's.
TEST(NnGradTest, SecondDerivativesThroughTheFusedCrossEntropies) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<double>({3, 5}, 70, -2, 2);
    Output x = Placeholder(s, "x", xv);
    Output backprop = sparse ? ops::SparseSoftmaxCrossEntropyWithLogits(
                                   s, x, ops::Const(s, Tensor::FromVector<int32_t>({0, 4, 2})))
                                   .backprop
                             : ops::SoftmaxCrossEntropyWithLogits(
                                   s, x, ops::Const(s, Random<double>({3, 5}, 71, 0, 1)))
                                   .backprop;
    auto err = test::MaxGradientError(s, {x}, {xv}, backprop, kDoubleDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kDoubleTol);
  }
}

// ReluGrad, MaxPoolGrad and AvgPoolGrad are linear in the incoming gradient; their own gradients
// there make second derivatives through relu and average pooling (WGAN-GP critics) possible.
TEST(NnGradTest, ReluGradMaxPoolGradAndAvgPoolGradGradients) {
  {
    Scope s = Scope::NewRootScope();
    Tensor dzv = Random<double>({2, 3}, 72, -1, 1);
    Output dz = Placeholder(s, "dz", dzv);
    Output features = ops::Const(s, Tensor::FromVector<double>({-1, 2, 0.5, -3, 1, -0.5}, {2, 3}));
    auto err = test::MaxGradientError(s, {dz}, {dzv}, ops::ReluGrad(s, dz, features), kDoubleDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kDoubleTol);
  }
  {
    // MaxPoolGrad routes dz to each window's maximum (x fixed, its maxima distinct).
    Scope s = Scope::NewRootScope();
    Tensor xv = Separated(TensorShape({2, 4, 4, 2}), 74);
    Output x = ops::Const(s, xv);
    Output y = ops::MaxPool(s, x, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
    Tensor dzv = Random<float>({2, 2, 2, 2}, 75, -1, 1);
    Output dz = Placeholder(s, "dz", dzv);
    Output routed(OpBuilder(s.WithOpName("max_pool_grad"), "MaxPoolGrad")
                      .Input(x)
                      .Input(y)
                      .Input(dz)
                      .Attr("ksize", std::vector<int64_t>{1, 2, 2, 1})
                      .Attr("strides", std::vector<int64_t>{1, 2, 2, 1})
                      .Attr("padding", std::string("VALID"))
                      .Finalize()
                      .node(),
                  0);
    auto err = test::MaxGradientError(s, {dz}, {dzv}, routed, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
  {
    Scope s = Scope::NewRootScope();
    Tensor dzv = Random<float>({1, 2, 2, 2}, 73, -1, 1);
    Output dz = Placeholder(s, "dz", dzv);
    Output shape = ops::Const(s, Tensor::FromVector<int32_t>({1, 5, 5, 2}));
    Output y = ops::AvgPoolGrad(s, shape, dz, {1, 3, 3, 1}, {1, 2, 2, 1}, "VALID");
    auto err = test::MaxGradientError(s, {dz}, {dzv}, y, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// Second derivatives through the convolutions' filter gradients (MAML through conv weights): the
// backprops are linear in their two tensor inputs.
TEST(NnGradTest, ConvolutionFilterGradientsHaveGradients) {
  {
    Scope s = Scope::NewRootScope();
    Tensor xv = Random<float>({2, 5, 5, 3}, 90, -1, 1),
           dzv = Random<float>({2, 3, 3, 4}, 91, -1, 1);
    Output x = Placeholder(s, "x", xv), dz = Placeholder(s, "dz", dzv);
    Output shape = ops::Const(s, Tensor::FromVector<int32_t>({3, 3, 3, 4}));
    Output df = ops::Conv2DBackpropFilter(s, x, shape, dz, {1, 2, 2, 1}, "SAME");
    auto err = test::MaxGradientError(s, {x, dz}, {xv, dzv}, df, kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
  for (const char* type :
       {"DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}) {
    SCOPED_TRACE(type);
    Scope s = Scope::NewRootScope();
    const bool input = std::string(type).find("Input") != std::string::npos;
    // x [1, 5, 5, 2], filter [3, 3, 2, 2], dz [1, 3, 3, 4] (VALID, stride 1).
    Tensor av =
        input ? Random<float>({3, 3, 2, 2}, 92, -1, 1) : Random<float>({1, 5, 5, 2}, 93, -1, 1);
    Tensor dzv = Random<float>({1, 3, 3, 4}, 94, -1, 1);
    Output a = Placeholder(s, "a", av), dz = Placeholder(s, "dz", dzv);
    Output sizes = ops::Const(s, input ? Tensor::FromVector<int32_t>({1, 5, 5, 2})
                                       : Tensor::FromVector<int32_t>({3, 3, 2, 2}));
    OpBuilder b(s, type);
    if (input) {
      b.Input(sizes).Input(a);
    } else {
      b.Input(a).Input(sizes);
    }
    Operation op = b.Input(dz)
                       .Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
                       .Attr("dilations", std::vector<int64_t>{1, 1, 1, 1})
                       .Attr("padding", std::string("VALID"))
                       .Finalize();
    ASSERT_TRUE(s.ok()) << s.status();
    auto err = test::MaxGradientError(s, {a, dz}, {av, dzv}, Output(op.node(), 0), kFloatDelta);
    ASSERT_TRUE(err.ok()) << err.status();
    EXPECT_LT(*err, kFloatTol);
  }
}

// Note [The second derivative of batch norm]: each output of FusedBatchNormGrad against finite
// differences of the whole graph (in training the reserve spaces are the batch's statistics of
// x, recomputed by the forward op as x moves).
TEST(NnGradTest, FusedBatchNormGradGradients) {
  for (bool training : {true, false}) {
    for (int out = 0; out < 3; ++out) {
      SCOPED_TRACE(absl::StrCat(training ? "training" : "inference", " output ", out));
      Scope s = Scope::NewRootScope();
      Tensor xv = Random<float>({2, 3, 2, 2}, 95, -2, 2),
             dyv = Random<float>({2, 3, 2, 2}, 96, -1, 1);
      Tensor scale_v = Tensor::FromVector<float>({1.5f, -0.75f});
      Output x = Placeholder(s, "x", xv), dy = Placeholder(s, "dy", dyv),
             scale = Placeholder(s, "scale", scale_v);
      Output mean = ops::Const(s, Tensor::FromVector<float>({0.2f, -0.1f}));
      Output var = ops::Const(s, Tensor::FromVector<float>({1.5f, 0.5f}));
      auto bn = ops::FusedBatchNorm(s, x, scale, ops::Const(s, Tensor::FromVector<float>({0, 0})),
                                    mean, var, 0.001f, training);
      auto g = ops::FusedBatchNormGrad(s, dy, x, scale, bn.reserve_space_1, bn.reserve_space_2,
                                       0.001f, training);
      const Output outs[] = {g.x_backprop, g.scale_backprop, g.offset_backprop};
      auto err =
          test::MaxGradientError(s, {x, dy, scale}, {xv, dyv, scale_v}, outs[out], kFloatDelta);
      ASSERT_TRUE(err.ok()) << err.status();
      EXPECT_LT(*err, kFloatTol);
    }
  }
}

TEST(NnGradTest, LabelsGetNoGradient) {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DT_DOUBLE, TensorShape({2, 3}));
  Output labels = ops::Placeholder(s.WithOpName("labels"), DT_DOUBLE, TensorShape({2, 3}));
  auto xent = ops::SoftmaxCrossEntropyWithLogits(s, x, labels);
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {xent.loss}, {x, labels}, &grads).ok()) << s.status();
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_TRUE(grads[0].valid());
  EXPECT_FALSE(grads[1].valid());
}

TEST(NnGradTest, DropoutRateZeroIsIdentity) {
  Scope s = Scope::NewRootScope();
  Tensor xv = Random<double>({3, 4}, 70);
  Output x = Placeholder(s, "x", xv);
  auto err = test::MaxGradientError(s, {x}, {xv}, ops::Dropout(s, x, 0.0f, 5), kDoubleDelta);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, kDoubleTol);
}

// With a real rate the mask changes every run, so compare within one run: dx = dy * mask.
TEST(NnGradTest, DropoutGradientIsMaskedUpstreamGradient) {
  Scope s = Scope::NewRootScope();
  Tensor xv = Random<double>({8, 16}, 71), rv = Random<double>({8, 16}, 72);
  Output x = Placeholder(s, "x", xv);
  auto d = ops::DropoutWithMask(s, x, 0.5f, 9);
  Output loss = ops::Sum(s, ops::Mul(s, d.output, ops::Const(s, rv)), {0, 1});
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {loss}, {x}, &grads).ok()) << s.status();
  auto out = test::RunScope(s, {{x.name(), xv}}, {d.mask, grads[0]});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& mask = (*out)[0];
  const Tensor& dx = (*out)[1];
  int zeros = 0;
  for (int64_t i = 0; i < xv.NumElements(); ++i) {
    EXPECT_DOUBLE_EQ(dx.data<double>()[i], rv.data<double>()[i] * mask.data<double>()[i]);
    zeros += mask.data<double>()[i] == 0;
  }
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, xv.NumElements());
}

// StatelessDropout's mask is a function of its seed, so the numeric gradient check works at a
// real rate: the loss is the same function of x on every run.
TEST(NnGradTest, StatelessDropoutGradientCheck) {
  Scope s = Scope::NewRootScope();
  Tensor xv = Random<double>({6, 7}, 73);
  Output x = Placeholder(s, "x", xv);
  Operation d = OpBuilder(s, "StatelessDropout")
                    .Input(x)
                    .Input(ops::Const(s, Tensor::FromVector<int64_t>({11, 12})))
                    .Attr("rate", 0.5f)
                    .Finalize();
  ASSERT_TRUE(s.ok()) << s.status();
  auto err = test::MaxGradientError(s, {x}, {xv}, Output(d.node(), 0), kDoubleDelta);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, kDoubleTol);
}

// The CNN of the benchmark at a small batch, built with an unknown batch dimension: every
// parameter gets a gradient of its own shape, and plain gradient descent (parameters fed as
// placeholders) lowers the loss on a fixed batch.
TEST(NnGradTest, SmallCnnTrainsEndToEnd) {
  Scope s = Scope::NewRootScope();
  auto images = ops::Placeholder(s.WithOpName("images"), DT_FLOAT, TensorShape({-1, 12, 12, 1}));
  auto labels = ops::Placeholder(s.WithOpName("labels"), DT_INT32, TensorShape({-1}));
  std::vector<Tensor> values = {
      Random<float>({5, 5, 1, 4}, 1, -0.3, 0.3),    Random<float>({4}, 2, 0, 0.1),
      Random<float>({3, 3, 4, 8}, 3, -0.2, 0.2),    Random<float>({8}, 4, 0, 0.1),
      Random<float>({3 * 3 * 8, 16}, 5, -0.2, 0.2), Random<float>({16}, 6, 0, 0.1),
      Random<float>({16, 3}, 7, -0.3, 0.3),         Random<float>({3}, 8, 0, 0.1)};
  std::vector<Output> params;
  for (size_t i = 0; i < values.size(); ++i) {
    params.push_back(Placeholder(s, "p" + std::to_string(i), values[i]));
  }
  const std::vector<int64_t> one = {1, 1, 1, 1}, two = {1, 2, 2, 1};
  Output h =
      ops::Relu(s, ops::BiasAdd(s, ops::Conv2D(s, images, params[0], one, "SAME"), params[1]));
  h = ops::MaxPool(s, h, two, two, "SAME");  // [?, 6, 6, 4]
  h = ops::Relu(s, ops::BiasAdd(s, ops::Conv2D(s, h, params[2], one, "SAME"), params[3]));
  h = ops::MaxPool(s, h, two, two, "VALID");  // [?, 3, 3, 8]
  ASSERT_EQ(h.shape(), TensorShape({-1, 3, 3, 8}));
  h = ops::Reshape(s, h, Tensor::FromVector<int32_t>({-1, 3 * 3 * 8}));
  h = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, h, params[4]), params[5]));
  Output logits = ops::BiasAdd(s, ops::MatMul(s, h, params[6]), params[7]);
  Output loss = ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, labels).loss, 0);
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {loss}, params, &grads).ok()) << s.status();
  for (size_t i = 0; i < grads.size(); ++i) {
    ASSERT_TRUE(grads[i].valid()) << "parameter " << i;
    EXPECT_TRUE(grads[i].shape().IsCompatibleWith(values[i].shape()))
        << "parameter " << i << ": " << grads[i].shape().DebugString();
  }
  Tensor batch = Random<float>({6, 12, 12, 1}, 9, 0, 1);
  Tensor batch_labels = Tensor::FromVector<int32_t>({0, 1, 2, 0, 1, 2});
  std::vector<Output> fetches = {loss};
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  std::vector<float> losses;
  for (int step = 0; step < 8; ++step) {
    std::vector<std::pair<std::string, Tensor>> feeds = {{images.name(), batch},
                                                         {labels.name(), batch_labels}};
    for (size_t i = 0; i < params.size(); ++i) feeds.push_back({params[i].name(), values[i]});
    auto out = test::RunScope(s, feeds, fetches);
    ASSERT_TRUE(out.ok()) << out.status();
    losses.push_back((*out)[0].scalar<float>());
    for (size_t i = 0; i < values.size(); ++i) {
      const Tensor& g = (*out)[i + 1];
      ASSERT_EQ(g.shape(), values[i].shape()) << "parameter " << i;
      Tensor next = values[i].DeepCopy();
      for (int64_t k = 0; k < next.NumElements(); ++k)
        next.data<float>()[k] -= 0.5f * g.data<float>()[k];
      values[i] = next;
    }
  }
  EXPECT_LT(losses.back(), losses.front() * 0.8)
      << "loss " << losses.front() << " -> " << losses.back();
}

}  // namespace
}  // namespace shardflow
