// GatherV2 (TF1's tf.gather: rows of `params` along `axis` picked by `indices`) and its gradient,
// GatherV2Grad, which adds each gradient row back into the row it was taken from (an index
// picked twice gets both). The backward loop of a While reads its history through GatherV2.
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

absl::Status GatherShape(InferenceContext* c) {
  const TensorShape& params = c->input(0);
  const TensorShape& indices = c->input(1);
  std::vector<int64_t> axis;
  if (!c->GetConstantInts(2, &axis) || axis.size() != 1 || params.unknown_rank() ||
      indices.unknown_rank()) {
    c->set_output(0, TensorShape::Unknown());
    return absl::OkStatus();
  }
  int64_t a = axis[0] < 0 ? axis[0] + params.rank() : axis[0];
  if (a < 0 || a >= params.rank()) {
    return c->InvalidArgument(
        absl::StrCat("axis ", axis[0], " is out of range for params of rank ", params.rank()));
  }
  TensorShape out;
  for (int d = 0; d < a; ++d) out.AddDim(params.dim(d));
  for (int d = 0; d < indices.rank(); ++d) out.AddDim(indices.dim(d));
  for (int d = static_cast<int>(a) + 1; d < params.rank(); ++d) out.AddDim(params.dim(d));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status GatherGradShape(InferenceContext* c) {
  auto shape = c->ConstantInputAsShape(3);
  c->set_output(0, shape.ok() ? *shape : TensorShape::Unknown());
  return absl::OkStatus();
}

absl::Status GatherGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
                        std::vector<Output>* dx) {
  Output params = GradInput(op, 0), indices = GradInput(op, 1), axis = GradInput(op, 2);
  Output grad(OpBuilder(s, "GatherV2Grad")
                  .Input(dy[0])
                  .Input(indices)
                  .Input(axis)
                  .Input(ops::Shape(s, params))
                  .Finalize());
  dx->push_back(grad);
  dx->push_back(Output());
  dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status GatherGradGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
                            std::vector<Output>* dx) {
  // GatherV2Grad is linear in its gradient input: its own gradient gathers again.
  dx->push_back(Output(OpBuilder(s, "GatherV2")
                           .Input(dy[0])
                           .Input(GradInput(op, 1))
                           .Input(GradInput(op, 2))
                           .Finalize()));
  dx->push_back(Output());
  dx->push_back(Output());
  dx->push_back(Output());
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("GatherV2")
    .Input("params: Tparams")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Output("output: Tparams")
    .Attr("Tparams: type")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64} = int32")
    .SetShapeFn(GatherShape)
    .Doc(
        "Slices of `params` along `axis` at `indices` (TF1's tf.gather): the output's shape is "
        "params.shape[:axis] + indices.shape + params.shape[axis+1:]. An index outside "
        "[0, params.shape[axis]) is an error.");

REGISTER_OP("GatherV2Grad")
    .Input("grad: T")
    .Input("indices: Tindices")
    .Input("axis: Taxis")
    .Input("params_shape: Tshape")
    .Output("output: T")
    .Attr("T: {float, double, half, bfloat16}")
    .Attr("Tindices: {int32, int64}")
    .Attr("Taxis: {int32, int64} = int32")
    .Attr("Tshape: {int32, int64} = int32")
    .SetShapeFn(GatherGradShape)
    .Doc(
        "The gradient of GatherV2 for its params: zeros of `params_shape`, with each slice of "
        "`grad` added to the slice of the params it was gathered from.");

REGISTER_GRADIENT("GatherV2", GatherGrad);
REGISTER_GRADIENT("GatherV2Grad", GatherGradGrad);

}  // namespace shardflow
