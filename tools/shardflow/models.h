// The models `shardflow train` knows, built with the C++ API.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_MODELS_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_MODELS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/training.h"

namespace shardflow {

// The images a model takes: Fashion-MNIST's by default.
struct ImageSpec {
  int64_t height = 28;
  int64_t width = 28;
  int64_t channels = 1;
  int64_t classes = 10;
  // Standardise pixels with Fashion-MNIST's mean and standard deviation (off for synthetic data,
  // which is already standard normal).
  bool standardize = true;
};

// What `--synthetic` feeds `model`: 224x224x3 images of 1000 classes for resnet18 and resnet50
// (ImageNet's shape, as throughput benchmarks use), Fashion-MNIST's shape for the others.
ImageSpec SyntheticImageSpec(const std::string& model);

struct Model {
  Output images;              // float placeholder: [?,h*w*c] (mlp) or [?,h,w,c] (the others)
  Output labels;              // int32 placeholder [?]
  Output logits;              // [?,classes], for training
  Output eval_logits;         // [?,classes], for evaluation (e.g. batch norm's moving averages)
  Output loss;                // scalar: mean softmax cross-entropy (after any batch-norm updates)
  bool image_layout = false;  // whether images are NHWC [?,h,w,c]
  ImageSpec spec;
};

// Pixels are standardised in the graph (Fashion-MNIST mean and standard deviation).
// "mlp": 784-512-512-10 with ReLU. "cnn": conv 5x5x32 SAME + ReLU + max-pool 2, conv 5x5x64
// SAME + ReLU + max-pool 2, dense 1024 + ReLU, dense 10. Weights Glorot-uniform from `seed`,
// biases zero. "resnet": ResNet-8 for small images (ops/resnet.h, SmallResNetOptions);
// "resnet18", "resnet50": torchvision's ResNet-18 and -50 (batch norm with moving averages; the
// loss runs their updates). Error for an unknown name, listing the known ones.
// With `layer_devices`, layer i (its variables, forward ops and, through AddGradients, their
// gradients) requests device layer_devices[i % size] — a model-parallel split.
absl::StatusOr<Model> BuildModel(const Scope& scope, const std::string& name, int64_t seed,
                                 const std::vector<std::string>& layer_devices = {},
                                 const ImageSpec& spec = ImageSpec());

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_MODELS_H_
