#include "ops/layers.h"

#include "absl/strings/str_cat.h"
#include "ops/nn_ops.h"

namespace shardflow {
namespace layers {

Conv2D::Conv2D(const Scope& s, const std::string& name, const Conv2DOptions& o)
    : scope_(s.NewSubScope(name)), options_(o) {
  if (o.kernel < 1 || o.in < 1 || o.out < 1 || o.stride < 1) {
    s.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("conv layer '", name, "': kernel, in, out and stride must be positive, got ",
                     o.kernel, ", ", o.in, ", ", o.out, ", ", o.stride)));
    return;
  }
  filter_ = Var::Create(scope_.WithOpName("filter"),
                        init::HeNormal(scope_, {o.kernel, o.kernel, o.in, o.out}, o.seed));
  if (o.use_bias) bias_ = Var::Create(scope_.WithOpName("bias"), init::Zeros(scope_, {o.out}));
}

Output Conv2D::operator()(const Output& x) const {
  const std::vector<int64_t> strides = {1, options_.stride, options_.stride, 1};
  Output y = ops::Conv2D(scope_, x, filter_.value(), strides, options_.padding);
  return bias_.valid() ? ops::BiasAdd(scope_, y, bias_.value()) : y;
}

Dense::Dense(const Scope& s, const std::string& name, int64_t in, int64_t out, int64_t seed,
             bool use_bias)
    : scope_(s.NewSubScope(name)) {
  weights_ =
      Var::Create(scope_.WithOpName("weights"), init::GlorotUniform(scope_, {in, out}, seed));
  if (use_bias) bias_ = Var::Create(scope_.WithOpName("bias"), init::Zeros(scope_, {out}));
}

Output Dense::operator()(const Output& x) const {
  Output y = ops::MatMul(scope_, x, weights_.value());
  return bias_.valid() ? ops::BiasAdd(scope_, y, bias_.value()) : y;
}

BatchNorm::BatchNorm(const Scope& s, const std::string& name, int64_t channels,
                     const BatchNormOptions& o)
    : scope_(s.NewSubScope(name)), options_(o) {
  if (!(o.momentum >= 0 && o.momentum < 1) || !(o.epsilon > 0)) {
    s.UpdateStatus(absl::InvalidArgumentError(
        absl::StrCat("batch-norm layer '", name, "': momentum must be in [0, 1) and epsilon > 0, ",
                     "got ", o.momentum, " and ", o.epsilon)));
    return;
  }
  gamma_ =
      Var::Create(scope_.WithOpName("gamma"), init::Constant(scope_, {channels}, o.gamma_init));
  beta_ = Var::Create(scope_.WithOpName("beta"), init::Zeros(scope_, {channels}));
  moving_mean_ = Var::Create(scope_.WithOpName("moving_mean"), init::Zeros(scope_, {channels}),
                             /*trainable=*/false);
  moving_variance_ =
      Var::Create(scope_.WithOpName("moving_variance"), init::Constant(scope_, {channels}, 1.0f),
                  /*trainable=*/false);
}

Output BatchNorm::operator()(const Output& x, bool training) {
  if (!training) {
    return ops::FusedBatchNorm(scope_, x, gamma_.value(), beta_.value(), moving_mean_.value(),
                               moving_variance_.value(), options_.epsilon, /*is_training=*/false)
        .y;
  }
  const Output empty = ops::Const(scope_, Tensor(DT_FLOAT, TensorShape({0})));
  auto bn = ops::FusedBatchNorm(scope_, x, gamma_.value(), beta_.value(), empty, empty,
                                options_.epsilon, /*is_training=*/true);
  // moving += (1 - momentum) * (batch - moving); the batch variance is the unbiased one.
  const float rate = 1.0f - options_.momentum;
  auto update = [&](const Var& moving, const Output& batch, const char* what) {
    Output delta = ops::Mul(scope_, ops::Sub(scope_, batch, moving.value()), rate);
    return OpBuilder(scope_.WithOpName(absl::StrCat("update_", what)), "AssignAddVariableOp")
        .Input(moving.handle())
        .Input(delta)
        .Finalize();
  };
  updates_.push_back(update(moving_mean_, bn.batch_mean, "moving_mean"));
  updates_.push_back(update(moving_variance_, bn.batch_variance, "moving_variance"));
  return bn.y;
}

Output GlobalAveragePool(const Scope& s, const Output& x) { return ops::Mean(s, x, {1, 2}); }

Output WithUpdates(const Scope& s, const Output& loss, const std::vector<Operation>& updates) {
  if (updates.empty()) return loss;
  return ops::Identity(s.WithControlDependencies(updates).WithOpName("loss_with_updates"), loss);
}

}  // namespace layers
}  // namespace shardflow
