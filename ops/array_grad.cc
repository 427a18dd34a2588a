// Gradient functions of the array ops (see ops/gradients.h for the contract).
#include "absl/strings/str_cat.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

using Grads = std::vector<Output>;

absl::Status IdentityGrad(const Scope&, const Operation&, const Grads& dy, Grads* dx) {
  dx->push_back(dy[0]);
  return absl::OkStatus();
}

// Reshape, ExpandDims, Squeeze: the gradient takes the input's shape back.
absl::Status ReshapeLikeInputGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  Output x = GradInput(op, 0);
  dx->push_back(ops::Reshape(s, dy[0], ops::Shape(s, x)));
  for (int i = 1; i < op.node()->num_inputs(); ++i) dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status TransposeGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  const Tensor* perm = GradInput(op, 1).node()->constant_value();
  if (perm == nullptr) {
    return absl::UnimplementedError("the gradient of Transpose needs a constant perm");
  }
  std::vector<int32_t> inverse(perm->NumElements());
  for (int64_t i = 0; i < perm->NumElements(); ++i) {
    int64_t p = perm->dtype() == DT_INT32 ? perm->data<int32_t>()[i] : perm->data<int64_t>()[i];
    inverse[p] = static_cast<int32_t>(i);
  }
  dx->push_back(ops::Transpose(s, dy[0], Tensor::FromVector(inverse)));
  dx->push_back(Output());
  return absl::OkStatus();
}

// Concat: each input gets its slice of dy along the axis (axis sizes must be known).
absl::Status ConcatGrad(const Scope& s, const Operation& op, const Grads& dy, Grads* dx) {
  int n = op.node()->num_inputs() - 1;
  const Tensor* axis_t = GradInput(op, n).node()->constant_value();
  int rank = GradInput(op, 0).shape().rank();
  if (axis_t == nullptr || rank < 0) {
    return absl::UnimplementedError("the gradient of Concat needs a constant axis and known rank");
  }
  int64_t axis =
      axis_t->dtype() == DT_INT32 ? axis_t->data<int32_t>()[0] : axis_t->data<int64_t>()[0];
  if (axis < 0) axis += rank;
  int32_t offset = 0;
  for (int i = 0; i < n; ++i) {
    Output x = GradInput(op, i);
    int64_t size = x.shape().dim(static_cast<int>(axis));
    if (size < 0) {
      return absl::UnimplementedError(absl::StrCat(
          "the gradient of Concat needs every input's size along axis ", axis, " at build time"));
    }
    std::vector<int32_t> begin(rank, 0), sizes(rank, -1);
    begin[axis] = offset;
    sizes[axis] = static_cast<int32_t>(size);
    dx->push_back(ops::Slice(s, dy[0], Tensor::FromVector(begin), Tensor::FromVector(sizes)));
    offset += static_cast<int32_t>(size);
  }
  dx->push_back(Output());
  return absl::OkStatus();
}

REGISTER_GRADIENT("Identity", IdentityGrad);
REGISTER_GRADIENT("CheckNumerics", IdentityGrad);
REGISTER_GRADIENT("Reshape", ReshapeLikeInputGrad);
REGISTER_GRADIENT("ExpandDims", ReshapeLikeInputGrad);
REGISTER_GRADIENT("Squeeze", ReshapeLikeInputGrad);
REGISTER_GRADIENT("Transpose", TransposeGrad);
REGISTER_GRADIENT("Concat", ConcatGrad);
REGISTER_NO_GRADIENT("ReadVariableOp");  // gradients stop at the read (the x of AddGradients)

// Ops whose outputs do not depend differentiably on their inputs.
REGISTER_NO_GRADIENT("Shape");
REGISTER_NO_GRADIENT("ZerosLike");
REGISTER_NO_GRADIENT("OnesLike");
REGISTER_NO_GRADIENT("Fill");
REGISTER_NO_GRADIENT("StopGradient");
REGISTER_NO_GRADIENT("RandomUniform");
REGISTER_NO_GRADIENT("RandomStandardNormal");
REGISTER_NO_GRADIENT("TruncatedNormal");
REGISTER_NO_GRADIENT("VarHandleOp");
REGISTER_NO_GRADIENT("VarIsInitializedOp");

}  // namespace
}  // namespace shardflow
