// The C++ API of the neural-network ops (ops/nn_ops.cc): one function per op, as in ops/ops.h.
//
//   auto h = ops::Relu(s, ops::BiasAdd(s, ops::Conv2D(s, images, w, {1, 1, 1, 1}, "SAME"), b));
//   auto p = ops::MaxPool(s, h, {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
//   auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, labels);
//   auto loss = ops::Mean(s, xent.loss, {0});
//
// Images are NHWC, filters [height, width, in, out]; strides and ksize are [1, h, w, 1].
// Ops with several outputs return a struct of Outputs (all invalid after an error).
#ifndef SHARDFLOW_OPS_NN_OPS_H_
#define SHARDFLOW_OPS_NN_OPS_H_

#include <string>
#include <vector>

#include "ops/scope.h"

namespace shardflow {
namespace ops {

// ---- convolution ----
Output Conv2D(const Scope& s, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding);
Output Conv2DBackpropInput(const Scope& s, const Input& input_sizes, const Input& filter,
                           const Input& out_backprop, const std::vector<int64_t>& strides,
                           const std::string& padding);
Output Conv2DBackpropFilter(const Scope& s, const Input& input, const Input& filter_sizes,
                            const Input& out_backprop, const std::vector<int64_t>& strides,
                            const std::string& padding);

// ---- pooling ----
Output MaxPool(const Scope& s, const Input& input, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
Output MaxPoolGrad(const Scope& s, const Input& orig_input, const Input& orig_output,
                   const Input& grad, const std::vector<int64_t>& ksize,
                   const std::vector<int64_t>& strides, const std::string& padding);
Output AvgPool(const Scope& s, const Input& value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
Output AvgPoolGrad(const Scope& s, const Input& orig_input_shape, const Input& grad,
                   const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                   const std::string& padding);

// ---- 3-D convolution and pooling (ops/nn3d_ops.cc): NDHWC volumes, filters [d, h, w, in, out],
// strides / ksize / dilations [1, d, h, w, 1] ----
Output Conv3D(const Scope& s, const Input& input, const Input& filter,
              const std::vector<int64_t>& strides, const std::string& padding,
              const std::vector<int64_t>& dilations = {1, 1, 1, 1, 1});
Output Conv3DBackpropInputV2(const Scope& s, const Input& input_sizes, const Input& filter,
                             const Input& out_backprop, const std::vector<int64_t>& strides,
                             const std::string& padding,
                             const std::vector<int64_t>& dilations = {1, 1, 1, 1, 1});
Output Conv3DBackpropFilterV2(const Scope& s, const Input& input, const Input& filter_sizes,
                              const Input& out_backprop, const std::vector<int64_t>& strides,
                              const std::string& padding,
                              const std::vector<int64_t>& dilations = {1, 1, 1, 1, 1});
Output MaxPool3D(const Scope& s, const Input& input, const std::vector<int64_t>& ksize,
                 const std::vector<int64_t>& strides, const std::string& padding);
Output MaxPool3DGrad(const Scope& s, const Input& orig_input, const Input& orig_output,
                     const Input& grad, const std::vector<int64_t>& ksize,
                     const std::vector<int64_t>& strides, const std::string& padding);
Output AvgPool3D(const Scope& s, const Input& value, const std::vector<int64_t>& ksize,
                 const std::vector<int64_t>& strides, const std::string& padding);
Output AvgPool3DGrad(const Scope& s, const Input& orig_input_shape, const Input& grad,
                     const std::vector<int64_t>& ksize, const std::vector<int64_t>& strides,
                     const std::string& padding);

// ---- bias and activations ----
Output BiasAdd(const Scope& s, const Input& value, const Input& bias);
Output BiasAddGrad(const Scope& s, const Input& out_backprop);
Output ReluGrad(const Scope& s, const Input& gradients, const Input& features);
Output Softmax(const Scope& s, const Input& logits);
Output LogSoftmax(const Scope& s, const Input& logits);

// ---- losses ----
struct SoftmaxCrossEntropyResult {
  Output loss;      // [batch]
  Output backprop;  // [batch, classes]: softmax(features) - labels
};
SoftmaxCrossEntropyResult SoftmaxCrossEntropyWithLogits(const Scope& s, const Input& features,
                                                        const Input& labels);
// labels: int32 or int64 class indices, [batch].
SoftmaxCrossEntropyResult SparseSoftmaxCrossEntropyWithLogits(const Scope& s, const Input& features,
                                                              const Input& labels);

// ---- normalisation and regularisation ----
struct FusedBatchNormResult {
  Output y;
  Output batch_mean;
  Output batch_variance;
  Output reserve_space_1;  // the mean applied
  Output reserve_space_2;  // 1 / sqrt(variance + epsilon) applied
};
// In training, `mean` and `variance` are unused (they may be empty vectors).
FusedBatchNormResult FusedBatchNorm(const Scope& s, const Input& x, const Input& scale,
                                    const Input& offset, const Input& mean, const Input& variance,
                                    float epsilon = 0.001f, bool is_training = true);
struct FusedBatchNormGradResult {
  Output x_backprop;
  Output scale_backprop;
  Output offset_backprop;
};
FusedBatchNormGradResult FusedBatchNormGrad(const Scope& s, const Input& y_backprop, const Input& x,
                                            const Input& scale, const Input& reserve_space_1,
                                            const Input& reserve_space_2, float epsilon = 0.001f,
                                            bool is_training = true);

// Dropout's output x * mask; rate in [0, 1). A nonzero seed makes the k-th run of the node draw
// the same mask in every process. DropoutWithMask also returns the mask.
Output Dropout(const Scope& s, const Input& x, float rate, int64_t seed = 0, int64_t seed2 = 0);
struct DropoutResult {
  Output output;
  Output mask;  // 0 or 1 / (1 - rate)
};
DropoutResult DropoutWithMask(const Scope& s, const Input& x, float rate, int64_t seed = 0,
                              int64_t seed2 = 0);

}  // namespace ops
}  // namespace shardflow

#endif  // SHARDFLOW_OPS_NN_OPS_H_
