// Neural-network ops: convolution, pooling, bias, activations' gradients, softmax and
// cross-entropy, batch normalisation and dropout, with their shape functions.
//
// Images are NHWC ([batch, height, width, channels]); filters are [height, width, in, out].
// `strides` and `ksize` have four entries, [1, along height, along width, 1].
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/fused_ops.h"
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"
#include "core/platform/status.h"
#include "ops/window_shapes.h"

namespace shardflow {
namespace {

absl::Status Conv2DShape(InferenceContext* c) {
  TensorShape in, filter;
  SF_RETURN_IF_ERROR(c->WithRank(0, 4, &in));
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  if (in.dim(3) >= 0 && filter.dim(2) >= 0 && in.dim(3) != filter.dim(2)) {
    return c->InvalidArgument(absl::StrCat(
        "input has ", in.dim(3), " channels (shape ", in.DebugString(), ", NHWC) but the filter ",
        filter.DebugString(), " ([height, width, in, out]) expects ", filter.dim(2)));
  }
  TensorShape out;
  SF_RETURN_IF_ERROR(WindowedOutputShape(c, in, {filter.dim(0), filter.dim(1)},
                                         /*dilated=*/false, filter.dim(3), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status Conv2DBackpropInputShape(InferenceContext* c) {
  TensorShape filter, grad;
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  SF_RETURN_IF_ERROR(c->WithRank(2, 4, &grad));
  return ShapeFromSizesInput(c, 0, 4);
}

absl::Status Conv2DBackpropFilterShape(InferenceContext* c) {
  TensorShape in, grad;
  SF_RETURN_IF_ERROR(c->WithRank(0, 4, &in));
  SF_RETURN_IF_ERROR(c->WithRank(2, 4, &grad));
  return ShapeFromSizesInput(c, 1, 4);
}

absl::Status PoolShape(InferenceContext* c) {
  TensorShape in;
  SF_RETURN_IF_ERROR(c->WithRank(0, 4, &in));
  std::vector<int64_t> k;
  SF_RETURN_IF_ERROR(GetSpatialAttr(c, "ksize", 2, &k));
  TensorShape out;
  SF_RETURN_IF_ERROR(WindowedOutputShape(c, in, k, /*dilated=*/false, in.dim(3), &out));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status MaxPoolGradShape(InferenceContext* c) { return MaxPoolGradShapeOfRank(c, 4); }

absl::Status MaxPoolWithArgmaxShape(InferenceContext* c) {
  SF_RETURN_IF_ERROR(PoolShape(c));
  c->set_output(1, c->output(0));
  return absl::OkStatus();
}

absl::Status MaxPoolGradWithArgmaxShape(InferenceContext* c) {
  TensorShape in, grad, argmax;
  SF_RETURN_IF_ERROR(c->WithRank(0, 4, &in));
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &grad));
  SF_RETURN_IF_ERROR(c->WithRank(2, 4, &argmax));
  if (!grad.IsCompatibleWith(argmax)) {
    return c->InvalidArgument(absl::StrCat("grad ", grad.DebugString(), " and argmax ",
                                           argmax.DebugString(), " must have one shape"));
  }
  c->set_output(0, in);
  return absl::OkStatus();
}

absl::Status AvgPoolGradShape(InferenceContext* c) {
  TensorShape grad;
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &grad));
  return ShapeFromSizesInput(c, 0, 4);
}

absl::Status BiasAddShape(InferenceContext* c) {
  TensorShape value, bias;
  SF_RETURN_IF_ERROR(c->WithRankAtLeast(0, 2, &value));
  SF_RETURN_IF_ERROR(c->WithRank(1, 1, &bias));
  if (!value.unknown_rank()) {
    const int64_t last = value.dim(value.rank() - 1);
    if (last >= 0 && bias.dim(0) >= 0 && last != bias.dim(0)) {
      return c->InvalidArgument(absl::StrCat("bias has ", bias.dim(0),
                                             " entries but the last dimension of value ",
                                             value.DebugString(), " is ", last));
    }
  }
  c->set_output(0, value);
  return absl::OkStatus();
}

absl::Status BiasAddGradShape(InferenceContext* c) {
  TensorShape grad;
  SF_RETURN_IF_ERROR(c->WithRankAtLeast(0, 2, &grad));
  c->set_output(0,
                grad.unknown_rank() ? TensorShape({-1}) : TensorShape({grad.dim(grad.rank() - 1)}));
  return absl::OkStatus();
}

// Output 0 has the merged shape of inputs 0 and 1.
absl::Status MergedShape(InferenceContext* c) {
  auto merged = c->input(0).Merge(c->input(1));
  if (!merged.ok()) {
    return c->InvalidArgument(
        absl::StrCat(merged.status().message(), "; both inputs must have one shape"));
  }
  c->set_output(0, *merged);
  return absl::OkStatus();
}

absl::Status SoftmaxShape(InferenceContext* c) {
  TensorShape logits;
  SF_RETURN_IF_ERROR(c->WithRankAtLeast(0, 1, &logits));
  c->set_output(0, logits);
  return absl::OkStatus();
}

absl::Status XentShape(InferenceContext* c) {
  TensorShape features, labels;
  SF_RETURN_IF_ERROR(c->WithRank(0, 2, &features));
  SF_RETURN_IF_ERROR(c->WithRank(1, 2, &labels));
  auto merged = features.Merge(labels);
  if (!merged.ok()) {
    return c->InvalidArgument(absl::StrCat("features ", features.DebugString(), " and labels ",
                                           labels.DebugString(),
                                           " must have one shape [batch, classes]"));
  }
  c->set_output(0, TensorShape({merged->dim(0)}));
  c->set_output(1, *merged);
  return absl::OkStatus();
}

absl::Status SparseXentShape(InferenceContext* c) {
  TensorShape features, labels;
  SF_RETURN_IF_ERROR(c->WithRank(0, 2, &features));
  SF_RETURN_IF_ERROR(c->WithRank(1, 1, &labels));
  if (features.dim(0) >= 0 && labels.dim(0) >= 0 && features.dim(0) != labels.dim(0)) {
    return c->InvalidArgument(absl::StrCat(
        "features ", features.DebugString(), " has ", features.dim(0), " rows but labels ",
        labels.DebugString(), " has ", labels.dim(0), "; want one label per row"));
  }
  const int64_t n = features.dim(0) >= 0 ? features.dim(0) : labels.dim(0);
  c->set_output(0, TensorShape({n}));
  c->set_output(1, TensorShape({n, features.dim(1)}));
  return absl::OkStatus();
}

// Checks that input i is a vector of `channels` entries (or, when `may_be_empty`, of none).
absl::Status ChannelVector(InferenceContext* c, int i, const char* what, int64_t* channels,
                           bool may_be_empty) {
  TensorShape v;
  SF_RETURN_IF_ERROR(c->WithRank(i, 1, &v));
  const int64_t n = v.dim(0);
  if (n < 0 || (may_be_empty && n == 0)) return absl::OkStatus();
  if (*channels >= 0 && n != *channels) {
    return c->InvalidArgument(absl::StrCat(what, " has ", n, " entries but x has ", *channels,
                                           " channels (its last dimension)"));
  }
  *channels = n;
  return absl::OkStatus();
}

absl::Status FusedBatchNormShape(InferenceContext* c) {
  TensorShape x;
  SF_RETURN_IF_ERROR(c->WithRankAtLeast(0, 2, &x));
  bool is_training;
  SF_RETURN_IF_ERROR(c->GetAttr("is_training", &is_training));
  int64_t channels = x.unknown_rank() ? -1 : x.dim(x.rank() - 1);
  SF_RETURN_IF_ERROR(ChannelVector(c, 1, "scale", &channels, false));
  SF_RETURN_IF_ERROR(ChannelVector(c, 2, "offset", &channels, false));
  // In training the given mean and variance are unused and may be empty.
  SF_RETURN_IF_ERROR(ChannelVector(c, 3, "mean", &channels, is_training));
  SF_RETURN_IF_ERROR(ChannelVector(c, 4, "variance", &channels, is_training));
  c->set_output(0, x);
  for (int i = 1; i < 5; ++i) c->set_output(i, TensorShape({channels}));
  return absl::OkStatus();
}

absl::Status FusedBatchNormGradShape(InferenceContext* c) {
  auto merged = c->input(0).Merge(c->input(1));
  if (!merged.ok()) {
    return c->InvalidArgument(absl::StrCat("y_backprop ", c->input(0).DebugString(), " and x ",
                                           c->input(1).DebugString(), " must have one shape"));
  }
  if (!merged->unknown_rank() && merged->rank() < 2) {
    return c->InvalidArgument(absl::StrCat("x must have rank >= 2, got ", merged->DebugString()));
  }
  int64_t channels = merged->unknown_rank() ? -1 : merged->dim(merged->rank() - 1);
  SF_RETURN_IF_ERROR(ChannelVector(c, 2, "scale", &channels, false));
  SF_RETURN_IF_ERROR(ChannelVector(c, 3, "reserve_space_1", &channels, false));
  SF_RETURN_IF_ERROR(ChannelVector(c, 4, "reserve_space_2", &channels, false));
  c->set_output(0, *merged);
  c->set_output(1, TensorShape({channels}));
  c->set_output(2, TensorShape({channels}));
  c->set_output(3, TensorShape({0}));
  c->set_output(4, TensorShape({0}));
  return absl::OkStatus();
}

absl::Status DropoutShape(InferenceContext* c) {
  float rate;
  SF_RETURN_IF_ERROR(c->GetAttr("rate", &rate));
  if (!(rate >= 0.0f && rate < 1.0f)) {
    return c->InvalidArgument(absl::StrCat("rate must be in [0, 1), got ", rate));
  }
  c->set_output(0, c->input(0));
  c->set_output(1, c->input(0));
  return absl::OkStatus();
}

absl::Status FusedConv2DShape(InferenceContext* c) {
  SF_RETURN_IF_ERROR(Conv2DShape(c));
  TensorShape filter;
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  return CheckFusedBiasAndActivation(c, filter.dim(3));
}

// Inputs 2..5 (scale, offset, mean, variance) are vectors of the filter's output channels.
absl::Status FusedConv2DBatchNormShape(InferenceContext* c) {
  SF_RETURN_IF_ERROR(Conv2DShape(c));
  TensorShape filter;
  SF_RETURN_IF_ERROR(c->WithRank(1, 4, &filter));
  for (int i = 2; i <= 5; ++i) {
    TensorShape v;
    SF_RETURN_IF_ERROR(c->WithRank(i, 1, &v));
    if (filter.dim(3) >= 0 && v.dim(0) >= 0 && v.dim(0) != filter.dim(3)) {
      return c->InvalidArgument(absl::StrCat("input ", i, " has ", v.dim(0), " values for ",
                                             filter.dim(3), " output channels"));
    }
  }
  return CheckFusedActivationAttr(c);
}

// The output of _FusedConv2DAdd / _FusedConv2DBatchNormAdd, after the convolution's shape function:
// the side input (input `side_index`) has the output's shape, but its batch may be 1 where the
// output's is not, or the other way round (Add broadcasts).
absl::Status MergeSideInput(InferenceContext* c, int side_index) {
  TensorShape side;
  SF_RETURN_IF_ERROR(c->WithRank(side_index, 4, &side));
  TensorShape out = c->output(0);
  if (out.rank() != 4) return absl::OkStatus();
  for (int i = 1; i < 4; ++i) {
    if (out.dim(i) >= 0 && side.dim(i) >= 0 && out.dim(i) != side.dim(i)) {
      return c->InvalidArgument(absl::StrCat("the side input ", side.DebugString(),
                                             " does not match the convolution's output ",
                                             out.DebugString(), " in dimension ", i));
    }
    if (out.dim(i) < 0) out.set_dim(i, side.dim(i));
  }
  if (out.dim(0) == 1 || (out.dim(0) < 0 && side.dim(0) != 1)) out.set_dim(0, side.dim(0));
  c->set_output(0, out);
  return absl::OkStatus();
}

absl::Status FusedConv2DAddShape(InferenceContext* c) {
  SF_RETURN_IF_ERROR(FusedConv2DShape(c));
  return MergeSideInput(c, 3);
}

absl::Status FusedConv2DBatchNormAddShape(InferenceContext* c) {
  SF_RETURN_IF_ERROR(FusedConv2DBatchNormShape(c));
  return MergeSideInput(c, 6);
}

// Each output element of a convolution is a dot product over the filter's height, width and
// input channels: a multiply and an add each. `filter` is [KH, KW, IC, OC].
double ConvFlops(const OpCostContext& c, const TensorShape& out, const TensorShape& filter) {
  return 2 * c.Elements(out) * c.Dim(filter, 0) * c.Dim(filter, 1) * c.Dim(filter, 2);
}

// A pooling window's worth of work per element of the larger side (inputs or outputs).
double PoolFlops(const OpCostContext& c) {
  std::vector<int64_t> ksize;
  double window = 1;
  if (c.GetAttr("ksize", &ksize)) {
    for (int64_t k : ksize) window *= static_cast<double>(std::max<int64_t>(1, k));
  }
  return std::max(c.InputElements(), c.OutputElements()) * window;
}

}  // namespace

REGISTER_OP("Conv2D")
    .Input("input: T")
    .Input("filter: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .SetShapeFn(Conv2DShape)
    .SetFlopsFn([](const OpCostContext& c) { return ConvFlops(c, c.output(0), c.input(1)); })
    .Doc(
        "2-D convolution (cross-correlation) of an NHWC input with a [height, width, in, out] "
        "filter; padding \"SAME\" or \"VALID\".");

// Made by the graph optimizer's remapping pass (partitioner/optimizer/), not by users: one oneDNN
// primitive with the bias and activation applied as it writes its output (_FusedMatMul, its
// matrix-product sibling, is beside MatMul in math_ops.cc).
REGISTER_OP("_FusedConv2D")
    .Input("input: T")
    .Input("filter: T")
    .Input("bias: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("activation: string = ''")
    .SetShapeFn(FusedConv2DShape)
    .SetFlopsFn([](const OpCostContext& c) { return ConvFlops(c, c.output(0), c.input(1)); })
    .Doc("activation(Conv2D(input, filter) + bias); activation \"\", Relu, Tanh or Sigmoid.");

// Made by the remapping pass from _FusedConv2D + a residual Add (+ activation): a frozen ResNet
// block's end, its batch norm folded into the filter and the bias.
REGISTER_OP("_FusedConv2DAdd")
    .Input("input: T")
    .Input("filter: T")
    .Input("bias: T")
    .Input("side: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("activation: string = ''")
    .SetShapeFn(FusedConv2DAddShape)
    .SetFlopsFn([](const OpCostContext& c) { return ConvFlops(c, c.output(0), c.input(1)); })
    .Doc(
        "activation(Conv2D(input, filter) + bias + side): a residual block's last convolution "
        "and add in one pass.");

// Made by the remapping pass from Conv2D + an inference FusedBatchNorm (+ activation) whose
// statistics are not constants (variables: a model evaluated as it trains); the batch norm's
// per-channel scale and shift are applied as the convolution writes its output.
REGISTER_OP("_FusedConv2DBatchNorm")
    .Input("input: T")
    .Input("filter: T")
    .Input("scale: T")
    .Input("offset: T")
    .Input("mean: T")
    .Input("variance: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("epsilon: float = 0.001")
    .Attr("activation: string = ''")
    .SetShapeFn(FusedConv2DBatchNormShape)
    .SetFlopsFn([](const OpCostContext& c) { return ConvFlops(c, c.output(0), c.input(1)); })
    .Doc(
        "activation((Conv2D(input, filter) - mean) * scale / sqrt(variance + epsilon) + "
        "offset): Conv2D and an inference FusedBatchNorm in one pass.");

REGISTER_OP("_FusedConv2DBatchNormAdd")
    .Input("input: T")
    .Input("filter: T")
    .Input("scale: T")
    .Input("offset: T")
    .Input("mean: T")
    .Input("variance: T")
    .Input("side: T")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("epsilon: float = 0.001")
    .Attr("activation: string = ''")
    .SetShapeFn(FusedConv2DBatchNormAddShape)
    .SetFlopsFn([](const OpCostContext& c) { return ConvFlops(c, c.output(0), c.input(1)); })
    .Doc(
        "activation((Conv2D(input, filter) - mean) * scale / sqrt(variance + epsilon) + offset + "
        "side): a ResNet block's last convolution, inference batch norm, residual add and "
        "activation in one pass.");

REGISTER_OP("Conv2DBackpropInput")
    .Input("input_sizes: int32")
    .Input("filter: T")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .SetShapeFn(Conv2DBackpropInputShape)
    .SetFlopsFn([](const OpCostContext& c) { return ConvFlops(c, c.input(2), c.input(1)); })
    .Doc("Gradient of Conv2D with respect to its input, whose shape input_sizes gives.");

REGISTER_OP("Conv2DBackpropFilter")
    .Input("input: T")
    .Input("filter_sizes: int32")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .SetShapeFn(Conv2DBackpropFilterShape)
    .SetFlopsFn([](const OpCostContext& c) { return ConvFlops(c, c.input(2), c.output(0)); })
    .Doc("Gradient of Conv2D with respect to its filter, whose shape filter_sizes gives.");

REGISTER_OP("MaxPool")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .SetShapeFn(PoolShape)
    .SetFlopsFn([](const OpCostContext& c) { return PoolFlops(c); })
    .Doc("Maximum over windows of an NHWC input (padding never wins).");

REGISTER_OP("MaxPoolGrad")
    .Input("orig_input: T")
    .Input("orig_output: T")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .SetShapeFn(MaxPoolGradShape)
    .SetFlopsFn([](const OpCostContext& c) { return PoolFlops(c); })
    .Doc(
        "Gradient of MaxPool: each window's gradient goes to the first position holding its "
        "maximum.");

REGISTER_OP("MaxPoolWithArgmax")
    .Input("input: T")
    .Output("output: T")
    .Output("argmax: Targmax")
    .Attr("T: {float}")
    .Attr("Targmax: {int32, int64} = int64")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("include_batch_in_index: bool = false")
    .SetShapeFn(MaxPoolWithArgmaxShape)
    .SetFlopsFn([](const OpCostContext& c) { return PoolFlops(c); })
    .Doc(
        "MaxPool, and where each maximum is: the flat index (y * width + x) * channels + c in its "
        "image (plus batch * height * width * channels with include_batch_in_index) of the first "
        "position holding it.");

REGISTER_OP("MaxPoolGradWithArgmax")
    .Input("input: T")
    .Input("grad: T")
    .Input("argmax: Targmax")
    .Output("output: T")
    .Attr("T: {float}")
    .Attr("Targmax: {int32, int64}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .Attr("include_batch_in_index: bool = false")
    .SetShapeFn(MaxPoolGradWithArgmaxShape)
    .SetFlopsFn([](const OpCostContext& c) { return c.InputElements(); })
    .Doc(
        "Gradient of MaxPoolWithArgmax: grad[i] added at input position argmax[i] (checked to "
        "lie in the input).");

REGISTER_OP("AvgPool")
    .Input("value: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .SetShapeFn(PoolShape)
    .SetFlopsFn([](const OpCostContext& c) { return PoolFlops(c); })
    .Doc("Mean over windows of an NHWC input; padded positions are not counted.");

REGISTER_OP("AvgPoolGrad")
    .Input("orig_input_shape: int32")
    .Input("grad: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("ksize: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: string")
    .SetShapeFn(AvgPoolGradShape)
    .SetFlopsFn([](const OpCostContext& c) { return PoolFlops(c); })
    .Doc("Gradient of AvgPool: each window's gradient spread evenly over its valid positions.");

REGISTER_OP("BiasAdd")
    .Input("value: T")
    .Input("bias: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .SetShapeFn(BiasAddShape)
    .Doc("value + bias, bias a vector added along the last dimension (value of rank >= 2).");

REGISTER_OP("BiasAddGrad")
    .Input("out_backprop: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .SetShapeFn(BiasAddGradShape)
    .Doc("Sum over every dimension but the last: the gradient of BiasAdd's bias.");

REGISTER_OP("ReluGrad")
    .Input("gradients: T")
    .Input("features: T")
    .Output("backprops: T")
    .Attr("T: {float, double}")
    .SetShapeFn(MergedShape)
    .Doc("gradients where features > 0, else 0 (features: Relu's input or output).");

REGISTER_OP("LRN")
    .Input("input: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("depth_radius: int = 5")
    .Attr("bias: float = 1")
    .Attr("alpha: float = 1")
    .Attr("beta: float = 0.5")
    .SetShapeFn(UnchangedShape)
    .Doc(
        "Local response normalisation across channels (TF1's tf.nn.lrn, 4-D NHWC input): "
        "output = input / (bias + alpha * sum(input^2 over channels c - depth_radius .. c + "
        "depth_radius))^beta.");

REGISTER_OP("LRNGrad")
    .Input("input_grads: T")
    .Input("input_image: T")
    .Input("output_image: T")
    .Output("output: T")
    .Attr("T: {float, double}")
    .Attr("depth_radius: int = 5")
    .Attr("bias: float = 1")
    .Attr("alpha: float = 1")
    .Attr("beta: float = 0.5")
    .SetShapeFn(UnchangedShape)
    .Doc("The gradient of LRN at input_image from the gradient at its output.");

REGISTER_OP("Softmax")
    .Input("logits: T")
    .Output("softmax: T")
    .Attr("T: {float, double}")
    .SetShapeFn(SoftmaxShape)
    .Doc("exp(logits) / sum(exp(logits)) along the last dimension.");

REGISTER_OP("LogSoftmax")
    .Input("logits: T")
    .Output("logsoftmax: T")
    .Attr("T: {float, double}")
    .SetShapeFn(SoftmaxShape)
    .Doc("logits - log(sum(exp(logits))) along the last dimension.");

REGISTER_OP("SoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: T")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {float, double}")
    .SetShapeFn(XentShape)
    .Doc(
        "Per-row cross-entropy between softmax(features) and the label distributions, both "
        "[batch, classes]; backprop = softmax(features) - labels.");

REGISTER_OP("SparseSoftmaxCrossEntropyWithLogits")
    .Input("features: T")
    .Input("labels: Tlabels")
    .Output("loss: T")
    .Output("backprop: T")
    .Attr("T: {float, double}")
    .Attr("Tlabels: {int32, int64} = int64")
    .SetShapeFn(SparseXentShape)
    .Doc(
        "Per-row cross-entropy of softmax(features) [batch, classes] against class indices "
        "labels [batch] in [0, classes); backprop = softmax(features) - one_hot(labels).");

REGISTER_OP("FusedBatchNorm")
    .Input("x: T")
    .Input("scale: T")
    .Input("offset: T")
    .Input("mean: T")
    .Input("variance: T")
    .Output("y: T")
    .Output("batch_mean: T")
    .Output("batch_variance: T")
    .Output("reserve_space_1: T")
    .Output("reserve_space_2: T")
    .Attr("T: {float}")
    .Attr("epsilon: float = 0.001")
    .Attr("is_training: bool = true")
    .SetShapeFn(FusedBatchNormShape)
    .Doc(
        "Batch normalisation over every dimension but the last (the channels): "
        "y = scale * (x - mean) / sqrt(variance + epsilon) + offset. In training the batch's "
        "mean and variance are used and returned (batch_variance with Bessel's correction, for "
        "running averages); in inference the given ones. reserve_space_1 and _2 hold the mean "
        "and 1 / sqrt(variance + epsilon) that were applied, for FusedBatchNormGrad.");

REGISTER_OP("FusedBatchNormGrad")
    .Input("y_backprop: T")
    .Input("x: T")
    .Input("scale: T")
    .Input("reserve_space_1: T")
    .Input("reserve_space_2: T")
    .Output("x_backprop: T")
    .Output("scale_backprop: T")
    .Output("offset_backprop: T")
    .Output("reserve_space_3: T")
    .Output("reserve_space_4: T")
    .Attr("T: {float}")
    .Attr("epsilon: float = 0.001")
    .Attr("is_training: bool = true")
    .SetShapeFn(FusedBatchNormGradShape)
    .Doc(
        "Gradient of FusedBatchNorm from its reserve spaces (epsilon is already in them); "
        "reserve_space_3 and _4 are empty.");

REGISTER_OP("Dropout")
    .Input("x: T")
    .Output("output: T")
    .Output("mask: T")
    .Attr("T: {float, double}")
    .Attr("rate: float")
    .Attr("seed: int = 0")
    .Attr("seed2: int = 0")
    .SetIsStateful()
    .SetShapeFn(DropoutShape)
    .Doc(
        "mask = (uniform[0,1) >= rate) / (1 - rate), output = x * mask, rate in [0, 1). With a "
        "nonzero seed or seed2 the k-th run of the node draws the same mask in every process.");

REGISTER_OP("StatelessDropout")
    .Input("x: T")
    .Input("seed: Tseed")
    .Output("output: T")
    .Output("mask: T")
    .Attr("T: {float, double}")
    .Attr("Tseed: {int32, int64} = int64")
    .Attr("rate: float")
    .SetShapeFn(DropoutShape)
    .Doc(
        "Dropout whose mask is a function of `seed` (2 integers) and x's shape: the same seed "
        "draws the same mask (a function recomputed for its gradient needs that).");

}  // namespace shardflow
