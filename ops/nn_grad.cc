// Gradient functions of the neural-network ops (ops/nn_ops.cc) and of Relu.
//
// Gradients with respect to integer inputs (labels, shapes) and to FusedBatchNorm's mean and
// variance are invalid Outputs ("no gradient"). The cross-entropies differentiate only the loss
// output: the gradient arriving at `backprop` is ignored (second derivatives through backprop are
// not supported).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/platform/status.h"
#include "ops/gradients.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"

namespace shardflow {
namespace {

using GradOutputs = std::vector<Output>;

// The shape of x as an int32 vector: a Const when known at build time, else a Shape op.
Output ShapeOf(const Scope& s, const Output& x) {
  const TensorShape& shape = x.shape();
  if (shape.IsFullyDefined()) {
    std::vector<int32_t> dims(shape.dims().begin(), shape.dims().end());
    return ops::Const(s, Tensor::FromVector<int32_t>(dims));
  }
  return ops::Shape(s, x, DT_INT32);
}

struct WindowAttrs {
  std::vector<int64_t> ksize, strides;
  std::string padding;
};

absl::Status GetWindowAttrs(const Operation& op, bool pooling, WindowAttrs* w) {
  const AttrMap& attrs = op.node()->attrs();
  if (pooling) SF_RETURN_IF_ERROR(GetAttr(attrs, "ksize", &w->ksize));
  SF_RETURN_IF_ERROR(GetAttr(attrs, "strides", &w->strides));
  return GetAttr(attrs, "padding", &w->padding);
}

absl::Status Conv2DGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                        GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, false, &w));
  Output x = GradInput(op, 0), filter = GradInput(op, 1);
  dx->push_back(ops::Conv2DBackpropInput(s, ShapeOf(s, x), filter, dy[0], w.strides, w.padding));
  dx->push_back(ops::Conv2DBackpropFilter(s, x, ShapeOf(s, filter), dy[0], w.strides, w.padding));
  return absl::OkStatus();
}

// Conv2DBackpropInput (also conv2d_transpose): y = conv^T(filter, dz) is linear in both, so
// d/d dz is the forward convolution of dy and d/d filter the filter gradient of dy against dz.
absl::Status Conv2DBackpropInputGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                     GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, false, &w));
  Output filter = GradInput(op, 1), dz = GradInput(op, 2);
  dx->push_back(Output());  // input_sizes
  dx->push_back(ops::Conv2DBackpropFilter(s, dy[0], ShapeOf(s, filter), dz, w.strides, w.padding));
  dx->push_back(ops::Conv2D(s, dy[0], filter, w.strides, w.padding));
  return absl::OkStatus();
}

// The filter gradient is linear in the input and in dz: <BackpropFilter(x, dz), D> =
// <Conv2D(x, D), dz> = <x, BackpropInput(D, dz)> (second derivatives through a convolution's
// weights: MAML, gradient penalties).
absl::Status Conv2DBackpropFilterGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                      GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, false, &w));
  Output x = GradInput(op, 0), dz = GradInput(op, 2);
  dx->push_back(ops::Conv2DBackpropInput(s, ShapeOf(s, x), dy[0], dz, w.strides, w.padding));
  dx->push_back(Output());  // filter_sizes
  dx->push_back(ops::Conv2D(s, x, dy[0], w.strides, w.padding));
  return absl::OkStatus();
}

absl::Status LrnGrad(const Scope& s, const Operation& op, const GradOutputs& dy, GradOutputs* dx) {
  const AttrMap& a = op.node()->attrs();
  int64_t radius;
  float bias, alpha, beta;
  SF_RETURN_IF_ERROR(GetAttr(a, "depth_radius", &radius));
  SF_RETURN_IF_ERROR(GetAttr(a, "bias", &bias));
  SF_RETURN_IF_ERROR(GetAttr(a, "alpha", &alpha));
  SF_RETURN_IF_ERROR(GetAttr(a, "beta", &beta));
  dx->push_back(Output(OpBuilder(s, "LRNGrad")
                           .Input(dy[0])
                           .Input(GradInput(op, 0))
                           .Input(GradOutput(op, 0))
                           .Attr("depth_radius", radius)
                           .Attr("bias", bias)
                           .Attr("alpha", alpha)
                           .Attr("beta", beta)
                           .Finalize()
                           .node(),
                       0));
  return absl::OkStatus();
}

// The gradient at a fused op's pre-activation sum, from its output y = activation(sum).
absl::Status FusedActivationGrad(const Scope& s, const Operation& op, const Output& dy,
                                 Output* dsum) {
  std::string activation;
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "activation", &activation));
  Output y = GradOutput(op, 0);
  if (activation.empty()) {
    *dsum = dy;
  } else if (activation == "Relu") {
    *dsum = ops::ReluGrad(s, dy, y);
  } else if (activation == "Tanh") {
    *dsum = ops::Mul(s, dy, ops::Sub(s, 1, ops::Square(s, y)));
  } else if (activation == "Sigmoid") {
    *dsum = ops::Mul(s, dy, ops::Mul(s, y, ops::Sub(s, 1, y)));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("no gradient for activation ", activation));
  }
  return absl::OkStatus();
}

// The gradient function registered for `product` (Conv2D, MatMul) applied to a fused op, which
// has the product's inputs first and its attrs, at the product's output gradient `g`.
absl::Status ProductGrad(const std::string& product, const Scope& s, const Operation& op,
                         const Output& g, GradOutputs* dx) {
  bool no_gradient = false;
  const GradFunc* fn = GradientRegistry::Global()->Lookup(product, &no_gradient);
  if (fn == nullptr) return absl::InternalError("no gradient function for " + product);
  return (*fn)(s, op, {g}, dx);
}

// A fused op's gradient: its product's at the pre-activation sum, then the bias's.
absl::Status FusedProductGrad(const std::string& product, const Scope& s, const Operation& op,
                              const GradOutputs& dy, GradOutputs* dx) {
  Output g;
  SF_RETURN_IF_ERROR(FusedActivationGrad(s, op, dy[0], &g));
  SF_RETURN_IF_ERROR(ProductGrad(product, s, op, g, dx));
  dx->push_back(ops::BiasAddGrad(s, g));
  return absl::OkStatus();
}

absl::Status FusedConv2DGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                             GradOutputs* dx) {
  return FusedProductGrad("Conv2D", s, op, dy, dx);
}

// For the fused convolutions' gradients: the gradient before the activation (*g) and the
// convolution of inputs 0 and 1 recomputed with the op's strides and padding (*conv).
absl::Status ActivationGradAndConv(const Scope& s, const Operation& op, const GradOutputs& dy,
                                   Output* g, Output* conv) {
  SF_RETURN_IF_ERROR(FusedActivationGrad(s, op, dy[0], g));
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, false, &w));
  *conv = ops::Conv2D(s, GradInput(op, 0), GradInput(op, 1), w.strides, w.padding);
  return absl::OkStatus();
}

// _FusedConv2DAdd (made by the remapper in frozen inference graphs; this is for graphs that use
// it directly): _FusedConv2D's gradient, and the side input gets the gradient before the
// convolution, each summed over a batch it was broadcast across (the convolution is recomputed
// for its shape only where that is not known when the graph is built).
absl::Status FusedConv2DAddGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                GradOutputs* dx) {
  Output g, conv;
  SF_RETURN_IF_ERROR(ActivationGradAndConv(s, op, dy, &g, &conv));
  Output g_conv = ReduceLike(s, g, conv);
  SF_RETURN_IF_ERROR(ProductGrad("Conv2D", s, op, g_conv, dx));
  dx->push_back(ops::BiasAddGrad(s, g_conv));
  dx->push_back(ReduceLike(s, g, GradInput(op, 3)));
  return absl::OkStatus();
}

// The remapper makes _FusedConv2DBatchNorm(Add) in graphs that are already differentiated; this
// is for graphs that use them directly. The convolution is recomputed, then the inference batch
// norm's gradient (FusedBatchNormGrad, is_training false) and Conv2D's registered gradient
// follow; the moving statistics get none, as FusedBatchNorm's. The side input of
// _FusedConv2DBatchNormAdd gets the gradient before the batch norm, summed over a batch it was
// broadcast across.
absl::Status FusedConv2DBatchNormGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                      GradOutputs* dx) {
  Output g, conv;
  SF_RETURN_IF_ERROR(ActivationGradAndConv(s, op, dy, &g, &conv));
  float epsilon;
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "epsilon", &epsilon));
  const bool side = op.node()->op() == "_FusedConv2DBatchNormAdd";
  // With a side input broadcast over the batch, g has the side's batch: the convolution's part
  // of it is summed back to the convolution's shape.
  Output g_conv = side ? ReduceLike(s, g, conv) : g;
  Output inv_std = ops::Rsqrt(s, ops::Add(s, GradInput(op, 5), epsilon));
  auto bn = ops::FusedBatchNormGrad(s, g_conv, conv, GradInput(op, 2), GradInput(op, 4), inv_std,
                                    epsilon, /*is_training=*/false);
  SF_RETURN_IF_ERROR(ProductGrad("Conv2D", s, op, bn.x_backprop, dx));
  dx->push_back(bn.scale_backprop);
  dx->push_back(bn.offset_backprop);
  dx->push_back(Output());  // mean
  dx->push_back(Output());  // variance
  if (side) dx->push_back(ReduceLike(s, g, GradInput(op, 6)));
  return absl::OkStatus();
}

absl::Status FusedMatMulGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                             GradOutputs* dx) {
  return FusedProductGrad("MatMul", s, op, dy, dx);
}

absl::Status MaxPoolGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                         GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, true, &w));
  dx->push_back(ops::MaxPoolGrad(s, GradInput(op, 0), GradOutput(op, 0), dy[0], w.ksize, w.strides,
                                 w.padding));
  return absl::OkStatus();
}

absl::Status AvgPoolGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                         GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, true, &w));
  dx->push_back(
      ops::AvgPoolGrad(s, ShapeOf(s, GradInput(op, 0)), dy[0], w.ksize, w.strides, w.padding));
  return absl::OkStatus();
}

// The argmax output has no gradient; the values' gradient goes where argmax says.
absl::Status MaxPoolWithArgmaxGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                   GradOutputs* dx) {
  const AttrMap& attrs = op.node()->attrs();
  OpBuilder b(s, "MaxPoolGradWithArgmax");
  b.Input(GradInput(op, 0)).Input(dy[0]).Input(GradOutput(op, 1));
  for (const char* name : {"ksize", "strides", "padding", "include_batch_in_index", "Targmax"}) {
    auto it = attrs.find(name);
    if (it != attrs.end()) b.Attr(name, it->second);
  }
  Operation grad = b.Finalize();
  dx->push_back(grad.valid() ? Output(grad.node(), 0) : Output());
  return absl::OkStatus();
}

// An op of `type` on `inputs` with the window attrs of `op` (strides, padding, dilations,
// data_format: those it has).
Output WithWindowOf(const Scope& s, const Operation& op, const std::string& type,
                    const std::vector<Output>& inputs) {
  const AttrMap& attrs = op.node()->attrs();
  OpBuilder b(s, type);
  for (const Output& in : inputs) b.Input(in);
  for (const char* name : {"strides", "padding", "dilations", "data_format"}) {
    auto it = attrs.find(name);
    if (it != attrs.end()) b.Attr(name, it->second);
  }
  Operation built = b.Finalize();
  return built.valid() ? Output(built.node(), 0) : Output();
}

// DepthwiseConv2dNative (ops/depthwise_ops.cc).
absl::Status DepthwiseConv2dGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                 GradOutputs* dx) {
  Output x = GradInput(op, 0), filter = GradInput(op, 1);
  dx->push_back(
      WithWindowOf(s, op, "DepthwiseConv2dNativeBackpropInput", {ShapeOf(s, x), filter, dy[0]}));
  dx->push_back(
      WithWindowOf(s, op, "DepthwiseConv2dNativeBackpropFilter", {x, ShapeOf(s, filter), dy[0]}));
  return absl::OkStatus();
}

// The depthwise backprops are linear in their two tensor inputs, as Conv2D's (second
// derivatives through depthwise and separable convolutions).
absl::Status DepthwiseBackpropInputGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                        GradOutputs* dx) {
  Output filter = GradInput(op, 1), dz = GradInput(op, 2);
  dx->push_back(Output());  // input_sizes
  dx->push_back(
      WithWindowOf(s, op, "DepthwiseConv2dNativeBackpropFilter", {dy[0], ShapeOf(s, filter), dz}));
  dx->push_back(WithWindowOf(s, op, "DepthwiseConv2dNative", {dy[0], filter}));
  return absl::OkStatus();
}

absl::Status DepthwiseBackpropFilterGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                         GradOutputs* dx) {
  Output x = GradInput(op, 0), dz = GradInput(op, 2);
  dx->push_back(
      WithWindowOf(s, op, "DepthwiseConv2dNativeBackpropInput", {ShapeOf(s, x), dy[0], dz}));
  dx->push_back(Output());  // filter_sizes
  dx->push_back(WithWindowOf(s, op, "DepthwiseConv2dNative", {x, dy[0]}));
  return absl::OkStatus();
}

// ---- 3-D convolution and pooling (ops/nn3d_ops.cc) ----

std::vector<int64_t> Dilations(const Operation& op) {
  std::vector<int64_t> d = {1, 1, 1, 1, 1};
  if (op.node()->attrs().count("dilations")) (void)GetAttr(op.node()->attrs(), "dilations", &d);
  return d;
}

absl::Status Conv3DGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                        GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, false, &w));
  const std::vector<int64_t> r = Dilations(op);
  Output x = GradInput(op, 0), filter = GradInput(op, 1);
  dx->push_back(
      ops::Conv3DBackpropInputV2(s, ShapeOf(s, x), filter, dy[0], w.strides, w.padding, r));
  dx->push_back(
      ops::Conv3DBackpropFilterV2(s, x, ShapeOf(s, filter), dy[0], w.strides, w.padding, r));
  return absl::OkStatus();
}

// As Conv2DBackpropInputGrad (conv3d_transpose trains through it).
absl::Status Conv3DBackpropInputGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                     GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, false, &w));
  const std::vector<int64_t> r = Dilations(op);
  Output filter = GradInput(op, 1), dz = GradInput(op, 2);
  dx->push_back(Output());  // input_sizes
  dx->push_back(
      ops::Conv3DBackpropFilterV2(s, dy[0], ShapeOf(s, filter), dz, w.strides, w.padding, r));
  dx->push_back(ops::Conv3D(s, dy[0], filter, w.strides, w.padding, r));
  return absl::OkStatus();
}

// The filter gradient is linear in the input and in dz (second derivatives of Conv3D).
absl::Status Conv3DBackpropFilterGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                      GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, false, &w));
  const std::vector<int64_t> r = Dilations(op);
  Output x = GradInput(op, 0), dz = GradInput(op, 2);
  dx->push_back(ops::Conv3DBackpropInputV2(s, ShapeOf(s, x), dy[0], dz, w.strides, w.padding, r));
  dx->push_back(Output());  // filter_sizes
  dx->push_back(ops::Conv3D(s, x, dy[0], w.strides, w.padding, r));
  return absl::OkStatus();
}

absl::Status MaxPool3DGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                           GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, true, &w));
  dx->push_back(ops::MaxPool3DGrad(s, GradInput(op, 0), GradOutput(op, 0), dy[0], w.ksize,
                                   w.strides, w.padding));
  return absl::OkStatus();
}

absl::Status AvgPool3DGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                           GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, true, &w));
  dx->push_back(
      ops::AvgPool3DGrad(s, ShapeOf(s, GradInput(op, 0)), dy[0], w.ksize, w.strides, w.padding));
  return absl::OkStatus();
}

// AvgPool3DGrad is linear in its gradient input: its own gradient is the forward pooling.
absl::Status AvgPool3DGradGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                               GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, true, &w));
  dx->push_back(Output());  // orig_input_shape
  dx->push_back(ops::AvgPool3D(s, dy[0], w.ksize, w.strides, w.padding));
  return absl::OkStatus();
}

absl::Status BiasAddGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                         GradOutputs* dx) {
  dx->push_back(dy[0]);
  dx->push_back(ops::BiasAddGrad(s, dy[0]));
  return absl::OkStatus();
}

// Relu's output is positive exactly where its input is, and lets the input be freed.
absl::Status ReluGrad(const Scope& s, const Operation& op, const GradOutputs& dy, GradOutputs* dx) {
  dx->push_back(ops::ReluGrad(s, dy[0], GradOutput(op, 0)));
  return absl::OkStatus();
}

// ReluGrad(dy, x) is linear in dy: its gradient there is ReluGrad(g, x); x gets zeros (the
// derivative of relu's step is zero almost everywhere). Second derivatives through relu
// (gradient penalties, MAML) need it.
absl::Status ReluGradGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                          GradOutputs* dx) {
  dx->push_back(ops::ReluGrad(s, dy[0], GradInput(op, 1)));
  // Zeros, not none, for the features, as TF1's: a gradient penalty's gradient with respect
  // to a bias in front of a relu is a zero tensor (tf.gradients gave None).
  dx->push_back(ops::ZerosLike(s, GradInput(op, 1)));
  return absl::OkStatus();
}

// MaxPoolGrad(x, y, dy) routes each dy to its window's maximum: its gradient there takes g
// at each window's maximum, found again by MaxPoolWithArgmax (flat indices with the batch);
// x and y get none (the routing is piecewise constant).
absl::Status MaxPoolGradGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                             GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, true, &w));
  Operation pooled = OpBuilder(s, "MaxPoolWithArgmax")
                         .Input(GradInput(op, 0))
                         .Attr("ksize", w.ksize)
                         .Attr("strides", w.strides)
                         .Attr("padding", w.padding)
                         .Attr("include_batch_in_index", true)
                         .Finalize();
  if (!pooled.valid()) return s.status();
  Output flat = ops::Reshape(s, dy[0], ops::Const(s, Tensor::FromVector<int32_t>({-1})));
  Operation gathered = OpBuilder(s, "GatherV2")
                           .Input(flat)
                           .Input(Output(pooled.node(), 1))
                           .Input(ops::Const(s, Tensor::Scalar<int32_t>(0)))
                           .Finalize();
  Output picked = gathered.valid() ? Output(gathered.node(), 0) : Output();
  dx->push_back(Output());  // orig_input
  dx->push_back(Output());  // orig_output
  dx->push_back(picked);
  return absl::OkStatus();
}

// AvgPoolGrad(shape, dy) is linear in dy: its gradient there is AvgPool(g).
absl::Status AvgPoolGradGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                             GradOutputs* dx) {
  WindowAttrs w;
  SF_RETURN_IF_ERROR(GetWindowAttrs(op, true, &w));
  dx->push_back(Output());  // orig_input_shape
  dx->push_back(ops::AvgPool(s, dy[0], w.ksize, w.strides, w.padding));
  return absl::OkStatus();
}

// dx = (dy - sum(dy * y)) * y, sums along the last dimension.
absl::Status SoftmaxGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                         GradOutputs* dx) {
  Output y = GradOutput(op, 0);
  Output dot = ops::Sum(s, ops::Mul(s, dy[0], y), -1, /*keep_dims=*/true);
  dx->push_back(ops::Mul(s, ops::Sub(s, dy[0], dot), y));
  return absl::OkStatus();
}

// dx = dy - softmax(x) * sum(dy), with softmax(x) = exp(y).
absl::Status LogSoftmaxGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                            GradOutputs* dx) {
  Output total = ops::Sum(s, dy[0], -1, /*keep_dims=*/true);
  dx->push_back(ops::Sub(s, dy[0], ops::Mul(s, ops::Exp(s, GradOutput(op, 0)), total)));
  return absl::OkStatus();
}

// d(loss_i)/d(features_i) = backprop_i; labels get no gradient. backprop = softmax(x) - labels
// is an output too: a gradient that flows into it (a second derivative: a gradient penalty,
// MAML's meta-gradient) adds softmax's Jacobian times it, (g - sum(g * p)) * p. Where nothing
// uses backprop its gradient is the zeros the gradient builder filled in, and is skipped.
absl::Status XentGrad(const Scope& s, const Operation& op, const GradOutputs& dy, GradOutputs* dx) {
  Output grad = ops::Mul(s, GradOutput(op, 1), ops::ExpandDims(s, dy[0], -1));
  if (dy[1].node()->op() != "ZerosLike") {
    Output p = ops::Softmax(s, GradInput(op, 0));
    Output dot = ops::Sum(s, ops::Mul(s, dy[1], p), -1, /*keep_dims=*/true);
    grad = ops::Add(s, grad, ops::Mul(s, ops::Sub(s, dy[1], dot), p));
  }
  dx->push_back(grad);
  dx->push_back(Output());
  return absl::OkStatus();
}

absl::Status FusedBatchNormGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                GradOutputs* dx) {
  float epsilon;
  bool is_training;
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "epsilon", &epsilon));
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "is_training", &is_training));
  auto g = ops::FusedBatchNormGrad(s, dy[0], GradInput(op, 0), GradInput(op, 1), GradOutput(op, 3),
                                   GradOutput(op, 4), epsilon, is_training);
  dx->push_back(g.x_backprop);
  dx->push_back(g.scale_backprop);
  dx->push_back(g.offset_backprop);
  dx->push_back(Output());  // mean
  dx->push_back(Output());  // variance
  return absl::OkStatus();
}

// Note [The second derivative of batch norm]. FusedBatchNormGrad's own gradient (MAML's
// meta-gradient and gradient penalties through a batch-normalised network), from its formulas:
// per channel over the M positions, with a = y_backprop, xh = (x - mean) * r (the reserve spaces
// hold mean and r = 1 / sqrt(var + eps)) and the means m(.) over positions,
//   x_backprop = scale * r * (a - m(a) - xh * m(a * xh)),  scale_bp = sum(a * xh),  offset_bp =
//   sum(a).
// For incoming gradients u (of x_backprop), p (of scale_bp) and q (of offset_bp):
//   d/da     = scale * r * (u - m(u) - xh * m(u * xh)) + p * xh + q
//   d/dscale = sum(u * r * (a - m(a) - xh * m(a * xh)))
//   d/dx     = -scale * r^2 * (xh * (m(u * (a - m(a))) - 3 m(a * xh) m(u * xh))
//                               + m(u * xh) (a - m(a)) + m(a * xh) (u - m(u)))
//              + p * r * (a - m(a) - xh * m(a * xh))
// in training, where mean and r are the batch's own statistics and so functions of x (the reserve
// spaces get no gradient: this is the whole derivative, as TF's _FusedBatchNormGradGrad, which
// recomputes them from x). In inference mean and r are given: x_backprop = scale * r * a, so
//   d/da = scale * r * u + p * xh + q,  d/dscale = sum(u * r * a),  d/dx = p * r * a.
// Checked against finite differences in tests/ops/nn_grad_test.cc.
absl::Status FusedBatchNormGradGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                                    GradOutputs* dx) {
  bool is_training;
  SF_RETURN_IF_ERROR(GetAttr(op.node()->attrs(), "is_training", &is_training));
  const Output a_in = GradInput(op, 0), x_in = GradInput(op, 1), scale = GradInput(op, 2);
  const Output mean = GradInput(op, 3), r = GradInput(op, 4);
  // [..., C] as [M, C]: the statistics are over axis 0.
  const Output shape = ops::Shape(s, x_in);
  const Output flat =
      ops::Concat(s, {ops::Const(s, Tensor::FromVector<int32_t>({-1})), ops::Shape(s, scale)},
                  ops::Const(s, Tensor::Scalar<int32_t>(0)));
  auto as_rows = [&](const Output& t) { return ops::Reshape(s, t, flat); };
  auto m = [&](const Output& t) { return ops::Mean(s, t, 0); };
  const Output a = as_rows(a_in), x = as_rows(x_in), u = as_rows(dy[0]);
  const Output p = dy[1], q = dy[2];
  const Output xh = ops::Mul(s, ops::Sub(s, x, mean), r);
  const Output sr = ops::Mul(s, scale, r);
  Output g_a, g_scale, g_x;
  if (is_training) {
    const Output a_c = ops::Sub(s, a, m(a)), u_c = ops::Sub(s, u, m(u));
    const Output m_axh = m(ops::Mul(s, a, xh)), m_uxh = m(ops::Mul(s, u, xh));
    const Output x_bp_unit = ops::Sub(s, a_c, ops::Mul(s, xh, m_axh));  // x_backprop / (scale*r)
    g_a = ops::AddN(s, {ops::Mul(s, sr, ops::Sub(s, u_c, ops::Mul(s, xh, m_uxh))),
                        ops::Mul(s, p, xh), ops::Mul(s, q, ops::OnesLike(s, a))});
    g_scale = ops::Sum(s, ops::Mul(s, ops::Mul(s, u, r), x_bp_unit), 0);
    const Output coeff = ops::Sub(
        s, m(ops::Mul(s, u, a_c)),
        ops::Mul(s, ops::Const(s, Tensor::Scalar<float>(3.0f)), ops::Mul(s, m_axh, m_uxh)));
    const Output bracket =
        ops::AddN(s, {ops::Mul(s, xh, coeff), ops::Mul(s, m_uxh, a_c), ops::Mul(s, m_axh, u_c)});
    g_x = ops::Sub(s, ops::Mul(s, ops::Mul(s, p, r), x_bp_unit),
                   ops::Mul(s, ops::Mul(s, sr, r), bracket));
  } else {
    g_a =
        ops::AddN(s, {ops::Mul(s, sr, u), ops::Mul(s, p, xh), ops::Mul(s, q, ops::OnesLike(s, a))});
    g_scale = ops::Sum(s, ops::Mul(s, ops::Mul(s, u, r), a), 0);
    g_x = ops::Mul(s, ops::Mul(s, p, r), a);
  }
  dx->push_back(ops::Reshape(s, g_a, shape));
  dx->push_back(ops::Reshape(s, g_x, shape));
  dx->push_back(g_scale);
  dx->push_back(Output());  // reserve_space_1: the statistics' dependence on x is in d/dx
  dx->push_back(Output());  // reserve_space_2
  return absl::OkStatus();
}

absl::Status DropoutGrad(const Scope& s, const Operation& op, const GradOutputs& dy,
                         GradOutputs* dx) {
  dx->push_back(ops::Mul(s, dy[0], GradOutput(op, 1)));
  if (op.node()->num_inputs() > 1) dx->push_back(Output());  // StatelessDropout's seed
  return absl::OkStatus();
}

}  // namespace

REGISTER_GRADIENT("_FusedConv2D", FusedConv2DGrad);
REGISTER_GRADIENT("_FusedMatMul", FusedMatMulGrad);
REGISTER_GRADIENT("Conv2D", Conv2DGrad);
REGISTER_GRADIENT("LRN", LrnGrad);
REGISTER_GRADIENT("Conv2DBackpropInput", Conv2DBackpropInputGrad);
REGISTER_GRADIENT("Conv2DBackpropFilter", Conv2DBackpropFilterGrad);
REGISTER_GRADIENT("DepthwiseConv2dNativeBackpropInput", DepthwiseBackpropInputGrad);
REGISTER_GRADIENT("DepthwiseConv2dNativeBackpropFilter", DepthwiseBackpropFilterGrad);
REGISTER_GRADIENT("MaxPool", MaxPoolGrad);
REGISTER_GRADIENT("AvgPool", AvgPoolGrad);
REGISTER_GRADIENT("MaxPoolWithArgmax", MaxPoolWithArgmaxGrad);
REGISTER_GRADIENT("Conv3D", Conv3DGrad);
REGISTER_GRADIENT("DepthwiseConv2dNative", DepthwiseConv2dGrad);
REGISTER_GRADIENT("Conv3DBackpropInputV2", Conv3DBackpropInputGrad);
REGISTER_GRADIENT("Conv3DBackpropFilterV2", Conv3DBackpropFilterGrad);
REGISTER_GRADIENT("MaxPool3D", MaxPool3DGrad);
REGISTER_GRADIENT("AvgPool3D", AvgPool3DGrad);
REGISTER_GRADIENT("AvgPool3DGrad", AvgPool3DGradGrad);
REGISTER_GRADIENT("BiasAdd", BiasAddGrad);
REGISTER_GRADIENT("Relu", ReluGrad);
REGISTER_GRADIENT("ReluGrad", ReluGradGrad);
REGISTER_GRADIENT("AvgPoolGrad", AvgPoolGradGrad);
REGISTER_GRADIENT("MaxPoolGrad", MaxPoolGradGrad);
REGISTER_GRADIENT("Softmax", SoftmaxGrad);
REGISTER_GRADIENT("LogSoftmax", LogSoftmaxGrad);
REGISTER_GRADIENT("SoftmaxCrossEntropyWithLogits", XentGrad);
REGISTER_GRADIENT("SparseSoftmaxCrossEntropyWithLogits", XentGrad);
REGISTER_GRADIENT("FusedBatchNorm", FusedBatchNormGrad);
REGISTER_GRADIENT("FusedBatchNormGrad", FusedBatchNormGradGrad);
REGISTER_GRADIENT("_FusedConv2DBatchNorm", FusedConv2DBatchNormGrad);
REGISTER_GRADIENT("_FusedConv2DBatchNormAdd", FusedConv2DBatchNormGrad);
REGISTER_GRADIENT("_FusedConv2DAdd", FusedConv2DAddGrad);
REGISTER_GRADIENT("Dropout", DropoutGrad);
REGISTER_GRADIENT("StatelessDropout", DropoutGrad);

}  // namespace shardflow
