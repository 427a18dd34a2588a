#include "kernels/cpu/sgemm.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/dnnl/dnnl.h"

namespace shardflow {
namespace {

// cblas_sgemm's signature and the CBLAS enum values it takes (cblas.h).
using CblasSgemmFn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                              const float* a, int lda, const float* b, int ldb, float beta,
                              float* c, int ldc);
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;

CblasSgemmFn LoadOpenBlas() {
  static const CblasSgemmFn fn = [] {
    for (const char* path :
         {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", "libopenblasp.so.0"}) {
      void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr) continue;
      if (void* sym = dlsym(lib, "cblas_sgemm")) return reinterpret_cast<CblasSgemmFn>(sym);
    }
    return CblasSgemmFn{nullptr};
  }();
  return fn;
}

enum class Choice { kAuto, kOneDnn, kOpenBlas };

// SHARDFLOW_SGEMM, read at each call (cheap; tests change it).
Choice Forced() {
  const char* v = std::getenv("SHARDFLOW_SGEMM");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return Choice::kAuto;
  if (std::strcmp(v, "onednn") == 0) return Choice::kOneDnn;
  if (std::strcmp(v, "openblas") == 0) return Choice::kOpenBlas;
  return Choice::kAuto;
}

bool ShapeFavoursOpenBlas(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 || n < 256 || tb) return false;
  return ta ? (m <= 1024 && k <= 256) : m <= 512;
}

bool UseOpenBlas(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  // cblas takes int dimensions.
  constexpr int64_t kIntMax = 0x7fffffff;
  if (m > kIntMax || n > kIntMax || k > kIntMax || LoadOpenBlas() == nullptr) return false;
  switch (Forced()) {
    case Choice::kOneDnn:
      return false;
    case Choice::kOpenBlas:
      return true;
    case Choice::kAuto:
      return ShapeFavoursOpenBlas(ta, tb, m, n, k);
  }
  return false;
}

absl::Mutex openblas_mu;

}  // namespace

const char* SgemmLibraryFor(bool ta, bool tb, int64_t m, int64_t n, int64_t k) {
  return UseOpenBlas(ta, tb, m, n, k) ? "openblas" : "onednn";
}

absl::Status Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (UseOpenBlas(ta, tb, m, n, k)) {
    absl::MutexLock lock(&openblas_mu);
    LoadOpenBlas()(kCblasRowMajor, ta ? kCblasTrans : kCblasNoTrans,
                   tb ? kCblasTrans : kCblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                   static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb),
                   beta, c, static_cast<int>(ldc));
    return absl::OkStatus();
  }
  dnnl_status_t st =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success) {
    return absl::InternalError(absl::StrCat("dnnl_sgemm failed with status ", st));
  }
  return absl::OkStatus();
}

}  // namespace shardflow
