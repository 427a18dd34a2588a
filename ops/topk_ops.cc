// TopKV2 (TF1's tf.nn.top_k, and what tf.sort / tf.argsort are built on): the k largest
// entries of each row of the last dimension, largest first, and their indices. Ties go to the
// lower index, so a sort by top_k is stable; NaN ranks above every number (a total order, so
// the result is well defined). Time O(n log k) per row (a partial sort), memory O(n).
//
// Gradient (as TF's): dy scattered back to the positions the indices name, by TopKV2Grad, a
// kernel of its own (zeros, then each row's k entries written to their places).
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

// input.shape[:-1] + [k] for both outputs.
absl::Status TopKShape(InferenceContext* c) {
  const TensorShape& in = c->input(0);
  if (in.unknown_rank()) {
    c->set_output(0, TensorShape::Unknown());
    c->set_output(1, TensorShape::Unknown());
    return absl::OkStatus();
  }
  if (in.rank() < 1) {
    return c->InvalidArgument(
        "input must have at least one dimension (top_k picks along the last)");
  }
  int64_t k = TensorShape::kUnknownDim;
  std::vector<int64_t> ks;
  if (c->GetConstantInts(1, &ks) && ks.size() == 1) {
    k = ks[0];
    if (k < 0) return c->InvalidArgument(absl::StrCat("k must not be negative, got ", k));
    const int64_t n = in.dim(in.rank() - 1);
    if (n >= 0 && k > n) {
      return c->InvalidArgument(
          absl::StrCat("input must have at least k=", k, " columns, got ", n));
    }
  }
  TensorShape out;
  for (int d = 0; d + 1 < in.rank(); ++d) out.AddDim(in.dim(d));
  out.AddDim(k);
  c->set_output(0, out);
  c->set_output(1, out);
  return absl::OkStatus();
}

absl::Status TopKGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
                      std::vector<Output>* dx) {
  // Only the values' gradient flows; the indices are integers.
  if (dy[0].node() == nullptr) {
    dx->push_back(Output());
  } else {
    dx->push_back(Output(OpBuilder(s, "TopKV2Grad")
                             .Input(GradInput(op, 0))
                             .Input(GradOutput(op, 1))
                             .Input(dy[0])
                             .Finalize()
                             .node(),
                         0));
  }
  dx->push_back(Output());
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("TopKV2")
    .Input("input: T")
    .Input("k: int32")
    .Output("values: T")
    .Output("indices: int32")
    .Attr("sorted: bool = true")
    .Attr("T: {float, double, half, bfloat16, int8, uint8, int32, int64}")
    .SetShapeFn(TopKShape)
    .Doc(
        "The k largest entries of each row of the last dimension (largest first; ties: the "
        "lower index first; NaN above every number) and their indices.");

REGISTER_OP("TopKV2Grad")
    .Input("input: T")
    .Input("indices: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16}")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(0));
      return absl::OkStatus();
    })
    .Doc(
        "TopKV2's gradient: zeros shaped like `input`, with grad[..., j] at the position "
        "indices[..., j] of each row.");

REGISTER_GRADIENT("TopKV2", TopKGrad);
REGISTER_NO_GRADIENT("TopKV2Grad");

}  // namespace shardflow
