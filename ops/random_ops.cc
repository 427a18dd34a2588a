// Random ops. With a nonzero seed or seed2 the sequence is reproducible: the k-th run of a
// node gives the same values in every process; with both zero the kernel seeds itself randomly.
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

absl::Status RandomShape(InferenceContext* c) {
  SF_ASSIGN_OR_RETURN(TensorShape shape, c->ConstantInputAsShape(0));
  c->set_output(0, shape);
  return absl::OkStatus();
}

// shape + the shape of the parameter tensor (input 1), when both are known.
absl::Status ParameterizedRandomShape(InferenceContext* c) {
  TensorShape shape;
  const TensorShape& param = c->input(1);
  auto known = c->ConstantInputAsShape(0);
  if (!known.ok() || param.unknown_rank()) {
    c->set_output(0, TensorShape::Unknown());
    return absl::OkStatus();
  }
  shape = *known;
  for (int d = 0; d < param.rank(); ++d) shape.AddDim(param.dim(d));
  c->set_output(0, shape);
  return absl::OkStatus();
}

}  // namespace

// Samples of shape `shape` + alpha.shape: out[i..., j...] ~ Gamma(alpha[j...], 1) (TF1's
// tf.random_gamma divides by beta after). Not differentiable here (TF differentiates
// through alpha by implicit reparameterization; shardflow gives no gradient).
REGISTER_OP("RandomGamma")
    .Input("shape: S")
    .Input("alpha: T")
    .Output("output: T")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("S: {int32, int64}")
    .Attr("T: {float, double}")
    .SetIsStateful()
    .SetShapeFn(ParameterizedRandomShape)
    .Doc("Gamma(alpha, 1) samples, shape + alpha.shape; alpha must be positive.");

// Samples of shape `shape` + rate.shape: out[i..., j...] ~ Poisson(rate[j...]).
REGISTER_OP("RandomPoissonV2")
    .Input("shape: S")
    .Input("rate: R")
    .Output("output: dtype")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .Attr("S: {int32, int64}")
    .Attr("R: {float, double, int32, int64} = double")
    .Attr("dtype: {float, double, int32, int64} = int64")
    .SetIsStateful()
    .SetShapeFn(ParameterizedRandomShape)
    .Doc("Poisson(rate) samples, shape + rate.shape; rate must be non-negative.");

#define SF_RANDOM_OP(NAME, DOC)          \
  REGISTER_OP(NAME)                      \
      .Input("shape: T")                 \
      .Output("output: dtype")           \
      .Attr("seed: int = 0")             \
      .Attr("seed2: int = 0")            \
      .Attr("dtype: {float, double}")    \
      .Attr("T: {int32, int64} = int32") \
      .SetIsStateful()                   \
      .SetShapeFn(RandomShape)           \
      .Doc(DOC)

SF_RANDOM_OP("RandomUniform", "Uniform in [0, 1).");
SF_RANDOM_OP("RandomStandardNormal", "Normal with mean 0 and standard deviation 1.");
SF_RANDOM_OP("TruncatedNormal", "Normal(0, 1) redrawn until within two standard deviations.");
#undef SF_RANDOM_OP

// TensorFlow's stateless random ops: the values are a pure function of `seed` (2 integers) and
// the shape, so running the op again with the same seed gives the same values (a function
// recomputed for its gradient draws its dropout masks again: Note [Random ops in functions] in
// python_bindings/shardflow/framework.py).
#define SF_STATELESS_RANDOM_OP(NAME, DOC)    \
  REGISTER_OP(NAME)                          \
      .Input("shape: T")                     \
      .Input("seed: Tseed")                  \
      .Output("output: dtype")               \
      .Attr("dtype: {float, double}")        \
      .Attr("T: {int32, int64} = int32")     \
      .Attr("Tseed: {int32, int64} = int64") \
      .SetShapeFn(RandomShape)               \
      .Doc(DOC)

SF_STATELESS_RANDOM_OP("StatelessRandomUniform", "Uniform in [0, 1), a function of seed.");
SF_STATELESS_RANDOM_OP("StatelessRandomNormal", "Normal(0, 1), a function of seed.");
SF_STATELESS_RANDOM_OP("StatelessTruncatedNormal",
                       "Normal(0, 1) within two standard deviations, a function of seed.");
#undef SF_STATELESS_RANDOM_OP

}  // namespace shardflow
