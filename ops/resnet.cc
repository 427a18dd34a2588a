#include "ops/resnet.h"

#include "absl/strings/str_cat.h"
#include "ops/nn_ops.h"

namespace shardflow {
namespace layers {

ResNetOptions ResNet18Options(int64_t classes) {
  ResNetOptions o;
  o.blocks = {2, 2, 2, 2};
  o.bottleneck = false;
  o.classes = classes;
  return o;
}

ResNetOptions ResNet50Options(int64_t classes) {
  ResNetOptions o;  // the defaults are ResNet-50's
  o.classes = classes;
  return o;
}

ResNetOptions SmallResNetOptions(int64_t classes) {
  ResNetOptions o;
  o.blocks = {1, 1, 1};
  o.bottleneck = false;
  o.width = 16;
  o.in_channels = 1;
  o.classes = classes;
  o.imagenet_stem = false;
  return o;
}

Scope ResNet::StageScope(int stage) const {
  if (options_.devices.empty()) return scope_;
  return scope_.WithDevice(options_.devices[stage % options_.devices.size()]);
}

ResNet::ResNet(const Scope& s, const ResNetOptions& o) : scope_(s), options_(o) {
  if (o.blocks.empty() || o.width < 1 || o.in_channels < 1 || o.classes < 1) {
    s.UpdateStatus(absl::InvalidArgumentError(
        "ResNet: needs at least one stage, and positive width, in_channels and classes"));
    return;
  }
  int64_t seed = o.seed;
  Scope stem = StageScope(0);
  stem_.emplace(stem, "conv1",
                Conv2DOptions{.kernel = o.imagenet_stem ? 7 : 3,
                              .in = o.in_channels,
                              .out = o.width,
                              .stride = o.imagenet_stem ? 2 : 1,
                              .use_bias = false,
                              .seed = seed++});
  stem_norm_.emplace(stem, "bn1", o.width, o.batch_norm);
  const int64_t expansion = o.bottleneck ? 4 : 1;
  int64_t in = o.width;
  for (size_t stage = 0; stage < o.blocks.size(); ++stage) {
    if (o.blocks[stage] < 1) {
      s.UpdateStatus(absl::InvalidArgumentError(
          absl::StrCat("ResNet: stage ", stage + 1, " has ", o.blocks[stage], " blocks")));
      return;
    }
    const int64_t width = o.width << stage;
    const int64_t out = width * expansion;
    Scope stage_scope =
        StageScope(static_cast<int>(stage)).NewSubScope(absl::StrCat("stage", stage + 1));
    std::vector<Block> blocks;
    for (int b = 0; b < o.blocks[stage]; ++b) {
      const int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      Block block{stage_scope.NewSubScope(absl::StrCat("block", b + 1)), {}, {}, {}, {}};
      auto conv = [&](const std::string& name, int64_t kernel, int64_t cin, int64_t cout,
                      int64_t conv_stride) {
        block.convs.emplace_back(block.scope, name,
                                 Conv2DOptions{.kernel = kernel,
                                               .in = cin,
                                               .out = cout,
                                               .stride = conv_stride,
                                               .use_bias = false,
                                               .seed = seed++});
        block.norms.emplace_back(block.scope, "bn" + name.substr(4), cout, o.batch_norm);
      };
      if (o.bottleneck) {
        conv("conv1", 1, in, width, 1);
        conv("conv2", 3, width, width, stride);
        conv("conv3", 1, width, out, 1);
      } else {
        conv("conv1", 3, in, width, stride);
        conv("conv2", 3, width, out, 1);
      }
      if (stride != 1 || in != out) {
        block.shortcut.emplace(block.scope, "shortcut",
                               Conv2DOptions{.kernel = 1,
                                             .in = in,
                                             .out = out,
                                             .stride = stride,
                                             .use_bias = false,
                                             .seed = seed++});
        block.shortcut_norm.emplace(block.scope, "shortcut_bn", out, o.batch_norm);
      }
      blocks.push_back(std::move(block));
      in = out;
    }
    stages_.push_back(std::move(blocks));
  }
  head_.emplace(StageScope(static_cast<int>(o.blocks.size()) - 1), "logits", in, o.classes, seed);
}

Output ResNet::operator()(const Output& images, bool training) {
  if (!stem_ || !head_) return Output();
  Scope stem = StageScope(0);
  Output h = ops::Relu(stem, (*stem_norm_)((*stem_)(images), training));
  if (options_.imagenet_stem) h = ops::MaxPool(stem, h, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME");
  for (auto& stage : stages_) {
    for (Block& block : stage) {
      Output x = h;
      for (size_t i = 0; i < block.convs.size(); ++i) {
        x = block.norms[i](block.convs[i](x), training);
        if (i + 1 < block.convs.size()) x = ops::Relu(block.scope, x);
      }
      Output shortcut = block.shortcut ? (*block.shortcut_norm)((*block.shortcut)(h), training) : h;
      h = ops::Relu(block.scope, ops::Add(block.scope, x, shortcut));
    }
  }
  Scope head = StageScope(static_cast<int>(stages_.size()) - 1);
  return (*head_)(GlobalAveragePool(head.NewSubScope("pool"), h));
}

std::vector<Operation> ResNet::update_ops() const {
  std::vector<Operation> out;
  auto add = [&](const BatchNorm& bn) {
    out.insert(out.end(), bn.update_ops().begin(), bn.update_ops().end());
  };
  if (stem_norm_) add(*stem_norm_);
  for (const auto& stage : stages_) {
    for (const Block& block : stage) {
      for (const BatchNorm& bn : block.norms) add(bn);
      if (block.shortcut_norm) add(*block.shortcut_norm);
    }
  }
  return out;
}

}  // namespace layers
}  // namespace shardflow
