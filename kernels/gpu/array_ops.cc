// GPU kernels for Cast, Fill, ZerosLike and OnesLike. Checks mirror the CPU kernels
// (kernels/cpu/array_ops.cc); the CUDA work is in array_ops.cu.
//
// Registered for float, int32, int64, bool, half and bfloat16: Cast for every (SrcT, DstT) pair
// of them, Fill, ZerosLike and OnesLike for each. Fill's `dims` is a host-memory input; its
// `value` stays in device memory and the kernel reads it there.
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "kernels/gpu/array_ops.cu.h"
#include "kernels/gpu/gpu_util.h"

namespace shardflow {
namespace {

static_assert(gpu::kDtFloat == DT_FLOAT && gpu::kDtInt32 == DT_INT32 && gpu::kDtInt64 == DT_INT64 &&
                  gpu::kDtBool == DT_BOOL && gpu::kDtBfloat16 == DT_BFLOAT16 &&
                  gpu::kDtHalf == DT_HALF,
              "array_ops.cu.h's DataType numbers must match core/protos/types.proto");

// Reads an int32 or int64 tensor in host memory as int64 values.
std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v[i] = t.dtype() == DT_INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
  }
  return v;
}

class CastOp : public OpKernel {
 public:
  explicit CastOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    const DataType to = output_type(0);
    if (in.dtype() == to) {
      // Tensors are immutable: the same buffer serves as the output.
      ctx->set_output(0, in);
      return;
    }
    OP_REQUIRES(ctx, gpu::CastSupported(in.dtype()) && gpu::CastSupported(to),
                absl::UnimplementedError(absl::StrCat("cannot cast ", DataTypeString(in.dtype()),
                                                      " to ", DataTypeString(to), " on the GPU")));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    OP_REQUIRES_CUDA(ctx, gpu::LaunchCast(in.raw_data(), in.dtype(), out->raw_data(), to,
                                          in.NumElements(), gpu::StreamOf(ctx)));
  }
};

class FillOp : public OpKernel {
 public:
  explicit FillOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dims_t = ctx->input(0);  // host memory
    const Tensor& value = ctx->input(1);   // device memory
    OP_REQUIRES(ctx, dims_t.dims() == 1, absl::InvalidArgumentError("dims must be a vector"));
    OP_REQUIRES(ctx, value.dims() == 0,
                absl::InvalidArgumentError(absl::StrCat("value must be a scalar, got shape ",
                                                        value.shape().DebugString())));
    std::vector<int64_t> dims = ReadInts(dims_t);
    for (int64_t d : dims) {
      OP_REQUIRES(ctx, d >= 0,
                  absl::InvalidArgumentError(absl::StrCat("dims has negative entry ", d)));
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape(absl::MakeConstSpan(dims)), &out));
    OP_REQUIRES_CUDA(ctx, gpu::LaunchFillFromDevice(value.raw_data(), out->raw_data(),
                                                    DataTypeSize(value.dtype()), out->NumElements(),
                                                    gpu::StreamOf(ctx)));
  }
};

// ZerosLike (kOne false) and OnesLike (kOne true) for element type T.
template <typename T, bool kOne>
class ConstantLikeOp : public OpKernel {
 public:
  explicit ConstantLikeOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    const int64_t n = out->NumElements();
    if (n == 0) return;
    cudaStream_t stream = gpu::StreamOf(ctx);
    if (!kOne) {
      // Zero is the all-zero bit pattern in every one of these types.
      OP_REQUIRES_CUDA(ctx, cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), stream));
      return;
    }
    const T one = static_cast<T>(1);
    uint64_t bits = 0;
    std::memcpy(&bits, &one, sizeof(T));
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchFillBits(out->raw_data(), static_cast<int>(sizeof(T)), bits, n, stream));
  }
};

#define SF_GPU_CAST(SRC, DST)                       \
  REGISTER_KERNEL(KernelDef("Cast")                 \
                      .Device(kDeviceGpu)           \
                      .TypeConstraint<SRC>("SrcT")  \
                      .TypeConstraint<DST>("DstT"), \
                  CastOp)
#define SF_GPU_CAST_FROM(SRC) \
  SF_GPU_CAST(SRC, float);    \
  SF_GPU_CAST(SRC, int32_t);  \
  SF_GPU_CAST(SRC, int64_t);  \
  SF_GPU_CAST(SRC, bool);     \
  SF_GPU_CAST(SRC, half);     \
  SF_GPU_CAST(SRC, bfloat16)

#define SF_GPU_ARRAY(T) \
  SF_GPU_CAST_FROM(T);  \
  SF_GPU_FILL(T)

// Fill of int32 is shape arithmetic: on the CPU (kernels/gpu/cwise_ops.cc says why).
#define SF_GPU_FILL(T)                                                                            \
  REGISTER_KERNEL(KernelDef("Fill").Device(kDeviceGpu).TypeConstraint<T>("T").HostMemory("dims"), \
                  FillOp);                                                                        \
  REGISTER_KERNEL(KernelDef("ZerosLike").Device(kDeviceGpu).TypeConstraint<T>("T"),               \
                  ConstantLikeOp<T, false>);                                                      \
  REGISTER_KERNEL(KernelDef("OnesLike").Device(kDeviceGpu).TypeConstraint<T>("T"),                \
                  ConstantLikeOp<T, true>)

SF_GPU_ARRAY(float);
SF_GPU_CAST_FROM(int32_t);
SF_GPU_ARRAY(int64_t);
SF_GPU_ARRAY(bool);
SF_GPU_ARRAY(half);
SF_GPU_ARRAY(bfloat16);

#undef SF_GPU_ARRAY
#undef SF_GPU_FILL
#undef SF_GPU_CAST_FROM
#undef SF_GPU_CAST

}  // namespace
}  // namespace shardflow
