// A plain-loop GEMM for the types no tuned library covers here: double (BatchMatMulV2) and the
// integers (MatMul and BatchMatMulV2 of int32 / int64, exact, as TensorFlow's CPU kernels are:
// a float64 detour is wrong above 2^53). Integer products and sums wrap modulo 2^bits, computed
// in the unsigned type so that an overflow is defined behaviour rather than undefined.
#ifndef SHARDFLOW_KERNELS_CPU_GEMM_LOOP_H_
#define SHARDFLOW_KERNELS_CPU_GEMM_LOOP_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace shardflow {

// The type the loop computes in: the unsigned counterpart of an integer type, else T.
template <typename T, bool = std::is_integral_v<T>>
struct GemmLoopCompute {
  using type = T;
};
template <typename T>
struct GemmLoopCompute<T, true> {
  using type = std::make_unsigned_t<T>;
};

// out[m x n] = op(a)[m x k] op(b)[k x n], row-major; lda / ldb are the stored row lengths and
// ta / tb transpose a / b.
template <typename T>
void GemmLoop(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
              const T* b, int64_t ldb, T* out) {
  using C = typename GemmLoopCompute<T>::type;
  C* o = reinterpret_cast<C*>(out);
  std::fill(o, o + m * n, C(0));
  for (int64_t i = 0; i < m; ++i) {
    C* row = o + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const C av = static_cast<C>(ta ? a[p * lda + i] : a[i * lda + p]);
      if (tb) {
        for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<C>(b[j * ldb + p]);
      } else {
        const T* brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) row[j] += av * static_cast<C>(brow[j]);
      }
    }
  }
}

}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_GEMM_LOOP_H_
