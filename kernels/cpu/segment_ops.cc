// CPU kernels of UnsortedSegmentSum, UnsortedSegmentMax, UnsortedSegmentMin and
// UnsortedSegmentProd (ops/segment_ops.cc): the output starts at the reduction's identity, then
// one pass over the rows of the data combines each into its segment's row. Half and bfloat16
// combine in float.
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/framework/types.h"
#include "core/platform/checked_math.h"

namespace shardflow {
namespace {

enum class SegmentReduction { kSum, kMax, kMin, kProd };

template <typename T, SegmentReduction R>
class UnsortedSegmentOp : public OpKernel {
 public:
  explicit UnsortedSegmentOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& data = ctx->input(0);
    const Tensor& ids = ctx->input(1);
    const Tensor& num = ctx->input(2);
    OP_REQUIRES(ctx, num.NumElements() == 1,
                absl::InvalidArgumentError(
                    absl::StrCat(type_string(), ": num_segments must be a scalar, got shape ",
                                 num.shape().DebugString())));
    const int64_t segments =
        num.dtype() == DT_INT32 ? num.data<int32_t>()[0] : num.data<int64_t>()[0];
    OP_REQUIRES(ctx, segments >= 0,
                absl::InvalidArgumentError(absl::StrCat(
                    type_string(), ": num_segments must not be negative, got ", segments)));
    OP_REQUIRES(ctx, ids.dims() <= data.dims(),
                absl::InvalidArgumentError(
                    absl::StrCat(type_string(), ": segment_ids ", ids.shape().DebugString(),
                                 " has more dimensions than data ", data.shape().DebugString())));
    for (int d = 0; d < ids.dims(); ++d) {
      OP_REQUIRES(ctx, ids.shape().dim(d) == data.shape().dim(d),
                  absl::InvalidArgumentError(absl::StrCat(
                      type_string(), ": segment_ids ", ids.shape().DebugString(),
                      " must be a prefix of data's shape ", data.shape().DebugString())));
    }
    TensorShape out_shape({segments});
    int64_t inner = 1;
    for (int d = ids.dims(); d < data.dims(); ++d) {
      out_shape.AddDim(data.shape().dim(d));
      inner *= data.shape().dim(d);
    }
    int64_t out_elements = 0;
    OP_REQUIRES(
        ctx, CheckedMul(segments, inner, &out_elements),
        absl::InvalidArgumentError(absl::StrCat(type_string(), ": num_segments ", segments,
                                                " times rows of ", inner, " elements overflows")));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    using C = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;
    T* y = out->data<T>();
    const T identity = Identity();
    for (int64_t i = 0; i < out_elements; ++i) y[i] = identity;
    const T* x = data.data<T>();
    const int64_t rows = ids.NumElements();
    for (int64_t j = 0; j < rows; ++j) {
      const int64_t id = ids.dtype() == DT_INT32 ? ids.data<int32_t>()[j] : ids.data<int64_t>()[j];
      OP_REQUIRES(ctx, id >= 0 && id < segments,
                  absl::InvalidArgumentError(absl::StrCat(type_string(), ": segment_ids[", j,
                                                          "] = ", id, " is not in [0, ", segments,
                                                          ") (num_segments)")));
      T* dst = y + id * inner;
      const T* src = x + j * inner;
      for (int64_t k = 0; k < inner; ++k) {
        const C a = static_cast<C>(dst[k]), b = static_cast<C>(src[k]);
        switch (R) {
          case SegmentReduction::kSum:
            dst[k] = static_cast<T>(a + b);
            break;
          case SegmentReduction::kMax:
            if (b > a) dst[k] = src[k];
            break;
          case SegmentReduction::kMin:
            if (b < a) dst[k] = src[k];
            break;
          case SegmentReduction::kProd:
            dst[k] = static_cast<T>(a * b);
            break;
        }
      }
    }
  }

 private:
  static T Identity() {
    switch (R) {
      case SegmentReduction::kSum:
        return static_cast<T>(0);
      case SegmentReduction::kMax:
        return std::numeric_limits<T>::lowest();
      case SegmentReduction::kMin:
        return std::numeric_limits<T>::max();
      case SegmentReduction::kProd:
        return static_cast<T>(1);
    }
    return static_cast<T>(0);
  }
};

#define SF_REGISTER_SEGMENT(NAME, R, T)                                                     \
  REGISTER_KERNEL(                                                                          \
      KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<T>("T").HostMemory("num_segments"), \
      UnsortedSegmentOp<T, SegmentReduction::R>)
#define SF_REGISTER_SEGMENTS(T)                       \
  SF_REGISTER_SEGMENT("UnsortedSegmentSum", kSum, T); \
  SF_REGISTER_SEGMENT("UnsortedSegmentMax", kMax, T); \
  SF_REGISTER_SEGMENT("UnsortedSegmentMin", kMin, T); \
  SF_REGISTER_SEGMENT("UnsortedSegmentProd", kProd, T)
SF_REGISTER_SEGMENTS(float);
SF_REGISTER_SEGMENTS(double);
SF_REGISTER_SEGMENTS(half);
SF_REGISTER_SEGMENTS(bfloat16);
SF_REGISTER_SEGMENTS(int32_t);
SF_REGISTER_SEGMENTS(int64_t);
#undef SF_REGISTER_SEGMENTS
#undef SF_REGISTER_SEGMENT

}  // namespace
}  // namespace shardflow
