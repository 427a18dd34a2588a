// Row-major fp32 GEMM for the CPU kernels: C = A·B (+ beta·C), through oneDNN's dnnl_sgemm or,
// for the shapes where it is measurably faster, OpenBLAS's cblas_sgemm.
//
// Why two libraries: on processors without AVX-512, oneDNN forces its "no-copy" GEMM kernels
// whenever one side of the product is small (a batch of 128 rows: 1/m + 1/n >= 0.0038), and
// those kernels slow down badly when a leading dimension is a multiple of 256 floats, as the
// weights of 512- and 1024-wide layers are. Measured on an AMD EPYC (AVX2, 2 threads,
// 2026-11-27; 64-byte-aligned buffers as our allocator gives):
//   NN 128x1024x3136  dnnl 78 GFLOP/s  OpenBLAS 133     NN 128x512x784  dnnl 109  OpenBLAS 137
//   TN 784x512x128    dnnl 78          OpenBLAS 124     TN 3136x1024x128 dnnl 170 OpenBLAS 114
//   NN 128x10x512     dnnl 83          OpenBLAS 30      NT 128x512x512  dnnl 153  OpenBLAS 132
// so OpenBLAS takes NN products with m <= 512 and TN ones with m <= 1024, k <= 256, both with
// n >= 256, on processors without AVX-512; everything else stays with oneDNN.
//
// OpenBLAS is Debian's OpenMP build (libopenblas0-openmp, the same OpenMP runtime as oneDNN),
// loaded at first use with dlopen; without it every product goes to oneDNN. One OpenBLAS call
// runs at a time (its OpenMP build shares buffers between callers): a product waits for a busy
// one rather than switching library, so the library, and the rounding, depend on the shape only
// (a step computes the same bits however its kernels are scheduled; regression test:
// distributed/multi_process_test's cost-policy towers, compared bit for bit with a local run).
// SHARDFLOW_SGEMM=onednn or openblas forces one library (tests and benchmarks), auto (the
// default) chooses by shape.
#ifndef SHARDFLOW_KERNELS_CPU_SGEMM_H_
#define SHARDFLOW_KERNELS_CPU_SGEMM_H_

#include <cstdint>

#include "absl/status/status.h"

namespace shardflow {

// C[m x n] = op(A)[m x k] · op(B)[k x n] + beta · C, row-major, op = transpose when ta / tb.
// The caller sets the OpenMP thread budget (SetOneDnnThreads) first.
absl::Status Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Which library Sgemm would use for this shape now ("onednn" or "openblas"), for tests.
const char* SgemmLibraryFor(bool ta, bool tb, int64_t m, int64_t n, int64_t k);

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_SGEMM_H_
