// UnsortedSegmentSum, UnsortedSegmentMax, UnsortedSegmentMin and UnsortedSegmentProd (TF1's
// tf.math.unsorted_segment_*): out[i, ...] reduces the rows data[j, ...] whose segment_ids[j]
// is i, over the leading dimensions that segment_ids covers. One pass over the data, so time
// and memory grow with the data and the output, not with their product.
//
// An empty segment gives the reduction's identity: 0 for the sum, the dtype's lowest value for
// max, its highest for min, 1 for the product (as TF). An id outside [0, num_segments) fails the
// step naming it (TF1 drops negative ids; shardflow's other segment ops refuse them too).
//
// Gradients (as TF's): the sum's gathers dy back to the rows; max and min share dy[i] equally
// among the rows of segment i equal to its result (ties split it); the product's is
// prod / x, with rows that are 0 handled apart (the product of the segment's other rows when one
// row is 0, nothing when several are).
#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

// [num_segments] + data.shape[rank(segment_ids):], when those are known.
absl::Status UnsortedSegmentShape(InferenceContext* c) {
  const TensorShape& data = c->input(0);
  const TensorShape& ids = c->input(1);
  std::vector<int64_t> num;
  if (data.unknown_rank() || ids.unknown_rank()) {
    c->set_output(0, TensorShape::Unknown());
    return absl::OkStatus();
  }
  if (ids.rank() > data.rank()) {
    return c->InvalidArgument(absl::StrCat("segment_ids (rank ", ids.rank(),
                                           ") has more dimensions than data (rank ", data.rank(),
                                           ")"));
  }
  for (int d = 0; d < ids.rank(); ++d) {
    if (ids.dim(d) >= 0 && data.dim(d) >= 0 && ids.dim(d) != data.dim(d)) {
      return c->InvalidArgument(absl::StrCat("segment_ids ", ids.DebugString(),
                                             " is not a prefix of data's shape ",
                                             data.DebugString()));
    }
  }
  TensorShape out;
  if (c->GetConstantInts(2, &num) && num.size() == 1) {
    if (num[0] < 0) {
      return c->InvalidArgument(absl::StrCat("num_segments must not be negative, got ", num[0]));
    }
    out.AddDim(num[0]);
  } else {
    out.AddDim(-1);
  }
  for (int d = ids.rank(); d < data.rank(); ++d) out.AddDim(data.dim(d));
  c->set_output(0, out);
  return absl::OkStatus();
}

Output Segment(const Scope& s, const char* type, const Output& data, const Output& ids,
               const Output& num_segments) {
  return Output(OpBuilder(s, type).Input(data).Input(ids).Input(num_segments).Finalize().node(), 0);
}
Output GatherRows(const Scope& s, const Output& params, const Output& ids) {
  return Output(OpBuilder(s, "GatherV2")
                    .Input(params)
                    .Input(ids)
                    .Input(Tensor::Scalar<int32_t>(0))
                    .Finalize(),
                0);
}

absl::Status UnsortedSegmentSumGrad(const Scope& s, const Operation& op,
                                    const std::vector<Output>& dy, std::vector<Output>* dx) {
  dx->push_back(GatherRows(s, dy[0], GradInput(op, 1)));
  dx->push_back(Output());
  dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status UnsortedSegmentMinOrMaxGrad(const Scope& s, const Operation& op,
                                         const std::vector<Output>& dy, std::vector<Output>* dx) {
  Output data = GradInput(op, 0), ids = GradInput(op, 1), num = GradInput(op, 2);
  Output selected = ops::Equal(s, data, GatherRows(s, GradOutput(op, 0), ids));
  Output count = Segment(s, "UnsortedSegmentSum", ops::Cast(s, selected, data.dtype()), ids, num);
  Output shared = GatherRows(s, ops::Div(s, dy[0], count), ids);
  dx->push_back(ops::Select(s, selected, shared, ops::ZerosLike(s, data)));
  dx->push_back(Output());
  dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status UnsortedSegmentProdGrad(const Scope& s, const Operation& op,
                                     const std::vector<Output>& dy, std::vector<Output>* dx) {
  Output data = GradInput(op, 0), ids = GradInput(op, 1), num = GradInput(op, 2);
  Output is_zero = ops::Equal(s, data, ops::ZerosLike(s, data));
  Output zeros = Segment(s, "UnsortedSegmentSum", ops::Cast(s, is_zero, data.dtype()), ids, num);
  // Two or more zero rows: the product is 0 whatever any one row does.
  Output grad = ops::Select(s, ops::Greater(s, zeros, ops::OnesLike(s, zeros)),
                            ops::ZerosLike(s, dy[0]), dy[0]);
  Output non_zero = Segment(s, "UnsortedSegmentProd",
                            ops::Select(s, is_zero, ops::OnesLike(s, data), data), ids, num);
  // A zero row's derivative is the product of the others; any other row's is prod / x (the
  // division by a zero row is computed but not chosen).
  Output partial = ops::Select(s, is_zero, GatherRows(s, non_zero, ids),
                               ops::Div(s, GatherRows(s, GradOutput(op, 0), ids), data));
  dx->push_back(ops::Mul(s, GatherRows(s, grad, ids), partial));
  dx->push_back(Output());
  dx->push_back(Output());
  return absl::OkStatus();
}

}  // namespace

#define SF_UNSORTED_SEGMENT_OP(NAME, TYPES, WHAT)                    \
  REGISTER_OP(NAME)                                                  \
      .Input("data: T")                                              \
      .Input("segment_ids: Tindices")                                \
      .Input("num_segments: Tnumsegments")                           \
      .Output("output: T")                                           \
      .Attr("T: " TYPES)                                             \
      .Attr("Tindices: {int32, int64}")                              \
      .Attr("Tnumsegments: {int32, int64} = int32")                  \
      .SetShapeFn(UnsortedSegmentShape)                              \
      .Doc("out[i, ...] = the " WHAT                                 \
           " of the rows data[j..., ...] with segment_ids[j...] == " \
           "i; an id outside [0, num_segments) is an error")

SF_UNSORTED_SEGMENT_OP("UnsortedSegmentSum", "{float, double, half, bfloat16, int32, int64}",
                       "sum (0 for an empty segment)");
SF_UNSORTED_SEGMENT_OP("UnsortedSegmentMax", "{float, double, half, bfloat16, int32, int64}",
                       "maximum (the dtype's lowest value for an empty segment)");
SF_UNSORTED_SEGMENT_OP("UnsortedSegmentMin", "{float, double, half, bfloat16, int32, int64}",
                       "minimum (the dtype's highest value for an empty segment)");
SF_UNSORTED_SEGMENT_OP("UnsortedSegmentProd", "{float, double, half, bfloat16, int32, int64}",
                       "product (1 for an empty segment)");
#undef SF_UNSORTED_SEGMENT_OP

REGISTER_GRADIENT("UnsortedSegmentSum", UnsortedSegmentSumGrad);
REGISTER_GRADIENT("UnsortedSegmentMax", UnsortedSegmentMinOrMaxGrad);
REGISTER_GRADIENT("UnsortedSegmentMin", UnsortedSegmentMinOrMaxGrad);
REGISTER_GRADIENT("UnsortedSegmentProd", UnsortedSegmentProdGrad);

}  // namespace shardflow
