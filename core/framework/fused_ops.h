// What the fused ops the graph optimizer makes (_FusedMatMul, _FusedConv2D,
// _FusedConv2DBatchNorm; partitioner/optimizer/remapper.cc) share between their definitions (ops/)
// and their kernels (kernels/cpu/): the activations they apply and the check of their bias input.
#ifndef SHARDFLOW_CORE_FRAMEWORK_FUSED_OPS_H_
#define SHARDFLOW_CORE_FRAMEWORK_FUSED_OPS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/framework/shape_inference.h"
#include "core/platform/checked_math.h"
#include "core/platform/status.h"

namespace shardflow {

// Set (true) by the mixed-precision pass (partitioner/optimizer/auto_mixed_precision.cc) on fp32
// MatMul, Conv2D and convolution-gradient nodes, and inherited by the fused ops made from them,
// where the processor multiplies bfloat16 natively: the kernel rounds its product inputs to
// bfloat16, multiplies them with oneDNN's bf16 kernels and accumulates and writes fp32. The
// graph's types do not change. Absent: false.
inline constexpr char kBf16ProductsAttr[] = "_bf16_products";

// A convolution whose dot products are shorter (kernel height x width x input channels: an
// image's first layer of few channels) is not marked and its kernel stays fp32 even when marked
// (Note [bfloat16 convolutions] in kernels/cpu/conv_ops.cc).
inline constexpr int64_t kMinBf16DotLength = 64;

// Whether a convolution of a kh x kw window over cin input channels has dot products of at least
// kMinBf16DotLength; a product past int64 (sizes from a hostile graph) is long enough.
inline bool Bf16DotProductsLongEnough(int64_t kh, int64_t kw, int64_t cin) {
  int64_t window = 0, length = 0;
  return !CheckedMul(kh, kw, &window) || !CheckedMul(window, cin, &length) ||
         length >= kMinBf16DotLength;
}

// The `activation` attr: "" (none), "Relu", "Tanh" or "Sigmoid".
inline absl::Status CheckFusedActivation(const std::string& activation) {
  if (activation.empty() || activation == "Relu" || activation == "Tanh" ||
      activation == "Sigmoid") {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("activation \"", activation, "\"; one of \"\", Relu, Tanh, Sigmoid"));
}

// Shape functions: the activation attr is one of the above.
inline absl::Status CheckFusedActivationAttr(InferenceContext* c) {
  std::string activation;
  SF_RETURN_IF_ERROR(c->GetAttr("activation", &activation));
  absl::Status s = CheckFusedActivation(activation);
  return s.ok() ? s : c->InvalidArgument(std::string(s.message()));
}

// Shape functions: input 2 (the bias) is a vector of `channels` values (-1: unknown), and the
// activation attr is one of the above.
inline absl::Status CheckFusedBiasAndActivation(InferenceContext* c, int64_t channels) {
  TensorShape bias;
  SF_RETURN_IF_ERROR(c->WithRank(2, 1, &bias));
  if (channels >= 0 && bias.dim(0) >= 0 && bias.dim(0) != channels) {
    return c->InvalidArgument(
        absl::StrCat("bias has ", bias.dim(0), " values for ", channels, " output channels"));
  }
  return CheckFusedActivationAttr(c);
}

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_FUSED_OPS_H_
