// Depthwise 2-D convolution (TensorFlow's DepthwiseConv2dNative family): each input channel c of
// an NHWC image is convolved with its own filter[:, :, c, m] for m < multiplier, giving output
// channel c * multiplier + m. Filters are [height, width, in, multiplier]; `strides` and
// `dilations` are [1, h, w, 1]; data_format "NHWC".
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/framework/windowed_output.h"
#include "core/platform/status.h"

namespace shardflow {
namespace {

absl::Status Spatial2(InferenceContext* c, const std::string& attr, int64_t v[2]) {
  std::vector<int64_t> a;
  SF_RETURN_IF_ERROR(c->GetAttr(attr, &a));
  if (a.size() != 4 || a[0] != 1 || a[3] != 1 || a[1] < 1 || a[2] < 1) {
    return c->InvalidArgument(absl::StrCat(attr,
                                           " must be [1, height, width, 1] with entries >= 1, "
                                           "got [",
                                           absl::StrJoin(a, ", "), "]"));
  }
  v[0] = a[1];
  v[1] = a[2];
  return absl::OkStatus();
}

absl::Status CheckNhwc(InferenceContext* c) {
  std::string format;
  SF_RETURN_IF_ERROR(c->GetAttr("data_format", &format));
  if (format != "NHWC") {
    return c->InvalidArgument(
        absl::StrCat("data_format must be \"NHWC\" (the CPU kernels take channels last), got \"",
                     format, "\"; transpose NCHW input with perm [0, 2, 3, 1]"));
  }
  return absl::OkStatus();
}

absl::Status DepthwiseShape(InferenceContext* c) {
  TensorShape in, filter;
  SF_RETURN_IF_ERROR(c->WithRank(0, 4, &in));
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  SF_RETURN_IF_ERROR(CheckNhwc(c));
  if (in.dim(3) >= 0 && filter.dim(2) >= 0 && in.dim(3) != filter.dim(2)) {
    return c->InvalidArgument(absl::StrCat(
        "input has ", in.dim(3), " channels (shape ", in.DebugString(), ", NHWC) but the filter ",
        filter.DebugString(), " ([height, width, in, multiplier]) expects ", filter.dim(2)));
  }
  int64_t s[2], r[2];
  SF_RETURN_IF_ERROR(Spatial2(c, "strides", s));
  SF_RETURN_IF_ERROR(Spatial2(c, "dilations", r));
  std::string padding;
  SF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
  SF_RETURN_IF_ERROR(CheckPadding(padding));
  std::vector<int64_t> dims = {in.dim(0), -1, -1, -1};
  for (int i = 0; i < 2; ++i) {
    if (filter.dim(i) < 0) continue;
    int64_t before, after;
    SF_RETURN_IF_ERROR(WindowedOutputSize(in.dim(i + 1), (filter.dim(i) - 1) * r[i] + 1, s[i],
                                          padding, &dims[i + 1], &before, &after));
  }
  if (in.dim(3) >= 0 && filter.dim(3) >= 0) dims[3] = in.dim(3) * filter.dim(3);
  c->set_output(0, TensorShape(dims));
  return absl::OkStatus();
}

absl::Status ShapeFromSizes(InferenceContext* c, int i) {
  SF_RETURN_IF_ERROR(CheckNhwc(c));
  SF_ASSIGN_OR_RETURN(TensorShape shape, c->ConstantInputAsShape(i));
  if (shape.unknown_rank()) shape = TensorShape::UnknownOfRank(4);
  if (shape.rank() != 4) {
    return c->InvalidArgument(
        absl::StrCat("input ", i, " must hold 4 sizes, got ", shape.rank(), " of them"));
  }
  c->set_output(0, shape);
  return absl::OkStatus();
}

// A multiply and an add per output element and filter tap.
double DepthwiseFlops(const OpCostContext& c, const TensorShape& out, const TensorShape& filter) {
  return 2 * c.Elements(out) * c.Dim(filter, 0) * c.Dim(filter, 1);
}

}  // namespace

REGISTER_OP("DepthwiseConv2dNative")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn(DepthwiseShape)
    .SetFlopsFn([](const OpCostContext& c) { return DepthwiseFlops(c, c.output(0), c.input(1)); })
    .Doc(
        "Depthwise 2-D convolution: input channel c convolved with filter[:, :, c, m] gives "
        "output channel c * multiplier + m.");

REGISTER_OP("DepthwiseConv2dNativeBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](InferenceContext* c) { return ShapeFromSizes(c, 0); })
    .SetFlopsFn([](const OpCostContext& c) { return DepthwiseFlops(c, c.input(2), c.input(1)); })
    .Doc("Gradient of DepthwiseConv2dNative with respect to its input, of shape input_sizes.");

REGISTER_OP("DepthwiseConv2dNativeBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1]")
    .SetShapeFn([](InferenceContext* c) { return ShapeFromSizes(c, 1); })
    .SetFlopsFn([](const OpCostContext& c) { return DepthwiseFlops(c, c.input(2), c.output(0)); })
    .Doc("Gradient of DepthwiseConv2dNative with respect to its filter, of shape filter_sizes.");

}  // namespace shardflow
