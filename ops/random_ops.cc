// Random ops. With a nonzero seed or seed2 the sequence is reproducible: the k-th run of a
// node gives the same values in every process; with both zero the kernel seeds itself randomly.
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

}  // namespace

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

}  // namespace shardflow
