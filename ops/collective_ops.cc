// Collective ops, with TensorFlow 1.x's names and attrs (tf.raw_ops.CollectiveReduce, ...):
// the members of a group (one op per device, the same group_key, group_size and instance_key
// on each) meet in a step and exchange data through the step's CollectiveExecutor
// (core/framework/collective.h). Which devices form a group is resolved when the graph is
// prepared (runtime/collectives/group_resolution.h), which fills in the internal attrs
// _group_devices and _group_incarnations; a member missing from the graph is an error there.
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

// A collective op with the attrs every one has, as TF1 spells them, plus the resolved group.
OpDefBuilder CollectiveOp(const char* name) {
  OpDefBuilder b(name);
  b.Attr("group_size: int >= 1")
      .Attr("group_key: int")
      .Attr("instance_key: int")
      .Attr("communication_hint: string = 'auto'")
      .Attr("timeout_seconds: float = 0")
      .Attr("_group_devices: string = ''")
      .Attr("_group_incarnations: list(int) = []")
      .SetIsStateful();
  return b;
}

absl::Status ShapeAttrOrUnknown(InferenceContext* c) {
  TensorShape shape;
  if (c->GetAttr("shape", &shape).ok()) {
    c->set_output(0, shape);
  } else {
    c->set_output(0, TensorShape::Unknown());
  }
  return absl::OkStatus();
}

absl::Status GatherShape(InferenceContext* c) {
  int64_t group_size = 0;
  SF_RETURN_IF_ERROR(c->GetAttr("group_size", &group_size));
  TensorShape in = c->input(0);
  if (in.unknown_rank()) {
    c->set_output(0, TensorShape::Unknown());
    return absl::OkStatus();
  }
  if (in.rank() == 0) {
    return c->InvalidArgument(
        "CollectiveGather: the input must have rank >= 1 (it is "
        "concatenated along dimension 0)");
  }
  if (in.dim(0) != TensorShape::kUnknownDim) {
    if (group_size < 1 || in.dim(0) > std::numeric_limits<int64_t>::max() / group_size) {
      return c->InvalidArgument(absl::StrCat("CollectiveGather: dimension 0 (", in.dim(0),
                                             ") times group_size (", group_size,
                                             ") does not fit in 64 bits"));
    }
    in.set_dim(0, in.dim(0) * group_size);
  }
  c->set_output(0, in);
  return absl::OkStatus();
}

}  // namespace

static const OpRegistration kCollectiveReduceRegistration =
    CollectiveOp("CollectiveReduce")
        .Input("input: T")
        .Output("data: T")
        .Attr("T: {float, half, bfloat16, double, int32, int64}")
        .Attr("merge_op: string = 'Add'")
        .Attr("final_op: string = 'Id'")
        .Attr("subdiv_offsets: list(int) = []")
        .SetShapeFn(UnchangedShape)
        .Doc(
            "Every member's `data` is the reduction (merge_op: Add, Mul, Min, Max) of the members' "
            "`input`, then final_op (Id, or Div: divided by group_size, a mean). A ring "
            "all-reduce.");

static const OpRegistration kCollectiveBcastSendRegistration =
    CollectiveOp("CollectiveBcastSend")
        .Input("input: T")
        .Output("data: T")
        .Attr("T: {float, half, bfloat16, double, int32, int64, bool}")
        .Attr("shape: shape")
        .Attr("_source_rank: int = -1")
        .SetShapeFn(UnchangedShape)
        .Doc(
            "The source of a broadcast: the group's CollectiveBcastRecv ops receive `input`; "
            "`data` is `input`.");

static const OpRegistration kCollectiveBcastRecvRegistration =
    CollectiveOp("CollectiveBcastRecv")
        .Output("data: T")
        .Attr("T: {float, half, bfloat16, double, int32, int64, bool}")
        .Attr("shape: shape")
        .Attr("_source_rank: int = -1")
        .SetShapeFn(ShapeAttrOrUnknown)
        .Doc("A receiver of a broadcast: `data` is the CollectiveBcastSend member's input.");

static const OpRegistration kCollectiveGatherRegistration =
    CollectiveOp("CollectiveGather")
        .Input("input: T")
        .Output("data: T")
        .Attr("T: {float, half, bfloat16, double, int32, int64}")
        .Attr("shape: shape = <unknown>")
        .SetShapeFn(GatherShape)
        .Doc(
            "All-gather: `data` is the members' inputs (of one shape) concatenated along "
            "dimension 0, in rank order.");

namespace {

// The gradient of a sum (or mean) all-reduce: every member's output depends on every member's
// input with weight 1 (or 1/N), so each member's input gradient is the same all-reduce of the
// output gradients — a collective instance of its own, colocated with the forward one. Its
// instance key is the forward key with bit 62 set (keep user instance keys below 2^62).
// Min, Max and Mul have no gradient here.
absl::Status CollectiveReduceGrad(const Scope& s, const Operation& op,
                                  const std::vector<Output>& dy, std::vector<Output>* dx) {
  const AttrMap& attrs = op.node()->attrs();
  std::string merge, final_op;
  int64_t group_size = 0, group_key = 0, instance_key = 0;
  SF_RETURN_IF_ERROR(GetAttr(attrs, "merge_op", &merge));
  SF_RETURN_IF_ERROR(GetAttr(attrs, "final_op", &final_op));
  SF_RETURN_IF_ERROR(GetAttr(attrs, "group_size", &group_size));
  SF_RETURN_IF_ERROR(GetAttr(attrs, "group_key", &group_key));
  SF_RETURN_IF_ERROR(GetAttr(attrs, "instance_key", &instance_key));
  if (merge != "Add") {
    return absl::UnimplementedError(
        absl::StrCat("CollectiveReduce '", op.node()->name(), "' with merge_op ", merge,
                     " has no gradient (Add, with final_op Id or Div, has)"));
  }
  constexpr int64_t kGradientBit = int64_t{1} << 62;
  if (instance_key & kGradientBit) {
    return absl::UnimplementedError(absl::StrCat(
        "CollectiveReduce '", op.node()->name(), "': instance_key ", instance_key,
        " has bit 62 set, which the gradient's instance key uses; keep instance keys below 2^62"));
  }
  dx->push_back(ops::CollectiveReduce(s.ColocateWith(op), dy[0], static_cast<int>(group_size),
                                      group_key, instance_key | kGradientBit, "Add", final_op));
  return absl::OkStatus();
}

REGISTER_GRADIENT("CollectiveReduce", CollectiveReduceGrad);

}  // namespace
}  // namespace shardflow
