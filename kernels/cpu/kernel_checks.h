// Host-side checks and shape arithmetic that the CPU kernels (kernels/cpu/) and the GPU kernels
// (kernels/gpu/) of one op share, so that both refuse the same inputs with the same message.
// Everything here reads shapes and host-memory inputs only (axes, labels), never device memory.
#ifndef SHARDFLOW_KERNELS_CPU_KERNEL_CHECKS_H_
#define SHARDFLOW_KERNELS_CPU_KERNEL_CHECKS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/framework/op_kernel.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_shape.h"

namespace shardflow {

// ---- axes and reductions -----------------------------------------------------------------------

// Reads an axis tensor (int32 or int64, scalar or vector, host memory) into `axes`.
absl::Status ReadAxes(const Tensor& t, const char* what, std::vector<int64_t>* axes);
// "<what> <axis> is out of range for input of shape ...; valid: [-rank, rank)".
absl::Status AxisOutOfRange(const char* what, int64_t axis, const TensorShape& shape);

// What a reduction of `input` over the axes in `axes` computes: which dimensions it reduces, the
// output's shape, the count of values per output, and the input's dimensions merged into
// (size, reduced?) groups, outermost first, size-1 dimensions dropped.
struct ReductionShape {
  std::vector<bool> reduce;
  TensorShape out_shape;
  int64_t reduced_count = 1;
  std::vector<std::pair<int64_t, bool>> groups;
};
absl::StatusOr<ReductionShape> PlanReduction(const TensorShape& input, const Tensor& axes,
                                             bool keep_dims);
// ReductionShape::groups of `input` reduced over the dimensions flagged in `reduce`.
std::vector<std::pair<int64_t, bool>> MergeReducedGroups(const TensorShape& input,
                                                         const std::vector<bool>& reduce);
// The error of a reduction over no values: the Mean of no integers.
absl::Status EmptyIntegerMeanError(const TensorShape& input);

// ---- matrix products --------------------------------------------------------------------------

// MatMul(a, b) with transpose_a/_b: both matrices, inner dimensions equal; the product is [m, n].
struct MatMulDims {
  int64_t m, k, n;
};
absl::StatusOr<MatMulDims> MatMulShape(const Tensor& a, const Tensor& b, bool ta, bool tb);

// ---- nn ---------------------------------------------------------------------------------------

// Conv2D(input, filter): input 4-D NHWC, filter 4-D [height, width, in, out], in = channels.
absl::Status CheckConv2DShapes(const TensorShape& input, const TensorShape& filter);
// input_sizes / filter_sizes / orig_input_shape: an int32 vector of 4 non-negative sizes.
absl::Status ShapeFromSizes(const Tensor& t, const char* what, TensorShape* shape);
// A 2-D window op's "strides" ([1, height, width, 1], entries >= 1) and "padding" attrs.
absl::Status ReadConv2DStrides(OpKernelConstruction* c, int64_t* sh, int64_t* sw,
                               std::string* padding);
// BiasAdd(value, bias): value has rank >= 2 and bias its last dimension's size, which is returned.
absl::StatusOr<int64_t> BiasAddChannels(const Tensor& value, const Tensor& bias);
// BiasAddGrad(out_backprop): rank >= 2; returns the last dimension's size.
absl::StatusOr<int64_t> BiasAddGradChannels(const Tensor& grad);
// The last dimension of `t` (rank >= 1): *c its size, *rows the count of rows of that size.
absl::Status LastDimRows(const Tensor& t, const char* what, int64_t* rows, int64_t* c);
// SoftmaxCrossEntropyWithLogits: features and labels of one shape [batch, classes].
absl::Status CheckSoftmaxXentShapes(const Tensor& features, const Tensor& labels);
// SparseSoftmaxCrossEntropyWithLogits: features [batch, classes], labels [batch] (host memory,
// int32 or int64), every label in [0, classes).
absl::Status CheckSparseXentInputs(const Tensor& features, const Tensor& labels);
// FusedBatchNorm: x of rank >= 2, channels last (*c), viewed as *rows rows; `inputs` (scale,
// offset and, in inference, mean and variance) vectors of c entries, named by `names`.
absl::Status CheckBatchNormInputs(const Tensor& x, const std::vector<const Tensor*>& inputs,
                                  const std::vector<const char*>& names, int64_t* rows, int64_t* c);
// FusedBatchNormGrad: y_backprop and x of one shape of rank >= 2; scale and the two reserve
// spaces vectors of c entries.
absl::Status CheckBatchNormGradInputs(const Tensor& dy, const Tensor& x,
                                      const std::vector<const Tensor*>& inputs,
                                      const std::vector<const char*>& names, int64_t* rows,
                                      int64_t* c);

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_KERNEL_CHECKS_H_
