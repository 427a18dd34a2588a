// The C++ layers API: layers that own their variables and can be applied to any number of inputs,
// so a training path and an evaluation path share one set of weights.
//
//   Scope s = root.NewSubScope("block");
//   layers::Conv2D conv(s, "conv", {.kernel = 3, .in = 64, .out = 64, .use_bias = false});
//   layers::BatchNorm bn(s, "bn", 64);
//   Output train_y = ops::Relu(s, bn(conv(x), /*training=*/true));   // batch statistics
//   Output eval_y = ops::Relu(s, bn(conv(x), /*training=*/false));   // moving averages
//   ... the train op must also run bn.update_ops() (the moving-average updates) ...
//
// Images are NHWC; filters [height, width, in, out]. Variables are named
// "<scope>/<layer>/<variable>" (e.g. "block/conv/filter", "block/bn/moving_mean"), as TF1's layers
// name them, so checkpoints read like TF's.
#ifndef SHARDFLOW_OPS_LAYERS_H_
#define SHARDFLOW_OPS_LAYERS_H_

#include <string>
#include <vector>

#include "ops/training.h"

namespace shardflow {
namespace layers {

struct Conv2DOptions {
  int64_t kernel = 3;  // square window
  int64_t in = 0;      // input channels
  int64_t out = 0;     // filters
  int64_t stride = 1;
  std::string padding = "SAME";
  bool use_bias = true;
  int64_t seed = 0;  // He-normal filter initialisation (the default for ReLU networks)
};

class Conv2D {
 public:
  Conv2D(const Scope& s, const std::string& name, const Conv2DOptions& o);
  Output operator()(const Output& x) const;
  const Var& filter() const { return filter_; }
  const Var& bias() const { return bias_; }  // invalid without use_bias

 private:
  Scope scope_;
  Conv2DOptions options_;
  Var filter_, bias_;
};

class Dense {
 public:
  // Glorot-uniform weights [in, out] from `seed`, zero bias.
  Dense(const Scope& s, const std::string& name, int64_t in, int64_t out, int64_t seed,
        bool use_bias = true);
  Output operator()(const Output& x) const;
  const Var& weights() const { return weights_; }
  const Var& bias() const { return bias_; }

 private:
  Scope scope_;
  Var weights_, bias_;
};

struct BatchNormOptions {
  // moving = momentum * moving + (1 - momentum) * batch statistic, after every training step
  // (TF's convention; PyTorch's momentum 0.1 is 0.9 here).
  float momentum = 0.99f;
  float epsilon = 1e-3f;
  float gamma_init = 1.0f;  // 0 makes a residual block start as the identity
};

// Batch normalisation over the last dimension (channels) of a rank >= 2 input: gamma and beta
// are trainable; moving_mean and moving_variance are not, and are updated by update_ops().
class BatchNorm {
 public:
  BatchNorm(const Scope& s, const std::string& name, int64_t channels,
            const BatchNormOptions& o = BatchNormOptions());
  // training: normalise with the batch's statistics, and add the moving-average update of this
  // application to update_ops(). Otherwise: normalise with the moving averages.
  Output operator()(const Output& x, bool training);
  // The moving-average updates of every training application so far.
  const std::vector<Operation>& update_ops() const { return updates_; }
  const Var& gamma() const { return gamma_; }
  const Var& beta() const { return beta_; }
  const Var& moving_mean() const { return moving_mean_; }
  const Var& moving_variance() const { return moving_variance_; }

 private:
  Scope scope_;
  BatchNormOptions options_;
  Var gamma_, beta_, moving_mean_, moving_variance_;
  std::vector<Operation> updates_;
};

// [n, h, w, c] -> [n, c]: the mean over the spatial dimensions.
Output GlobalAveragePool(const Scope& s, const Output& x);

// `loss` (an Identity of it) that runs `updates` first, so whatever minimises or fetches the loss
// also updates, e.g., batch-norm moving averages. `loss` itself when there are none.
Output WithUpdates(const Scope& s, const Output& loss, const std::vector<Operation>& updates);

}  // namespace layers
}  // namespace shardflow

#endif  // SHARDFLOW_OPS_LAYERS_H_
