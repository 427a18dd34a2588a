// CPU kernel for AddN: the element-wise sum of N tensors of one shape.
//
// Registered for T in {float, double, int32, int64, half, bfloat16, int8, uint8} (narrow
// integer sums wrap in their type, as TensorFlow's).
//
// The sum runs in blocks that stay in L1: each block adds all N inputs before moving on, so the
// output is written once. Half and bfloat16 accumulate in float.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "kernels/cpu/cwise_ops_common.h"

namespace shardflow {
namespace {

template <typename T>
class AddNOp : public OpKernel {
 public:
  using Acc = cwise::ComputeType<T>;

  explicit AddNOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    const TensorShape shape = ctx->input(0).shape();
    for (int i = 1; i < n; ++i) {
      OP_REQUIRES(ctx, ctx->input(i).shape() == shape,
                  absl::InvalidArgumentError(absl::StrCat(
                      "AddN needs inputs of one shape: input 0 is ", shape.DebugString(),
                      " but input ", i, " is ", ctx->input(i).shape().DebugString())));
    }
    if (n == 1) {
      ctx->set_output(0, ctx->input(0));
      return;
    }
    // Forwarding clears the input in the context, so take the data pointers first.
    std::vector<const T*> inputs(n);
    for (int i = 0; i < n; ++i) inputs[i] = ctx->input(i).data<T>();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, shape, &out));
    T* z = out->data<T>();
    cwise::RunSharded(ctx, out->NumElements(), n, [&](int64_t b, int64_t e) {
      constexpr int64_t kBlock = 1024;
      Acc acc[kBlock];
      for (int64_t s = b; s < e; s += kBlock) {
        const int64_t m = std::min(kBlock, e - s);
        if constexpr (cwise::kIsNarrowFloat<T>) {
          float widened[kBlock];
          cwise::WidenToFloat(inputs[0] + s, m, acc);
          for (int i = 1; i < n; ++i) {
            cwise::WidenToFloat(inputs[i] + s, m, widened);
            SF_SIMD_LOOP
            for (int64_t j = 0; j < m; ++j) acc[j] += widened[j];
          }
          cwise::NarrowFromFloat(acc, m, z + s);
        } else {
          std::copy(inputs[0] + s, inputs[0] + s + m, acc);
          for (int i = 1; i < n; ++i) {
            const T* x = inputs[i] + s;
            SF_SIMD_LOOP
            for (int64_t j = 0; j < m; ++j) acc[j] += x[j];
          }
          std::copy(acc, acc + m, z + s);
        }
      }
    });
  }
};

#define SF_REGISTER_ADDN(T) \
  REGISTER_KERNEL(KernelDef("AddN").Device(kDeviceCpu).TypeConstraint<T>("T"), AddNOp<T>)

SF_REGISTER_ADDN(float);
SF_REGISTER_ADDN(double);
SF_REGISTER_ADDN(int32_t);
SF_REGISTER_ADDN(int64_t);
SF_REGISTER_ADDN(half);
SF_REGISTER_ADDN(bfloat16);
SF_REGISTER_ADDN(int8_t);
SF_REGISTER_ADDN(uint8_t);

}  // namespace
}  // namespace shardflow
