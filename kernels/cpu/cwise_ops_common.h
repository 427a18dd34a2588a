// Helpers shared by the CPU element-wise, AddN and reduction kernels: the compute type of a
// storage type, vectorised half/bfloat16 <-> float conversion, a vectorisation hint for plain
// loops, intra-op sharding, and the plan that maps a NumPy broadcast onto contiguous runs of the
// output.
//
//   BroadcastPlan plan;
//   OP_REQUIRES_OK(ctx, plan.Init(x.shape(), y.shape()));
//   RunSharded(ctx, plan.num_elements(), /*cost_per_element_ns=*/1, [&](int64_t b, int64_t e) {
//     plan.ForEachRun(b, e, [&](int64_t x_off, int64_t y_off, int64_t z_off, int64_t n) {...});
//   });
//
// Thread safety: a BroadcastPlan is immutable after Init(); ForEachRun may run concurrently.
#ifndef SHARDFLOW_KERNELS_CPU_CWISE_OPS_COMMON_H_
#define SHARDFLOW_KERNELS_CPU_CWISE_OPS_COMMON_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/framework/op_kernel.h"
#include "core/framework/shape_inference.h"
#include "core/framework/tensor_shape.h"
#include "core/framework/types.h"
#include "core/platform/status.h"
#include "core/platform/threadpool.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define SF_HAVE_F16C_AVX2 1
#else
#define SF_HAVE_F16C_AVX2 0
#endif

// Asks the compiler to vectorise the next loop (its iterations must be independent). The engine
// is built with -O2, whose cost model rarely vectorises on its own; `omp simd` overrides it.
#if defined(_OPENMP)
#define SF_SIMD_LOOP _Pragma("omp simd")
#else
#define SF_SIMD_LOOP _Pragma("GCC ivdep")
#endif

namespace shardflow {
namespace cwise {

// The type arithmetic runs in: float for the 16-bit floating types, else the type itself.
template <typename T>
struct ComputeTypeOf {
  using type = T;
};
template <>
struct ComputeTypeOf<half> {
  using type = float;
};
template <>
struct ComputeTypeOf<bfloat16> {
  using type = float;
};
template <typename T>
using ComputeType = typename ComputeTypeOf<T>::type;

// True for the 16-bit floating types, which kernels widen to float in blocks of this many.
template <typename T>
inline constexpr bool kIsNarrowFloat = !std::is_same_v<ComputeType<T>, T>;
inline constexpr int64_t kNarrowBlock = 512;

// out[0..n) = in[0..n) widened to float (exact). Vectorised with F16C/AVX2 when the build
// enables them (Eigen 3.4's cast<float>() of these types is scalar).
inline void WidenToFloat(const half* in, int64_t n, float* out) {
  int64_t i = 0;
#if SF_HAVE_F16C_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

inline void WidenToFloat(const bfloat16* in, int64_t n, float* out) {
  int64_t i = 0;
#if SF_HAVE_F16C_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(w));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

// out[0..n) = in[0..n) rounded to the nearest even half / bfloat16, as static_cast does; NaN
// stays NaN.
inline void NarrowFromFloat(const float* in, int64_t n, half* out) {
  int64_t i = 0;
#if SF_HAVE_F16C_AVX2
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<half>(in[i]);
}

inline void NarrowFromFloat(const float* in, int64_t n, bfloat16* out) {
  int64_t i = 0;
#if SF_HAVE_F16C_AVX2
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i sign = _mm256_set1_epi32(0x8000), quiet_nan = _mm256_set1_epi32(0x7fc0);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i high = _mm256_srli_epi32(bits, 16);
    // Round to nearest even: add 0x7fff plus the lowest kept bit, then drop the low half.
    const __m256i lsb = _mm256_and_si256(high, one);
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(bias, lsb)), 16);
    const __m256i nan = _mm256_or_si256(_mm256_and_si256(high, sign), quiet_nan);
    r = _mm256_blendv_epi8(r, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    // Pack the eight 32-bit results (each < 2^16) into 16 bits, in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_castsi256_si128(packed));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<bfloat16>(in[i]);
}

// NaN test that compiles to nothing for integers and bool.
template <typename C>
inline bool IsNan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return v != v;
  } else {
    return false;
  }
}

// -v with two's-complement wrap-around for signed integers (no undefined behaviour on the
// minimum value).
template <typename C>
inline C WrappingNeg(C v) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(0) - static_cast<U>(v));
  } else {
    return -v;
  }
}

// Runs fn over [0, n) in disjoint ranges on the kernel's intra-op threads, or serially when the
// device has none. `cost_per_element_ns` decides how many shards are worth it (one per ~20 µs of
// work, at most the device's intra-op threads). Note [Element-wise work on OpenMP threads].
void RunSharded(OpKernelContext* ctx, int64_t n, int64_t cost_per_element_ns,
                const std::function<void(int64_t, int64_t)>& fn);

// How the last dimension of a broadcast reads its two operands.
enum class RunKind {
  kVectorVector,  // z[i] = f(x[i], y[i])
  kScalarVector,  // z[i] = f(x[0], y[i])
  kVectorScalar,  // z[i] = f(x[i], y[0])
};

// The broadcast of two shapes, with adjacent dimensions that broadcast alike merged and
// dimensions of size 1 dropped: [2,1,3] + [4,1] becomes dims [2,4,3] with x strides [3,0,1] and
// y strides [0,1,0]. The output is contiguous in row-major order.
class BroadcastPlan {
 public:
  // Fails with InvalidArgument when the shapes do not broadcast.
  absl::Status Init(const TensorShape& x, const TensorShape& y) {
    absl::StatusOr<TensorShape> out = BroadcastShapes(x, y);
    if (!out.ok()) return out.status();
    out_shape_ = *std::move(out);
    num_elements_ = out_shape_.num_elements();
    const int rank = out_shape_.rank();
    // Dimension flags, outermost first: does x (y) repeat along this dimension?
    absl::InlinedVector<bool, 6> x_rep, y_rep;
    dims_.clear();
    for (int i = 0; i < rank; ++i) {
      const int ix = x.rank() - rank + i, iy = y.rank() - rank + i;
      const int64_t dx = ix >= 0 ? x.dim(ix) : 1;
      const int64_t dy = iy >= 0 ? y.dim(iy) : 1;
      const int64_t d = out_shape_.dim(i);
      if (d == 1) continue;
      const bool rx = dx == 1, ry = dy == 1;
      if (!dims_.empty() && x_rep.back() == rx && y_rep.back() == ry) {
        dims_.back() *= d;
      } else {
        dims_.push_back(d);
        x_rep.push_back(rx);
        y_rep.push_back(ry);
      }
    }
    const int n = static_cast<int>(dims_.size());
    x_strides_.assign(n, 0);
    y_strides_.assign(n, 0);
    int64_t sx = 1, sy = 1;
    for (int i = n - 1; i >= 0; --i) {
      if (!x_rep[i]) {
        x_strides_[i] = sx;
        sx *= dims_[i];
      }
      if (!y_rep[i]) {
        y_strides_[i] = sy;
        sy *= dims_[i];
      }
    }
    if (n == 0 || (!x_rep.back() && !y_rep.back())) {
      last_kind_ = RunKind::kVectorVector;
    } else if (x_rep.back()) {
      last_kind_ = RunKind::kScalarVector;
    } else {
      last_kind_ = RunKind::kVectorScalar;
    }
    return absl::OkStatus();
  }

  const TensorShape& out_shape() const { return out_shape_; }
  int64_t num_elements() const { return num_elements_; }
  // Rank after merging; 0 or 1 means the whole output is one run of last_kind().
  int collapsed_rank() const { return static_cast<int>(dims_.size()); }
  RunKind last_kind() const { return last_kind_; }

  // Calls fn(x_offset, y_offset, z_offset, length) for the runs that cover output elements
  // [begin, end), in order. Each run lies within one row of the last merged dimension and reads
  // its operands as last_kind() says.
  void ForEachRun(int64_t begin, int64_t end,
                  absl::FunctionRef<void(int64_t, int64_t, int64_t, int64_t)> fn) const {
    if (begin >= end) return;
    const int n = static_cast<int>(dims_.size());
    if (n <= 1) {
      const int64_t sx = n == 0 ? 0 : x_strides_[0], sy = n == 0 ? 0 : y_strides_[0];
      fn(begin * sx, begin * sy, begin, end - begin);
      return;
    }
    absl::InlinedVector<int64_t, 6> idx(n);
    int64_t rem = begin, ox = 0, oy = 0;
    for (int i = n - 1; i >= 0; --i) {
      idx[i] = rem % dims_[i];
      rem /= dims_[i];
      ox += idx[i] * x_strides_[i];
      oy += idx[i] * y_strides_[i];
    }
    const int64_t row = dims_[n - 1];
    int64_t pos = begin;
    while (pos < end) {
      const int64_t len = std::min(row - idx[n - 1], end - pos);
      fn(ox, oy, pos, len);
      pos += len;
      if (pos >= end) break;
      // Move to the start of the next row.
      ox -= idx[n - 1] * x_strides_[n - 1];
      oy -= idx[n - 1] * y_strides_[n - 1];
      idx[n - 1] = 0;
      for (int i = n - 2; i >= 0; --i) {
        ++idx[i];
        ox += x_strides_[i];
        oy += y_strides_[i];
        if (idx[i] < dims_[i]) break;
        ox -= idx[i] * x_strides_[i];
        oy -= idx[i] * y_strides_[i];
        idx[i] = 0;
      }
    }
  }

 private:
  TensorShape out_shape_;
  int64_t num_elements_ = 0;
  absl::InlinedVector<int64_t, 6> dims_;
  absl::InlinedVector<int64_t, 6> x_strides_;
  absl::InlinedVector<int64_t, 6> y_strides_;
  RunKind last_kind_ = RunKind::kVectorVector;
};

}  // namespace cwise
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_CWISE_OPS_COMMON_H_
