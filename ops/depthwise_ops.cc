// Depthwise 2-D convolution (TensorFlow's DepthwiseConv2dNative family): each input channel c of
// an NHWC image is convolved with its own filter[:, :, c, m] for m < multiplier, giving output
// channel c * multiplier + m. Filters are [height, width, in, multiplier]; `strides` and
// `dilations` are [1, h, w, 1]; data_format "NHWC".
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/window_shapes.h"

namespace shardflow {
namespace {

absl::Status DepthwiseShape(InferenceContext* c) {
  TensorShape in, filter;
  SF_RETURN_IF_ERROR(c->WithRank(0, 4, &in));
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  SF_RETURN_IF_ERROR(CheckChannelsLast(c, "NHWC"));
  if (in.dim(3) >= 0 && filter.dim(2) >= 0 && in.dim(3) != filter.dim(2)) {
    return c->InvalidArgument(absl::StrCat(
        "input has ", in.dim(3), " channels (shape ", in.DebugString(), ", NHWC) but the filter ",
        filter.DebugString(), " ([height, width, in, multiplier]) expects ", filter.dim(2)));
  }
  TensorShape out;
  const int64_t channels = in.dim(3) >= 0 && filter.dim(3) >= 0 ? in.dim(3) * filter.dim(3) : -1;
  SF_RETURN_IF_ERROR(WindowedOutputShape(c, in, {filter.dim(0), filter.dim(1)},
                                         /*dilated=*/true, channels, &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status SizesShape(InferenceContext* c, int i) {
  SF_RETURN_IF_ERROR(CheckChannelsLast(c, "NHWC"));
  return ShapeFromSizesInput(c, i, 4);
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
    .SetShapeFn([](InferenceContext* c) { return SizesShape(c, 0); })
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
    .SetShapeFn([](InferenceContext* c) { return SizesShape(c, 1); })
    .SetFlopsFn([](const OpCostContext& c) { return DepthwiseFlops(c, c.input(2), c.output(0)); })
    .Doc("Gradient of DepthwiseConv2dNative with respect to its filter, of shape filter_sizes.");

}  // namespace shardflow
