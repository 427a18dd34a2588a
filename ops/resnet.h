// Residual networks (He et al., 2015) built with the layers API (ops/layers.h): ResNet-18, -50 and
// small ones for small images.
//
//   layers::ResNet net(root.NewSubScope("resnet50"), layers::ResNet50Options(1000));
//   Output logits = net(images, /*training=*/true);     // images [n, 224, 224, 3]
//   Output eval_logits = net(images, /*training=*/false);
//   Output loss = layers::WithUpdates(root, MeanXent(logits), net.update_ops());
//
// The blocks follow torchvision's models (ResNet v1.5: a bottleneck's stride is on its 3x3
// convolution; a projection shortcut, 1x1 convolution and batch norm, where the shape changes),
// with SAME padding, convolutions without bias before each batch norm, and a final dense layer
// after global average pooling.
#ifndef SHARDFLOW_OPS_RESNET_H_
#define SHARDFLOW_OPS_RESNET_H_

#include <optional>
#include <string>
#include <vector>

#include "ops/layers.h"

namespace shardflow {
namespace layers {

struct ResNetOptions {
  std::vector<int> blocks = {3, 4, 6, 3};  // residual blocks per stage
  bool bottleneck = true;  // 1x1, 3x3, 1x1 (x4 channels) blocks; else two 3x3 ("basic")
  int64_t width = 64;      // channels of the first stage, doubled by each later stage
  int64_t in_channels = 3;
  int64_t classes = 1000;
  // A 7x7/2 convolution and a 3x3/2 max-pool (224x224 images); else one 3x3/1 convolution
  // (images like Fashion-MNIST's 28x28).
  bool imagenet_stem = true;
  int64_t seed = 1;
  BatchNormOptions batch_norm = {.momentum = 0.9f, .epsilon = 1e-5f, .gamma_init = 1.0f};
  // With devices, the stem and stage i request devices[i % size] and the head the last stage's
  // device: a model-parallel split by stage.
  std::vector<std::string> devices;
};

ResNetOptions ResNet18Options(int64_t classes = 1000);
ResNetOptions ResNet50Options(int64_t classes = 1000);
// For 28x28 single-channel images: a 3x3 stem of 16 channels and three stages of one basic block
// (16, 32, 64 channels): ResNet-8.
ResNetOptions SmallResNetOptions(int64_t classes = 10);

class ResNet {
 public:
  ResNet(const Scope& s, const ResNetOptions& o);
  // Logits [n, classes] of images [n, h, w, in_channels].
  Output operator()(const Output& images, bool training);
  // The batch-norm moving-average updates of every training application so far.
  std::vector<Operation> update_ops() const;

 private:
  struct Block {
    Scope scope;
    std::vector<Conv2D> convs;
    std::vector<BatchNorm> norms;
    std::optional<Conv2D> shortcut;
    std::optional<BatchNorm> shortcut_norm;
  };
  Scope StageScope(int stage) const;

  Scope scope_;
  ResNetOptions options_;
  std::optional<Conv2D> stem_;
  std::optional<BatchNorm> stem_norm_;
  std::vector<std::vector<Block>> stages_;
  std::optional<Dense> head_;
};

}  // namespace layers
}  // namespace shardflow

#endif  // SHARDFLOW_OPS_RESNET_H_
