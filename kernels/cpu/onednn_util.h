// Shared oneDNN plumbing for CPU kernels: one engine per process, and the OpenMP thread budget.
#ifndef SHARDFLOW_KERNELS_CPU_ONEDNN_UTIL_H_
#define SHARDFLOW_KERNELS_CPU_ONEDNN_UTIL_H_

#include "absl/status/statusor.h"
#include "core/framework/op_kernel.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace shardflow {

// The process-wide CPU engine. Thread-safe.
dnnl::engine& CpuEngine();

// Makes OpenMP (and so oneDNN) on the calling thread use the device's intra-op budget.
void SetOneDnnThreads(OpKernelContext* ctx);

// Whether oneDNN has bfloat16 matmul and convolution kernels on this processor: natively
// (AVX512-BF16, AMX) or emulated (AVX-512); not on older processors (AVX2), where a product
// marked kBf16ProductsAttr (which the mixed-precision pass does only where bfloat16 is native,
// or when SHARDFLOW_NATIVE_BF16=1 forces it) computes in plain fp32. Asked once.
bool OneDnnHasBf16();

// Note [bfloat16 copies]
// The fp32 tensor `t` rounded to bfloat16 (to nearest even), same shape, for a product marked
// kBf16ProductsAttr (core/framework/fused_ops.h); converted across the calling kernel's OpenMP
// threads (call SetOneDnnThreads first). A tensor whose buffer carries a content version
// (Tensor::content_version: the same version, the same bytes) keeps its copy in a small
// process-wide cache (at most 16 copies and 256 MiB, least recently used replaced; ResNet-50's
// largest activation gradient at batch 32 is a 51 MB copy), so a tensor
// several marked products read in one step - a dense layer's weight (its forward product and its
// input gradient), an activation (the forward product and the weight gradient), an incoming
// gradient (the input and the weight gradients) - is rounded once.
absl::StatusOr<Tensor> RoundedToBf16(const Tensor& t);

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_ONEDNN_UTIL_H_
