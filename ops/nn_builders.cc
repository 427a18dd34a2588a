// Builder functions of the neural-network ops declared in ops/nn_ops.h.
#include "ops/nn_ops.h"

namespace shardflow {
namespace ops {
namespace {

Output Out(const Operation& op, int i = 0) { return op.valid() ? Output(op.node(), i) : Output(); }

OpBuilder& Window(OpBuilder& b, const std::vector<int64_t>* ksize,
                  const std::vector<int64_t>& strides, const std::string& padding) {
  if (ksize != nullptr) b.Attr("ksize", *ksize);
  return b.Attr("strides", strides).Attr("padding", padding);
}

}  // namespace

Output Conv2D(const Scope& s, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding) {
  OpBuilder b(s, "Conv2D");
  b.Input(input).Input(filter);
  return Out(Window(b, nullptr, strides, padding).Finalize());
}

Output Conv2DBackpropInput(const Scope& s, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, const std::vector<int64_t>& strides,
                           const std::string& padding) {
  OpBuilder b(s, "Conv2DBackpropInput");
  b.Input(input_sizes).Input(filter).Input(out_backprop);
  return Out(Window(b, nullptr, strides, padding).Finalize());
}

Output Conv2DBackpropFilter(const Scope& s, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, const std::vector<int64_t>& strides,
                            const std::string& padding) {
  OpBuilder b(s, "Conv2DBackpropFilter");
  b.Input(input).Input(filter_sizes).Input(out_backprop);
  return Out(Window(b, nullptr, strides, padding).Finalize());
}

Output MaxPool(const Scope& s, const Input& input, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  OpBuilder b(s, "MaxPool");
  b.Input(input);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output MaxPoolGrad(const Scope& s, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding) {
  OpBuilder b(s, "MaxPoolGrad");
  b.Input(orig_input).Input(orig_output).Input(grad);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output AvgPool(const Scope& s, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding) {
  OpBuilder b(s, "AvgPool");
  b.Input(value);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output AvgPoolGrad(const Scope& s, const Input& orig_input_shape, const Input& grad,
                   const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                   const std::string& padding) {
  OpBuilder b(s, "AvgPoolGrad");
  b.Input(orig_input_shape).Input(grad);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output Conv3D(const Scope& s, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding,
              const std::vector<int64_t>& dilations) {
  OpBuilder b(s, "Conv3D");
  b.Input(input).Input(filter).Attr("dilations", dilations);
  return Out(Window(b, nullptr, strides, padding).Finalize());
}

Output Conv3DBackpropInputV2(const Scope& s, const Input& input_sizes, const Input& filter,
                             const Input& out_backprop, const std::vector<int64_t>& strides,
                             const std::string& padding, const std::vector<int64_t>& dilations) {
  OpBuilder b(s, "Conv3DBackpropInputV2");
  b.Input(input_sizes).Input(filter).Input(out_backprop).Attr("dilations", dilations);
  return Out(Window(b, nullptr, strides, padding).Finalize());
}

Output Conv3DBackpropFilterV2(const Scope& s, const Input& input, const Input& filter_sizes,
                              const Input& out_backprop, const std::vector<int64_t>& strides,
                              const std::string& padding, const std::vector<int64_t>& dilations) {
  OpBuilder b(s, "Conv3DBackpropFilterV2");
  b.Input(input).Input(filter_sizes).Input(out_backprop).Attr("dilations", dilations);
  return Out(Window(b, nullptr, strides, padding).Finalize());
}

Output MaxPool3D(const Scope& s, const Input& input, const std::vector<int64_t>& ksize,
                 const std::vector<int64_t>& strides, const std::string& padding) {
  OpBuilder b(s, "MaxPool3D");
  b.Input(input);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output MaxPool3DGrad(const Scope& s, const Input& orig_input, const Input& orig_output,
                     const Input& grad, const std::vector<int64_t>& ksize,
                     const std::vector<int64_t>& strides, const std::string& padding) {
  OpBuilder b(s, "MaxPool3DGrad");
  b.Input(orig_input).Input(orig_output).Input(grad);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output AvgPool3D(const Scope& s, const Input& value, const std::vector<int64_t>& ksize,
                 const std::vector<int64_t>& strides, const std::string& padding) {
  OpBuilder b(s, "AvgPool3D");
  b.Input(value);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output AvgPool3DGrad(const Scope& s, const Input& orig_input_shape, const Input& grad,
                     const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                     const std::string& padding) {
  OpBuilder b(s, "AvgPool3DGrad");
  b.Input(orig_input_shape).Input(grad);
  return Out(Window(b, &ksize, strides, padding).Finalize());
}

Output BiasAdd(const Scope& s, const Input& value, const Input& bias) {
  return Out(OpBuilder(s, "BiasAdd").Input(value).Input(bias).Finalize());
}
Output BiasAddGrad(const Scope& s, const Input& out_backprop) {
  return Out(OpBuilder(s, "BiasAddGrad").Input(out_backprop).Finalize());
}
Output ReluGrad(const Scope& s, const Input& gradients, const Input& features) {
  return Out(OpBuilder(s, "ReluGrad").Input(gradients).Input(features).Finalize());
}
Output Softmax(const Scope& s, const Input& logits) {
  return Out(OpBuilder(s, "Softmax").Input(logits).Finalize());
}
Output LogSoftmax(const Scope& s, const Input& logits) {
  return Out(OpBuilder(s, "LogSoftmax").Input(logits).Finalize());
}

SoftmaxCrossEntropyResult SoftmaxCrossEntropyWithLogits(const Scope& s, const Input& features,
                                                        const Input& labels) {
  Operation op =
      OpBuilder(s, "SoftmaxCrossEntropyWithLogits").Input(features).Input(labels).Finalize();
  return {Out(op, 0), Out(op, 1)};
}

SoftmaxCrossEntropyResult SparseSoftmaxCrossEntropyWithLogits(const Scope& s, const Input& features,
                                                              const Input& labels) {
  Operation op =
      OpBuilder(s, "SparseSoftmaxCrossEntropyWithLogits").Input(features).Input(labels).Finalize();
  return {Out(op, 0), Out(op, 1)};
}

FusedBatchNormResult FusedBatchNorm(const Scope& s, const Input& x, const Input& scale,
                                    const Input& offset, const Input& mean, const Input& variance,
                                    float epsilon, bool is_training) {
  Operation op = OpBuilder(s, "FusedBatchNorm")
                     .Input(x)
                     .Input(scale)
                     .Input(offset)
                     .Input(mean)
                     .Input(variance)
                     .Attr("epsilon", epsilon)
                     .Attr("is_training", is_training)
                     .Finalize();
  return {Out(op, 0), Out(op, 1), Out(op, 2), Out(op, 3), Out(op, 4)};
}

FusedBatchNormGradResult FusedBatchNormGrad(const Scope& s, const Input& y_backprop, const Input& x,
                                            const Input& scale, const Input& reserve_space_1,
                                            const Input& reserve_space_2, float epsilon,
                                            bool is_training) {
  Operation op = OpBuilder(s, "FusedBatchNormGrad")
                     .Input(y_backprop)
                     .Input(x)
                     .Input(scale)
                     .Input(reserve_space_1)
                     .Input(reserve_space_2)
                     .Attr("epsilon", epsilon)
                     .Attr("is_training", is_training)
                     .Finalize();
  return {Out(op, 0), Out(op, 1), Out(op, 2)};
}

DropoutResult DropoutWithMask(const Scope& s, const Input& x, float rate, int64_t seed,
                              int64_t seed2) {
  Operation op = OpBuilder(s, "Dropout")
                     .Input(x)
                     .Attr("rate", rate)
                     .Attr("seed", seed)
                     .Attr("seed2", seed2)
                     .Finalize();
  return {Out(op, 0), Out(op, 1)};
}

Output Dropout(const Scope& s, const Input& x, float rate, int64_t seed, int64_t seed2) {
  return DropoutWithMask(s, x, rate, seed, seed2).output;
}

}  // namespace ops
}  // namespace shardflow
