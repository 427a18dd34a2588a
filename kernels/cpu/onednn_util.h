// Shared oneDNN plumbing for CPU kernels: one engine per process, and the OpenMP thread budget.
#ifndef SHARDFLOW_KERNELS_CPU_ONEDNN_UTIL_H_
#define SHARDFLOW_KERNELS_CPU_ONEDNN_UTIL_H_

#include "core/framework/op_kernel.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace shardflow {

// The process-wide CPU engine. Thread-safe.
dnnl::engine& CpuEngine();

// Makes OpenMP (and so oneDNN) on the calling thread use the device's intra-op budget.
void SetOneDnnThreads(OpKernelContext* ctx);

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_ONEDNN_UTIL_H_
