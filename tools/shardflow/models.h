// The models `shardflow train` knows, built with the C++ API.
#ifndef SHARDFLOW_TOOLS_SHARDFLOW_MODELS_H_
#define SHARDFLOW_TOOLS_SHARDFLOW_MODELS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/training.h"

namespace shardflow {

struct Model {
  Output images;              // float placeholder: [?,784] (mlp) or [?,28,28,1] (cnn)
  Output labels;              // int32 placeholder [?]
  Output logits;              // [?,10], for training
  Output eval_logits;         // [?,10], for evaluation (the same unless training adds e.g. dropout)
  Output loss;                // scalar: mean softmax cross-entropy
  bool image_layout = false;  // whether images are NHWC [?,28,28,1]
};

// Pixels are standardised in the graph (Fashion-MNIST mean and standard deviation).
// "mlp": 784-512-512-10 with ReLU. "cnn": conv 5x5x32 SAME + ReLU + max-pool 2, conv 5x5x64
// SAME + ReLU + max-pool 2, dense 1024 + ReLU, dense 10. Weights Glorot-uniform from `seed`,
// biases zero. Error for an unknown name, listing the known ones.
// With `layer_devices`, layer i (its variables, forward ops and, through AddGradients, their
// gradients) requests device layer_devices[i % size] — a model-parallel split.
absl::StatusOr<Model> BuildModel(const Scope& scope, const std::string& name, int64_t seed,
                                 const std::vector<std::string>& layer_devices = {});

}  // namespace shardflow

#endif  // SHARDFLOW_TOOLS_SHARDFLOW_MODELS_H_
