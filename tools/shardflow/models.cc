#include "tools/shardflow/models.h"

#include "absl/strings/str_cat.h"
#include "ops/nn_ops.h"

namespace shardflow {
namespace {

// A dense layer's variables, applied to any number of inputs (train and eval paths share them).
struct DenseLayer {
  Scope scope;
  Var w, b;
  DenseLayer(const Scope& s, const std::string& name, int64_t in, int64_t out, int64_t seed)
      : scope(s.NewSubScope(name)) {
    w = Var::Create(scope.WithOpName("weights"), init::GlorotUniform(scope, {in, out}, seed));
    b = Var::Create(scope.WithOpName("bias"), init::Zeros(scope, {out}));
  }
  Output operator()(const Output& x, bool relu) const {
    Output y = ops::BiasAdd(scope, ops::MatMul(scope, x, w.value()), b.value());
    return relu ? ops::Relu(scope, y) : y;
  }
};

Output Dense(const Scope& s, const std::string& name, const Output& x, int64_t in, int64_t out,
             int64_t seed, bool relu) {
  return DenseLayer(s, name, in, out, seed)(x, relu);
}

Output ConvPool(const Scope& s, const std::string& name, const Output& x, int64_t in, int64_t out,
                int64_t seed) {
  Scope ls = s.NewSubScope(name);
  Var w = Var::Create(ls.WithOpName("filter"), init::GlorotUniform(ls, {5, 5, in, out}, seed));
  Var b = Var::Create(ls.WithOpName("bias"), init::Zeros(ls, {out}));
  Output y = ops::Relu(
      ls, ops::BiasAdd(ls, ops::Conv2D(ls, x, w.value(), {1, 1, 1, 1}, "SAME"), b.value()));
  return ops::MaxPool(ls, y, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
}

}  // namespace

// Fashion-MNIST pixel statistics (training set, pixels scaled to [0, 1]).
constexpr float kPixelMean = 0.2860f;
constexpr float kPixelStddev = 0.3530f;

Output Standardize(const Scope& s, const Output& images) {
  return ops::Mul(s.WithOpName("standardize"), ops::Sub(s, images, kPixelMean),
                  1.0f / kPixelStddev);
}

absl::StatusOr<Model> BuildModel(const Scope& scope, const std::string& name, int64_t seed,
                                 const std::vector<std::string>& layer_devices) {
  auto layer = [&](size_t i) {
    return layer_devices.empty() ? scope
                                 : scope.WithDevice(layer_devices[i % layer_devices.size()]);
  };
  Model m;
  m.labels = ops::Placeholder(scope.WithOpName("labels"), DT_INT32, TensorShape({-1}));
  if (name == "mlp") {
    m.images = ops::Placeholder(scope.WithOpName("images"), DT_FLOAT, TensorShape({-1, 784}));
    Output h = Dense(layer(0), "dense1", Standardize(layer(0), m.images), 784, 512, seed, true);
    h = Dense(layer(1), "dense2", h, 512, 512, seed + 1, true);
    m.logits = Dense(layer(2), "logits", h, 512, 10, seed + 2, false);
    m.eval_logits = m.logits;
  } else if (name == "cnn") {
    m.image_layout = true;
    m.images = ops::Placeholder(scope.WithOpName("images"), DT_FLOAT, TensorShape({-1, 28, 28, 1}));
    Output h = ConvPool(layer(0), "conv1", Standardize(layer(0), m.images), 1, 32, seed);
    h = ConvPool(layer(1), "conv2", h, 32, 64, seed + 1);
    h = ops::Reshape(scope, h, {-1, 7 * 7 * 64});
    h = Dense(layer(2), "dense1", h, 7 * 7 * 64, 1024, seed + 2, true);
    m.logits = Dense(layer(3), "logits", h, 1024, 10, seed + 3, false);
    m.eval_logits = m.logits;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown model '", name, "'; --model takes cnn or mlp"));
  }
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(scope, m.logits, m.labels);
  m.loss = ops::Mean(scope.WithOpName("loss"), xent.loss, {0});
  if (!scope.ok()) return scope.status();
  return m;
}

}  // namespace shardflow
