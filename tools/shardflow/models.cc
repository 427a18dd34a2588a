#include "tools/shardflow/models.h"

#include "absl/strings/str_cat.h"
#include "ops/nn_ops.h"
#include "ops/resnet.h"

namespace shardflow {
namespace {

Output Dense(const Scope& s, const std::string& name, const Output& x, int64_t in, int64_t out,
             int64_t seed, bool relu) {
  Output y = layers::Dense(s, name, in, out, seed)(x);
  return relu ? ops::Relu(s.NewSubScope(name), y) : y;
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

Output Standardize(const Scope& s, const Output& images, const ImageSpec& spec) {
  if (!spec.standardize) return images;
  return ops::Mul(s.WithOpName("standardize"), ops::Sub(s, images, kPixelMean),
                  1.0f / kPixelStddev);
}

ImageSpec SyntheticImageSpec(const std::string& model) {
  ImageSpec spec;
  if (model == "resnet18" || model == "resnet50") spec = {224, 224, 3, 1000};
  spec.standardize = false;
  return spec;
}

absl::StatusOr<Model> BuildModel(const Scope& scope, const std::string& name, int64_t seed,
                                 const std::vector<std::string>& layer_devices,
                                 const ImageSpec& spec) {
  auto layer = [&](size_t i) {
    return layer_devices.empty() ? scope
                                 : scope.WithDevice(layer_devices[i % layer_devices.size()]);
  };
  Model m;
  m.spec = spec;
  const int64_t pixels = spec.height * spec.width * spec.channels;
  std::vector<Operation> updates;
  auto image_input = [&] {
    m.image_layout = true;
    m.images = ops::Placeholder(scope.WithOpName("images"), DT_FLOAT,
                                TensorShape({-1, spec.height, spec.width, spec.channels}));
    return Standardize(layer(0), m.images, spec);
  };
  m.labels = ops::Placeholder(scope.WithOpName("labels"), DT_INT32, TensorShape({-1}));
  if (name == "mlp") {
    m.images = ops::Placeholder(scope.WithOpName("images"), DT_FLOAT, TensorShape({-1, pixels}));
    Output h =
        Dense(layer(0), "dense1", Standardize(layer(0), m.images, spec), pixels, 512, seed, true);
    h = Dense(layer(1), "dense2", h, 512, 512, seed + 1, true);
    m.logits = Dense(layer(2), "logits", h, 512, spec.classes, seed + 2, false);
    m.eval_logits = m.logits;
  } else if (name == "cnn") {
    Output h = ConvPool(layer(0), "conv1", image_input(), spec.channels, 32, seed);
    h = ConvPool(layer(1), "conv2", h, 32, 64, seed + 1);
    // Two SAME 2x2 max-pools: ceil(ceil(n / 2) / 2).
    const int64_t flat = ((spec.height + 3) / 4) * ((spec.width + 3) / 4) * 64;
    h = ops::Reshape(scope, h, {int64_t{-1}, flat});
    h = Dense(layer(2), "dense1", h, flat, 1024, seed + 2, true);
    m.logits = Dense(layer(3), "logits", h, 1024, spec.classes, seed + 3, false);
    m.eval_logits = m.logits;
  } else if (name == "resnet" || name == "resnet18" || name == "resnet50") {
    layers::ResNetOptions o = name == "resnet"     ? layers::SmallResNetOptions(spec.classes)
                              : name == "resnet18" ? layers::ResNet18Options(spec.classes)
                                                   : layers::ResNet50Options(spec.classes);
    o.in_channels = spec.channels;
    o.seed = seed;
    o.devices = layer_devices;
    Output images = image_input();
    layers::ResNet net(scope.NewSubScope(name), o);
    m.logits = net(images, /*training=*/true);
    m.eval_logits = net(images, /*training=*/false);
    updates = net.update_ops();
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown model '", name, "'; --model takes cnn, mlp, resnet, resnet18 or resnet50"));
  }
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(scope, m.logits, m.labels);
  m.loss = layers::WithUpdates(scope, ops::Mean(scope.WithOpName("loss"), xent.loss, {0}), updates);
  if (!scope.ok()) return scope.status();
  return m;
}

}  // namespace shardflow
