#include "kernels/cpu/onednn_util.h"

#include <omp.h>

namespace shardflow {

dnnl::engine& CpuEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

void SetOneDnnThreads(OpKernelContext* ctx) {
  int want = ctx->device()->intra_op_threads();
  if (omp_get_max_threads() != want) omp_set_num_threads(want);
}

}  // namespace shardflow
