// Shape-function helpers of the windowed ops (convolution and pooling over NHWC images, NDHWC
// volumes): window attrs of the form [1, s_1, ..., s_n, 1], the output of sliding a window
// with the op's strides, padding and dilations, shapes held by a sizes input, and MaxPoolGrad's
// checks. Used by ops/nn_ops.cc, ops/nn3d_ops.cc and ops/depthwise_ops.cc.
//
//   std::vector<int64_t> k;
//   SF_RETURN_IF_ERROR(GetSpatialAttr(c, "ksize", /*spatial=*/2, &k));   // [1, kh, kw, 1]
//   SF_RETURN_IF_ERROR(WindowedOutputShape(c, in, k, /*dilated=*/false, in.dim(3), &out));
#ifndef SHARDFLOW_OPS_WINDOW_SHAPES_H_
#define SHARDFLOW_OPS_WINDOW_SHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/framework/shape_inference.h"

namespace shardflow {

// Attr `name` as its spatial entries: it must be [1, s_1, ..., s_spatial, 1], each >= 1.
absl::Status GetSpatialAttr(InferenceContext* c, const std::string& name, int spatial,
                            std::vector<int64_t>* v);

// The channels-last shape of sliding the window `k` (one size per spatial dimension, -1 where
// unknown) over `in` with the op's strides and padding, and its dilations when `dilated`;
// `channels` output channels.
absl::Status WindowedOutputShape(InferenceContext* c, const TensorShape& in,
                                 const std::vector<int64_t>& k, bool dilated, int64_t channels,
                                 TensorShape* out);

// The op's data_format must be `want` ("NHWC", "NDHWC"): the CPU kernels take channels last.
absl::Status CheckChannelsLast(InferenceContext* c, const std::string& want);

// Output 0 is the shape held by constant input `i` (`rank` sizes), else unknown of that rank.
absl::Status ShapeFromSizesInput(InferenceContext* c, int i, int rank);

// MaxPoolGrad and MaxPool3DGrad: orig_input, orig_output and grad of rank `rank`, the last
// two of one shape; the output is orig_input's shape.
absl::Status MaxPoolGradShapeOfRank(InferenceContext* c, int rank);

}  // namespace shardflow

#endif  // SHARDFLOW_OPS_WINDOW_SHAPES_H_
