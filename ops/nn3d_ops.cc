// 3-D convolution and pooling (TensorFlow's Conv3D family): volumes are NDHWC ([batch, depth,
// height, width, channels]), filters [depth, height, width, in, out]. `strides`, `ksize` and
// `dilations` have five entries, [1, along depth, along height, along width, 1]; data_format is
// "NDHWC" (the only layout the CPU kernels take, as in TensorFlow's CPU kernels).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/window_shapes.h"

namespace shardflow {
namespace {

absl::Status Conv3DShape(InferenceContext* c) {
  TensorShape in, filter;
  SF_RETURN_IF_ERROR(c->WithRank(0, 5, &in));
  SF_RETURN_IF_ERROR(c->WithRank(1, 5, &filter));
  if (in.dim(4) >= 0 && filter.dim(3) >= 0 && in.dim(4) != filter.dim(3)) {
    return c->InvalidArgument(absl::StrCat(
        "input has ", in.dim(4), " channels (shape ", in.DebugString(), ", NDHWC) but the filter ",
        filter.DebugString(), " ([depth, height, width, in, out]) expects ", filter.dim(3)));
  }
  SF_RETURN_IF_ERROR(CheckChannelsLast(c, "NDHWC"));
  TensorShape out;
  SF_RETURN_IF_ERROR(WindowedOutputShape(c, in, {filter.dim(0), filter.dim(1), filter.dim(2)},
                                         /*dilated=*/true, filter.dim(4), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status Conv3DBackpropInputShape(InferenceContext* c) {
  TensorShape filter, grad;
  SF_RETURN_IF_ERROR(CheckChannelsLast(c, "NDHWC"));
  SF_RETURN_IF_ERROR(c->WithRank(1, 5, &filter));
  SF_RETURN_IF_ERROR(c->WithRank(2, 5, &grad));
  return ShapeFromSizesInput(c, 0, 5);
}

absl::Status Conv3DBackpropFilterShape(InferenceContext* c) {
  TensorShape in, grad;
  SF_RETURN_IF_ERROR(CheckChannelsLast(c, "NDHWC"));
  SF_RETURN_IF_ERROR(c->WithRank(0, 5, &in));
  SF_RETURN_IF_ERROR(c->WithRank(2, 5, &grad));
  return ShapeFromSizesInput(c, 1, 5);
}

absl::Status Pool3DShape(InferenceContext* c) {
  TensorShape in;
  SF_RETURN_IF_ERROR(c->WithRank(0, 5, &in));
  SF_RETURN_IF_ERROR(CheckChannelsLast(c, "NDHWC"));
  std::vector<int64_t> k;
  SF_RETURN_IF_ERROR(GetSpatialAttr(c, "ksize", 3, &k));
  TensorShape out;
  SF_RETURN_IF_ERROR(WindowedOutputShape(c, in, k, /*dilated=*/false, in.dim(4), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status MaxPool3DGradShape(InferenceContext* c) { return MaxPoolGradShapeOfRank(c, 5); }

absl::Status AvgPool3DGradShape(InferenceContext* c) {
  TensorShape grad;
  SF_RETURN_IF_ERROR(c->WithRank(1, 5, &grad));
  return ShapeFromSizesInput(c, 0, 5);
}

// A multiply and an add per output element and filter tap (filter [KD, KH, KW, IC, OC]).
double Conv3DFlops(const OpCostContext& c, const TensorShape& out, const TensorShape& filter) {
  return 2 * c.Elements(out) * c.Dim(filter, 0) * c.Dim(filter, 1) * c.Dim(filter, 2) *
         c.Dim(filter, 3);
}

double Pool3DFlops(const OpCostContext& c) {
  std::vector<int64_t> ksize;
  double window = 1;
  if (c.GetAttr("ksize", &ksize)) {
    for (int64_t k : ksize) window *= static_cast<double>(std::max<int64_t>(1, k));
  }
  return std::max(c.InputElements(), c.OutputElements()) * window;
}

}  // namespace

REGISTER_OP("Conv3D")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NDHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1, 1]")
    .SetShapeFn(Conv3DShape)
    .SetFlopsFn([](const OpCostContext& c) { return Conv3DFlops(c, c.output(0), c.input(1)); })
    .Doc(
        "3-D convolution (cross-correlation) of an NDHWC input with a [depth, height, width, in, "
        "out] filter; padding \"SAME\" or \"VALID\"; dilations for atrous filters.");

REGISTER_OP("Conv3DBackpropInputV2")
    .Input("input_sizes: Tshape")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("Tshape: {int32, int64} = int32")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NDHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1, 1]")
    .SetShapeFn(Conv3DBackpropInputShape)
    .SetFlopsFn([](const OpCostContext& c) { return Conv3DFlops(c, c.input(2), c.input(1)); })
    .Doc(
        "Gradient of Conv3D with respect to its input, of shape input_sizes (also the transposed "
        "3-D convolution, conv3d_transpose).");

REGISTER_OP("Conv3DBackpropFilterV2")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NDHWC'")
    .Attr("dilations: list(int) = [1, 1, 1, 1, 1]")
    .SetShapeFn(Conv3DBackpropFilterShape)
    .SetFlopsFn([](const OpCostContext& c) { return Conv3DFlops(c, c.input(2), c.output(0)); })
    .Doc("Gradient of Conv3D with respect to its filter, of shape filter_sizes.");

REGISTER_OP("MaxPool3D")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NDHWC'")
    .SetShapeFn(Pool3DShape)
    .SetFlopsFn([](const OpCostContext& c) { return Pool3DFlops(c); })
    .Doc("Maximum over 3-D windows of an NDHWC input (padding never wins).");

REGISTER_OP("MaxPool3DGrad")
    .Input("orig_input: TInput")
    .Input("orig_output: TInput")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("TInput: {float} = float")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NDHWC'")
    .SetShapeFn(MaxPool3DGradShape)
    .SetFlopsFn([](const OpCostContext& c) { return Pool3DFlops(c); })
    .Doc(
        "Gradient of MaxPool3D: each window's gradient goes to the first position (depth, then "
        "height, then width) holding its maximum.");

REGISTER_OP("AvgPool3D")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NDHWC'")
    .SetShapeFn(Pool3DShape)
    .SetFlopsFn([](const OpCostContext& c) { return Pool3DFlops(c); })
    .Doc("Mean over 3-D windows of an NDHWC input; padded positions are not counted.");

REGISTER_OP("AvgPool3DGrad")
    .Input("orig_input_shape: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("data_format: string = 'NDHWC'")
    .SetShapeFn(AvgPool3DGradShape)
    .SetFlopsFn([](const OpCostContext& c) { return Pool3DFlops(c); })
    .Doc("Gradient of AvgPool3D: each window's gradient spread evenly over its valid positions.");

}  // namespace shardflow
