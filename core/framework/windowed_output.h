// Output size and padding of a sliding window (convolution, pooling) along one dimension, with
// TensorFlow's "SAME" and "VALID" rules. Shared by the nn op shape functions and their kernels, so
// that graph-build time and run time agree.
//
//   int64_t out, pad_before, pad_after;
//   SF_RETURN_IF_ERROR(WindowedOutputSize(28, 5, 1, "SAME", &out, &pad_before, &pad_after));
//   // out = 28, pad_before = 2, pad_after = 2
//
// SAME: out = ceil(in / stride); the padding needed, max((out - 1) * stride + window - in, 0), is
// split with the extra element (when odd) after. VALID: no padding; out = ceil((in - window + 1) /
// stride), and a window larger than the input is an error.
#ifndef SHARDFLOW_CORE_FRAMEWORK_WINDOWED_OUTPUT_H_
#define SHARDFLOW_CORE_FRAMEWORK_WINDOWED_OUTPUT_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shardflow {

// "SAME" or "VALID"; anything else is InvalidArgument naming the valid values.
inline absl::Status CheckPadding(const std::string& padding) {
  if (padding == "SAME" || padding == "VALID") return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("padding must be \"SAME\" or \"VALID\", got \"", padding, "\""));
}

// `in` may be -1 (unknown at build time): then out is -1 and the paddings are 0.
inline absl::Status WindowedOutputSize(int64_t in, int64_t window, int64_t stride,
                                       const std::string& padding, int64_t* out,
                                       int64_t* pad_before, int64_t* pad_after) {
  if (window < 1 || stride < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("window size and stride must be >= 1, got ", window, " and ", stride));
  }
  *pad_before = *pad_after = 0;
  if (in < 0) {
    *out = -1;
    return absl::OkStatus();
  }
  if (padding == "VALID") {
    if (in < window) {
      return absl::InvalidArgumentError(absl::StrCat("with VALID padding the window (", window,
                                                     ") must not be larger than the input (", in,
                                                     "); use SAME padding or a smaller window"));
    }
    *out = (in - window + stride) / stride;
    return absl::OkStatus();
  }
  *out = (in + stride - 1) / stride;
  // (out - 1) * stride < in, so subtracting in before adding the window cannot overflow,
  // however large the window (a ksize or dilated filter from an untrusted graph).
  const int64_t total = std::max<int64_t>((*out - 1) * stride - in + window, 0);
  *pad_before = total / 2;
  *pad_after = total - *pad_before;
  return absl::OkStatus();
}

}  // namespace shardflow

#endif  // SHARDFLOW_CORE_FRAMEWORK_WINDOWED_OUTPUT_H_
