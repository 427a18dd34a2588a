// Stateful ops: variables and the optimizer updates that modify them in place.
//
// A variable is named by a handle: VarHandleOp outputs a string scalar holding the variable's
// shared name, and every op that reads or writes the variable takes that handle as an input, so
// the graph has an edge from the variable to each user (used for ordering and, later, to keep
// users on the variable's device).
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

absl::Status VarHandleShape(InferenceContext* c) { return ScalarShape(c); }

absl::Status ReadVariableShape(InferenceContext* c) {
  // The value's shape is not known from the handle alone; the builder sets _shape.
  TensorShape shape = TensorShape::Unknown();
  auto it = c->node().attr().find("_shape");
  if (it != c->node().attr().end()) {
    auto s = TensorShape::FromProto(it->second.shape());
    if (s.ok()) shape = *s;
  }
  c->set_output(0, shape);
  return absl::OkStatus();
}

absl::Status NoOutputs(InferenceContext*) { return absl::OkStatus(); }

absl::Status HandleIsScalar(InferenceContext* c) {
  if (c->input(0).rank() > 0) return c->InvalidArgument("the variable handle must be a scalar");
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("VarHandleOp")
    .Output("resource: string")
    .Attr("dtype: type")
    .Attr("shape: shape")
    .Attr("shared_name: string = ''")
    .SetIsStateful()
    .SetShapeFn(VarHandleShape)
    .Doc(
        "A handle to the variable `shared_name` (the node name when empty), created on first "
        "use with `dtype` and `shape`.");

REGISTER_OP("ReadVariableOp")
    .Input("resource: string")
    .Output("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(ReadVariableShape)
    .Doc("The variable's current value (shares its buffer; later updates copy first).");

REGISTER_OP("AssignVariableOp")
    .Input("resource: string")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc("Sets the variable's value; the shape must be compatible with the declared one.");

REGISTER_OP("AssignAddVariableOp")
    .Input("resource: string")
    .Input("value: dtype")
    .Attr("dtype: type")
    .SetIsStateful()
    .SetShapeFn(HandleIsScalar)
    .Doc("var += value.");

REGISTER_OP("ResourceCountUpTo")
    .Input("resource: string")
    .Output("output: T")
    .Attr("limit: int")
    .Attr("T: {int32, int64}")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc(
        "Increments the scalar variable and returns its value before; OutOfRange once that "
        "value has reached `limit` (the variable is then left as it is).");

REGISTER_OP("VarIsInitializedOp")
    .Input("resource: string")
    .Output("is_initialized: bool")
    .SetIsStateful()
    .SetShapeFn(ScalarShape)
    .Doc("Whether the variable has a value.");

REGISTER_OP("ResourceApplyGradientDescent")
    .Input("var: string")
    .Input("alpha: T")
    .Input("delta: T")
    .Attr("T: {float, double}")
    .SetIsStateful()
    .SetShapeFn(NoOutputs)
    .Doc("var -= alpha * delta, in place.");

REGISTER_OP("ResourceApplyMomentum")
    .Input("var: string")
    .Input("accum: string")
    .Input("lr: T")
    .Input("grad: T")
    .Input("momentum: T")
    .Attr("T: {float, double}")
    .Attr("use_nesterov: bool = false")
    .SetIsStateful()
    .SetShapeFn(NoOutputs)
    .Doc(
        "accum = momentum * accum + grad; var -= lr * accum (Nesterov: lr * (grad + momentum "
        "* accum)).");

REGISTER_OP("ResourceApplyAdam")
    .Input("var: string")
    .Input("m: string")
    .Input("v: string")
    .Input("beta1_power: T")
    .Input("beta2_power: T")
    .Input("lr: T")
    .Input("beta1: T")
    .Input("beta2: T")
    .Input("epsilon: T")
    .Input("grad: T")
    .Attr("T: {float, double}")
    .SetIsStateful()
    .SetShapeFn(NoOutputs)
    .Doc("Adam (Kingma & Ba): m and v moments, bias correction from beta1^t and beta2^t.");

}  // namespace shardflow
