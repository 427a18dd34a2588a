// The C++ layers API (ops/layers.h) and the ResNets built with it (ops/resnet.h): batch norm's
// statistics and moving averages, variable names, the residual network's shapes, gradients and
// that it learns; the residual add's gradient (SumToShape of equal shapes).
#include "ops/layers.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/resnet.h"
#include "tests/util/gradient_checker.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

Tensor RandomTensor(const TensorShape& shape, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

std::unique_ptr<Session> Open(const Scope& s) {
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok());
  EXPECT_TRUE((*session)->Create(def).ok());
  return *std::move(session);
}

// Per-channel mean and (biased) variance of a [rows, c] view.
void Moments(const Tensor& t, std::vector<double>* mean, std::vector<double>* var) {
  const int64_t c = t.dim_size(t.dims() - 1), rows = t.NumElements() / c;
  mean->assign(c, 0);
  var->assign(c, 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < c; ++k) (*mean)[k] += t.data<float>()[r * c + k] / rows;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < c; ++k) {
      const double d = t.data<float>()[r * c + k] - (*mean)[k];
      (*var)[k] += d * d / rows;
    }
  }
}

TEST(BatchNormLayerTest, TrainingNormalisesAndUpdatesMovingAverages) {
  Scope s = Scope::NewRootScope();
  const TensorShape shape({4, 3, 3, 2});
  Tensor xv = RandomTensor(shape, 1, 2, 6);  // mean ~4, far from the initial moving mean 0
  Output x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, shape);
  layers::BatchNorm bn(s.NewSubScope("block"), "bn", 2, {.momentum = 0.9f, .epsilon = 1e-3f});
  Output train_y = bn(x, /*training=*/true);
  Output eval_y = bn(x, /*training=*/false);
  Output loss = layers::WithUpdates(s, ops::Sum(s, train_y, {0, 1, 2, 3}), bn.update_ops());
  Operation init = InitializeAllVariables(s);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(bn.update_ops().size(), 2u);
  EXPECT_EQ(bn.moving_mean().name(), "block/bn/moving_mean");
  EXPECT_EQ(bn.gamma().name(), "block/bn/gamma");
  EXPECT_EQ(AllVariables(s, /*trainable_only=*/true).size(), 2u);  // gamma, beta
  EXPECT_EQ(AllVariables(s).size(), 4u);

  auto session = Open(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init.name()}, &out).ok());
  // Before any update, evaluation normalises with mean 0 and variance 1: y = x / sqrt(1 + eps).
  ASSERT_TRUE(session->Run({{"x", xv}}, {eval_y.name()}, {}, &out).ok());
  EXPECT_NEAR(out[0].data<float>()[5], xv.data<float>()[5] / std::sqrt(1.001f), 1e-5);

  // Training: per-channel mean 0 and variance 1, and the loss's updates move the averages.
  ASSERT_TRUE(session->Run({{"x", xv}}, {train_y.name(), loss.name()}, {}, &out).ok());
  std::vector<double> mean, var;
  Moments(out[0], &mean, &var);
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(mean[k], 0, 1e-5);
    EXPECT_NEAR(var[k], 1, 1e-2);  // var / (var + eps)
  }
  std::vector<double> x_mean, x_var;
  Moments(xv, &x_mean, &x_var);
  const double rows = 4 * 3 * 3;
  ASSERT_TRUE(session
                  ->Run({}, {bn.moving_mean().value().name(), bn.moving_variance().value().name()},
                        {}, &out)
                  .ok());
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(out[0].data<float>()[k], 0.1 * x_mean[k], 1e-5);
    // The unbiased batch variance enters the moving average (as in TF and PyTorch).
    EXPECT_NEAR(out[1].data<float>()[k], 0.9 + 0.1 * x_var[k] * rows / (rows - 1), 1e-5);
  }
  // Evaluation now uses the moving averages.
  ASSERT_TRUE(session->Run({{"x", xv}}, {eval_y.name()}, {}, &out).ok());
  std::vector<Tensor> mv;
  ASSERT_TRUE(
      session
          ->Run({}, {bn.moving_mean().value().name(), bn.moving_variance().value().name()}, {}, &mv)
          .ok());
  for (int64_t i = 0; i < 6; ++i) {
    const int k = i % 2;
    const float expected =
        (xv.data<float>()[i] - mv[0].data<float>()[k]) / std::sqrt(mv[1].data<float>()[k] + 1e-3f);
    EXPECT_NEAR(out[0].data<float>()[i], expected, 1e-4) << i;
  }
}

TEST(BatchNormLayerTest, BadOptionsAreErrors) {
  Scope s = Scope::NewRootScope();
  layers::BatchNorm bn(s, "bn", 4, {.momentum = 1.5f});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("momentum must be in [0, 1)"), std::string::npos)
      << s.status();
}

// The gradient of a residual block as the layers build it (conv, batch norm in training, an
// activation, conv, batch norm, add the input, activation) against finite differences, with
// respect to the input and both filters. tanh instead of relu keeps it smooth.
TEST(ResidualBlockTest, GradientsMatchFiniteDifferences) {
  Scope s = Scope::NewRootScope();
  const TensorShape shape({2, 4, 4, 3}), filter({3, 3, 3, 3});
  Tensor xv = RandomTensor(shape, 3), f1v = RandomTensor(filter, 4), f2v = RandomTensor(filter, 5);
  Output x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, shape);
  Output f1 = ops::Placeholder(s.WithOpName("f1"), DT_FLOAT, filter);
  Output f2 = ops::Placeholder(s.WithOpName("f2"), DT_FLOAT, filter);
  const Output gamma = ops::Const(s, {1.5f, 0.5f, 1.0f}), beta = ops::Const(s, {0.1f, -0.2f, 0.f});
  const Output none = ops::Const(s, Tensor(DT_FLOAT, TensorShape({0})));
  auto bn = [&](const Output& v) {
    return ops::FusedBatchNorm(s, v, gamma, beta, none, none, 1e-3f, true).y;
  };
  Output h = ops::Tanh(s, bn(ops::Conv2D(s, x, f1, {1, 1, 1, 1}, "SAME")));
  Output y = ops::Tanh(s, ops::Add(s, bn(ops::Conv2D(s, h, f2, {1, 1, 1, 1}, "SAME")), x));
  auto err = test::MaxGradientError(s, {x, f1, f2}, {xv, f1v, f2v}, y, 1e-2);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 2e-2);
}

TEST(ResNetTest, ShapesNamesAndUpdates) {
  Scope s = Scope::NewRootScope();
  Output images = ops::Placeholder(s.WithOpName("images"), DT_FLOAT, TensorShape({-1, 64, 64, 3}));
  layers::ResNetOptions o = layers::ResNet50Options(10);
  o.width = 8;  // a narrow ResNet-50: same graph, fewer channels
  layers::ResNet net(s.NewSubScope("resnet50"), o);
  Output logits = net(images, true);
  Output eval_logits = net(images, false);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(logits.shape().DebugString(), "[?,10]");
  EXPECT_EQ(eval_logits.shape().DebugString(), "[?,10]");
  // 53 batch norms (1 stem + 16 blocks x 3 + 4 shortcuts), two moving averages each.
  EXPECT_EQ(net.update_ops().size(), 2u * 53);
  // 53 convolutions, 53 x (gamma, beta), the dense layer's weights and bias.
  EXPECT_EQ(AllVariables(s, /*trainable_only=*/true).size(), 53u + 2 * 53 + 2);
  bool found = false;
  for (const Var& v : AllVariables(s)) found |= v.name() == "resnet50/stage4/block3/conv3/filter";
  EXPECT_TRUE(found);

  Scope s18 = Scope::NewRootScope();
  Output im18 = ops::Placeholder(s18.WithOpName("images"), DT_FLOAT, TensorShape({-1, 32, 32, 3}));
  layers::ResNetOptions o18 = layers::ResNet18Options(5);
  o18.width = 4;
  layers::ResNet net18(s18, o18);
  Output l18 = net18(im18, true);
  ASSERT_TRUE(s18.ok()) << s18.status();
  EXPECT_EQ(l18.shape().DebugString(), "[?,5]");
  EXPECT_EQ(net18.update_ops().size(), 2u * (1 + 8 * 2 + 3));

  Scope bad = Scope::NewRootScope();
  layers::ResNetOptions none = layers::ResNet18Options();
  none.blocks = {2, 0};
  layers::ResNet broken(bad, none);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stage 2 has 0 blocks"), std::string::npos) << bad.status();
}

// A small ResNet fits a fixed batch: every trainable variable gets a gradient, the loss falls,
// and training moves the moving averages that evaluation uses.
TEST(ResNetTest, SmallResNetLearns) {
  Scope s = Scope::NewRootScope();
  const int64_t n = 16;
  Output images = ops::Placeholder(s.WithOpName("images"), DT_FLOAT, TensorShape({n, 12, 12, 1}));
  Output labels = ops::Placeholder(s.WithOpName("labels"), DT_INT32, TensorShape({n}));
  layers::ResNetOptions o = layers::SmallResNetOptions(4);
  o.width = 4;
  layers::ResNet net(s.NewSubScope("resnet"), o);
  Output logits = net(images, true);
  Output eval_logits = net(images, false);
  Output loss = layers::WithUpdates(
      s, ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, labels).loss, {0}),
      net.update_ops());
  std::vector<Output> grads;
  std::vector<Output> values;
  for (const Var& v : AllVariables(s, true)) values.push_back(v.value());
  ASSERT_TRUE(AddGradients(s, {loss}, values, &grads).ok()) << s.status();
  for (size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(grads[i].valid()) << values[i].name();
  AdamOptimizer adam(0.01);
  auto train = adam.Minimize(s, loss);
  ASSERT_TRUE(train.ok()) << train.status();
  Operation init = InitializeAllVariables(s);
  ASSERT_TRUE(s.ok()) << s.status();

  Tensor x = RandomTensor(TensorShape({n, 12, 12, 1}), 5);
  Tensor y(DT_INT32, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(i % 4);
  auto session = Open(s);
  std::vector<Tensor> out;
  ASSERT_TRUE(session->Run({}, {}, {init.name()}, &out).ok());
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"images", x}, {"labels", y}};
  float first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    ASSERT_TRUE(session->Run(feeds, {loss.name()}, {train->name()}, &out).ok());
    if (step == 0) first = out[0].scalar<float>();
    last = out[0].scalar<float>();
  }
  EXPECT_LT(last, 0.5f * first) << "first " << first << ", last " << last;
  ASSERT_TRUE(session->Run({{"images", x}}, {eval_logits.name()}, {}, &out).ok());
  EXPECT_EQ(out[0].shape().DebugString(), "[16,4]");
}

// The gradient of an Add of equal shapes is the incoming gradient itself (SumToShape forwards
// it), and summing a bias's leading dimensions away still adds every row.
TEST(SumToShapeTest, EqualShapesAndLeadingDimensions) {
  Scope s = Scope::NewRootScope();
  Output a = ops::Placeholder(s.WithOpName("a"), DT_FLOAT, TensorShape({-1, 3}));
  Output b = ops::Placeholder(s.WithOpName("b"), DT_FLOAT, TensorShape({-1, 3}));
  Output c = ops::Placeholder(s.WithOpName("c"), DT_FLOAT, TensorShape({-1}));
  Output sum = ops::Add(s, ops::Mul(s, ops::Add(s, a, b), 2.0f), c);
  std::vector<Output> grads;
  ASSERT_TRUE(AddGradients(s, {sum}, {a, b, c}, &grads).ok()) << s.status();
  Tensor av = RandomTensor(TensorShape({2, 3}), 1), bv = RandomTensor(TensorShape({2, 3}), 2);
  Tensor cv = RandomTensor(TensorShape({3}), 3);
  auto out = test::RunScope(s, {{"a", av}, {"b", bv}, {"c", cv}}, {grads[0], grads[1], grads[2]});
  ASSERT_TRUE(out.ok()) << out.status();
  test::ExpectValues<float>((*out)[0], {2, 2, 2, 2, 2, 2});
  test::ExpectValues<float>((*out)[1], {2, 2, 2, 2, 2, 2});
  test::ExpectValues<float>((*out)[2], {2, 2, 2});
}

}  // namespace
}  // namespace shardflow
