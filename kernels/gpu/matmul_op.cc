// MatMul and _FusedMatMul on a GPU through cuBLAS (cublasGemmEx): float32 (exact, or TF32 tensor
// cores when the session allows, gpu_options.allow_tf32), float64, bfloat16 and float16 (tensor
// cores, float32 accumulation). _FusedMatMul adds the bias and activation in one pass afterwards.
//
// Row-major C[m,n] = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS is called with the
// operands swapped and no copy.
#include <cuda_bf16.h>

#include "absl/strings/str_cat.h"
#include "core/framework/fused_ops.h"
#include "core/framework/kernel_registry.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/gpu_util.h"

namespace shardflow {
namespace {

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

GemmTypes TypesFor(DataType dtype, bool tf32) {
  switch (dtype) {
    case DT_DOUBLE:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
    case DT_BFLOAT16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    case DT_HALF:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    default:
      return {CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
  }
}

// Checks shapes, allocates the [m, n] output and enqueues the product. False after an error.
bool GpuMatMul(OpKernelContext* ctx, bool ta, bool tb, Tensor** out) {
  const Tensor& a = ctx->input(0);
  const Tensor& b = ctx->input(1);
  auto dims = MatMulShape(a, b, ta, tb);
  if (!dims.ok()) {
    ctx->SetStatus(dims.status());
    return false;
  }
  const int64_t m = dims->m, k = dims->k, n = dims->n;
  constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;  // cuBLAS takes int sizes
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim) {
    ctx->SetStatus(absl::UnimplementedError(absl::StrCat(
        "MatMul on a GPU takes dimensions below 2^31; got m=", m, ", n=", n, ", k=", k)));
    return false;
  }
  absl::Status s = ctx->allocate_output(0, TensorShape({m, n}), out);
  if (!s.ok()) {
    ctx->SetStatus(s);
    return false;
  }
  if (m == 0 || n == 0) return true;
  const bool tf32 = gpu::AllowTf32(ctx);
  const GemmTypes types = TypesFor(a.dtype(), tf32);
  if (k == 0) {
    // An empty sum: zeros.
    s = gpu::CudaStatus(
        cudaMemsetAsync((*out)->raw_data(), 0, (*out)->TotalBytes(), gpu::StreamOf(ctx)),
        "cudaMemsetAsync");
    if (!s.ok()) ctx->SetStatus(s);
    return s.ok();
  }
  auto handle = gpu::CublasHandle(gpu::StreamOf(ctx), tf32);
  if (!handle.ok()) {
    ctx->SetStatus(handle.status());
    return false;
  }
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const bool f64 = a.dtype() == DT_DOUBLE;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  // Leading dimensions are the row lengths of the row-major operands as stored.
  const int lda = static_cast<int>(a.dim_size(1)), ldb = static_cast<int>(b.dim_size(1));
  s = gpu::CublasStatus(
      cublasGemmEx(*handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                   static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), alpha,
                   b.raw_data(), types.data, ldb, a.raw_data(), types.data, lda, beta,
                   (*out)->raw_data(), types.data, static_cast<int>(n), types.compute,
                   CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx");
  if (!s.ok()) ctx->SetStatus(s);
  return s.ok();
}

void ReadTransposeAttrs(OpKernelConstruction* c, bool* ta, bool* tb) {
  absl::Status s = c->GetAttr("transpose_a", ta);
  if (s.ok()) s = c->GetAttr("transpose_b", tb);
  if (!s.ok()) c->SetStatus(s);
}

class GpuMatMulOp : public OpKernel {
 public:
  explicit GpuMatMulOp(OpKernelConstruction* c) : OpKernel(c) { ReadTransposeAttrs(c, &ta_, &tb_); }
  void Compute(OpKernelContext* ctx) override {
    Tensor* out;
    GpuMatMul(ctx, ta_, tb_, &out);
  }

 private:
  bool ta_ = false, tb_ = false;
};

int ActivationCode(const std::string& activation) {
  if (activation == "Relu") return 1;
  if (activation == "Tanh") return 2;
  if (activation == "Sigmoid") return 3;
  return 0;
}

class GpuFusedMatMulOp : public OpKernel {
 public:
  explicit GpuFusedMatMulOp(OpKernelConstruction* c) : OpKernel(c) {
    ReadTransposeAttrs(c, &ta_, &tb_);
    std::string activation;
    absl::Status s = c->GetAttr("activation", &activation);
    if (s.ok()) s = CheckFusedActivation(activation);
    if (!s.ok()) c->SetStatus(s);
    activation_ = ActivationCode(activation);
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& bias = ctx->input(2);
    const Tensor& b = ctx->input(1);
    const int64_t n = b.dims() == 2 ? b.dim_size(tb_ ? 0 : 1) : -1;
    OP_REQUIRES(ctx, bias.dims() == 1 && bias.dim_size(0) == n,
                absl::InvalidArgumentError(absl::StrCat("bias must be a vector of ", n,
                                                        " values (the output's columns), got ",
                                                        bias.shape().DebugString())));
    Tensor* out;
    if (!GpuMatMul(ctx, ta_, tb_, &out)) return;
    OP_REQUIRES_CUDA(
        ctx, gpu::LaunchBiasActivation(out->data<float>(), bias.data<float>(), out->NumElements(),
                                       n, activation_, gpu::StreamOf(ctx)));
  }

 private:
  bool ta_ = false, tb_ = false;
  int activation_ = 0;
};

REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceGpu).TypeConstraint<float>("T"), GpuMatMulOp);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceGpu).TypeConstraint<double>("T"), GpuMatMulOp);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceGpu).TypeConstraint<bfloat16>("T"), GpuMatMulOp);
REGISTER_KERNEL(KernelDef("MatMul").Device(kDeviceGpu).TypeConstraint<half>("T"), GpuMatMulOp);
REGISTER_KERNEL(KernelDef("_FusedMatMul").Device(kDeviceGpu).TypeConstraint<float>("T"),
                GpuFusedMatMulOp);

}  // namespace
}  // namespace shardflow
