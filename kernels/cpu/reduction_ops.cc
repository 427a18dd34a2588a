// CPU kernels for the reductions Sum, Mean, Max, Min and Prod over an `axis` input, and ArgMax.
//
// Registered for T in {float, double, int32, int64, half, bfloat16, int8, uint8}, any Tidx and
// (ArgMax) any output_type. Sums and products of the narrow integers wrap in their own type, as
// TensorFlow's (tf.reduce_max of a uint8 image is the common use; cast to int32 to sum one).
//
// A reduction views the input, with adjacent dimensions merged, as [outer, reduced, inner] and
// reduces the middle one; several separate reduced groups (axes {0, 2} of a rank-3 input) take
// one pass each, the intermediates kept in the accumulation type. Half and bfloat16 accumulate
// in float; other types in themselves. Mean of an integer type divides the sum with truncation.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "kernels/cpu/cwise_ops_common.h"
#include "kernels/cpu/kernel_checks.h"

namespace shardflow {
namespace {

using cwise::ComputeType;

// Reducers: Identity() is the value of an empty reduction (as TensorFlow: 0 for Sum, 1 for Prod,
// -inf or the lowest value for Max, +inf or the highest for Min), Combine() is associative.
struct SumReducer {
  static constexpr bool kIsMean = false;
  template <typename A>
  static A Identity() {
    return A(0);
  }
  template <typename A>
  static A Combine(A a, A b) {
    return a + b;
  }
};
struct MeanReducer : SumReducer {
  static constexpr bool kIsMean = true;
};
struct ProdReducer {
  static constexpr bool kIsMean = false;
  template <typename A>
  static A Identity() {
    return A(1);
  }
  template <typename A>
  static A Combine(A a, A b) {
    return a * b;
  }
};
// Max and Min propagate NaN.
struct MaxReducer {
  static constexpr bool kIsMean = false;
  template <typename A>
  static A Identity() {
    if constexpr (std::numeric_limits<A>::has_infinity) {
      return -std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::lowest();
    }
  }
  template <typename A>
  static A Combine(A a, A b) {
    return (a > b || cwise::IsNan(a)) ? a : b;
  }
};
struct MinReducer {
  static constexpr bool kIsMean = false;
  template <typename A>
  static A Identity() {
    if constexpr (std::numeric_limits<A>::has_infinity) {
      return std::numeric_limits<A>::infinity();
    } else {
      return std::numeric_limits<A>::max();
    }
  }
  template <typename A>
  static A Combine(A a, A b) {
    return (a < b || cwise::IsNan(a)) ? a : b;
  }
};

// Reduces x[0..n) (contiguous) in independent lanes so that the loop vectorises. Half and
// bfloat16 are widened to float a block at a time.
template <typename In, typename Acc, typename R>
Acc ReduceContiguous(const In* x, int64_t n) {
  if constexpr (cwise::kIsNarrowFloat<In>) {
    float buf[cwise::kNarrowBlock];
    Acc acc = R::template Identity<Acc>();
    for (int64_t s = 0; s < n; s += cwise::kNarrowBlock) {
      const int64_t m = std::min(cwise::kNarrowBlock, n - s);
      cwise::WidenToFloat(x + s, m, buf);
      acc = R::Combine(acc, ReduceContiguous<float, Acc, R>(buf, m));
    }
    return acc;
  } else {
    constexpr int kLanes = 16;
    Acc lanes[kLanes];
    for (int k = 0; k < kLanes; ++k) lanes[k] = R::template Identity<Acc>();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      SF_SIMD_LOOP
      for (int k = 0; k < kLanes; ++k) {
        lanes[k] = R::Combine(lanes[k], static_cast<Acc>(x[i + k]));
      }
    }
    for (int k = 0; i < n; ++i, ++k) lanes[k] = R::Combine(lanes[k], static_cast<Acc>(x[i]));
    Acc acc = lanes[0];
    for (int k = 1; k < kLanes; ++k) acc = R::Combine(acc, lanes[k]);
    return acc;
  }
}

// row[0..m) as Acc: `row` itself, or (for half and bfloat16) widened into `buf`.
template <typename In, typename Acc>
const Acc* RowAsAcc(const In* row, int64_t m, Acc* buf) {
  if constexpr (std::is_same_v<In, Acc>) {
    return row;
  } else {
    static_assert(std::is_same_v<Acc, float>, "only 16-bit floats are widened");
    cwise::WidenToFloat(row, m, buf);
    return buf;
  }
}

// out[j - j0] = reduction over r in [r0, r1) of x[r * inner + j], for j in [j0, j1).
// `x` points at the first reduced row of one outer index; r1 > r0.
template <typename In, typename Acc, typename R>
void ReduceRows(const In* x, int64_t r0, int64_t r1, int64_t inner, int64_t j0, int64_t j1,
                Acc* out) {
  if (inner == 1) {
    out[0] = ReduceContiguous<In, Acc, R>(x + r0, r1 - r0);
    return;
  }
  constexpr int64_t kBlock = 256;  // accumulators stay in L1
  Acc acc[kBlock], widened[std::is_same_v<In, Acc> ? 1 : kBlock];
  for (int64_t jb = j0; jb < j1; jb += kBlock) {
    const int64_t m = std::min(kBlock, j1 - jb);
    const In* row = x + r0 * inner + jb;
    const Acc* first = RowAsAcc<In, Acc>(row, m, widened);
    std::copy(first, first + m, acc);
    for (int64_t r = r0 + 1; r < r1; ++r) {
      row += inner;
      const Acc* v = RowAsAcc<In, Acc>(row, m, widened);
      SF_SIMD_LOOP
      for (int64_t j = 0; j < m; ++j) acc[j] = R::Combine(acc[j], v[j]);
    }
    std::copy(acc, acc + m, out + (jb - j0));
  }
}

// out[o, j] = reduction over r of in[o, r, j]: one pass over an [outer, reduced, inner] view.
// reduced >= 1.
template <typename In, typename Acc, typename R>
void ReducePass(OpKernelContext* ctx, const In* in, int64_t outer, int64_t reduced, int64_t inner,
                Acc* out, int64_t cost_ns) {
  const int64_t outputs = outer * inner;
  constexpr int64_t kMinSplit = 16384;  // reduced rows per block when splitting a long reduction
  if (outputs < 64 && reduced >= 2 * kMinSplit) {
    // Few, long reductions: split the reduced dimension into blocks, then combine the partial
    // results in block order (deterministic for any number of threads).
    const int64_t blocks = std::min<int64_t>(64, reduced / kMinSplit);
    const int64_t per_block = (reduced + blocks - 1) / blocks;
    std::vector<Acc> partial(blocks * outputs);
    cwise::RunSharded(ctx, blocks, per_block * outputs * cost_ns, [&](int64_t b, int64_t e) {
      for (int64_t blk = b; blk < e; ++blk) {
        const int64_t r0 = blk * per_block, r1 = std::min(reduced, r0 + per_block);
        for (int64_t o = 0; o < outer; ++o) {
          Acc* dst = partial.data() + blk * outputs + o * inner;
          if (r0 >= r1) {
            std::fill(dst, dst + inner, R::template Identity<Acc>());
          } else {
            ReduceRows<In, Acc, R>(in + o * reduced * inner, r0, r1, inner, 0, inner, dst);
          }
        }
      }
    });
    for (int64_t i = 0; i < outputs; ++i) {
      Acc acc = partial[i];
      for (int64_t blk = 1; blk < blocks; ++blk) acc = R::Combine(acc, partial[blk * outputs + i]);
      out[i] = acc;
    }
    return;
  }
  cwise::RunSharded(ctx, outputs, reduced * cost_ns, [&](int64_t b, int64_t e) {
    while (b < e) {
      const int64_t o = b / inner, j0 = b % inner, j1 = std::min(inner, j0 + (e - b));
      ReduceRows<In, Acc, R>(in + o * reduced * inner, 0, reduced, inner, j0, j1, out + b);
      b += j1 - j0;
    }
  });
}

template <typename T, typename R>
class ReductionOp : public OpKernel {
 public:
  using Acc = ComputeType<T>;

  explicit ReductionOp(OpKernelConstruction* c) : OpKernel(c) {
    c->SetStatus(c->GetAttr("keep_dims", &keep_dims_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    auto plan = PlanReduction(in.shape(), ctx->input(1), keep_dims_);
    OP_REQUIRES_OK(ctx, plan.status());
    const TensorShape& out_shape = plan->out_shape;
    const int64_t reduced_count = plan->reduced_count;
    const int64_t out_count = out_shape.num_elements();
    if (reduced_count == 1) {
      // Nothing to combine: the output is the input, reshaped.
      auto same = in.Reshaped(out_shape);
      OP_REQUIRES_OK(ctx, same.status());
      ctx->set_output(0, *std::move(same));
      return;
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out_count == 0) return;
    T* out_data = out->data<T>();
    if (reduced_count == 0) {
      Acc empty = R::template Identity<Acc>();
      if constexpr (R::kIsMean) {
        OP_REQUIRES(ctx, !std::is_integral_v<Acc>, EmptyIntegerMeanError(in.shape()));
        empty = std::numeric_limits<Acc>::quiet_NaN();
      }
      std::fill(out_data, out_data + out_count, static_cast<T>(empty));
      return;
    }
    OP_REQUIRES_OK(ctx,
                   Reduce(ctx, in.data<T>(), std::move(plan->groups), reduced_count, out_data));
  }

 private:
  // Reduces every reduced group, one pass each, the last (innermost) first, and writes the
  // result to `out` (Mean divided by `reduced_count` before narrowing to T).
  absl::Status Reduce(OpKernelContext* ctx, const T* in,
                      std::vector<std::pair<int64_t, bool>> groups, int64_t reduced_count, T* out) {
    constexpr int64_t kCostNs = 1;
    Tensor src_hold, dst_hold;
    const Acc* src = nullptr;  // null: read `in` (the first pass)
    while (true) {
      int k = static_cast<int>(groups.size()) - 1;
      while (k >= 0 && !groups[k].second) --k;
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < k; ++i) outer *= groups[i].first;
      for (size_t i = k + 1; i < groups.size(); ++i) inner *= groups[i].first;
      const int64_t reduced = groups[k].first;
      groups.erase(groups.begin() + k);
      // The kept groups on either side of the removed one are now adjacent.
      if (k > 0 && k < static_cast<int>(groups.size()) && !groups[k - 1].second &&
          !groups[k].second) {
        groups[k - 1].first *= groups[k].first;
        groups.erase(groups.begin() + k);
      }
      bool last = true;
      for (const auto& g : groups) last = last && !g.second;
      const int64_t n = outer * inner;
      Acc* dst;
      if (last && std::is_same_v<T, Acc>) {
        dst = reinterpret_cast<Acc*>(out);
      } else {
        SF_RETURN_IF_ERROR(
            ctx->allocate_temp(DataTypeToEnum<Acc>::value, TensorShape({n}), &dst_hold));
        dst = dst_hold.data<Acc>();
      }
      if (src == nullptr) {
        ReducePass<T, Acc, R>(ctx, in, outer, reduced, inner, dst, kCostNs);
      } else {
        ReducePass<Acc, Acc, R>(ctx, src, outer, reduced, inner, dst, kCostNs);
      }
      if (last) {
        if constexpr (R::kIsMean) {
          const Acc count = static_cast<Acc>(reduced_count);
          SF_SIMD_LOOP
          for (int64_t i = 0; i < n; ++i) dst[i] = dst[i] / count;
        }
        if constexpr (!std::is_same_v<T, Acc>) cwise::NarrowFromFloat(dst, n, out);
        return absl::OkStatus();
      }
      src_hold = std::move(dst_hold);
      dst_hold = Tensor();
      src = src_hold.data<Acc>();
    }
  }

  bool keep_dims_ = false;
};

// Index of the largest value along one dimension; the first one on ties, the first NaN if any.
template <typename T>
class ArgMaxOp : public OpKernel {
 public:
  using C = ComputeType<T>;

  explicit ArgMaxOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    std::vector<int64_t> axis;
    OP_REQUIRES_OK(ctx, ReadAxes(ctx->input(1), "dimension", &axis));
    OP_REQUIRES(ctx, axis.size() == 1,
                absl::InvalidArgumentError(
                    absl::StrCat("dimension must hold exactly one axis, got ", axis.size())));
    const int rank = in.dims();
    int64_t a = axis[0];
    OP_REQUIRES(ctx, a >= -rank && a < rank, AxisOutOfRange("dimension", a, in.shape()));
    if (a < 0) a += rank;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < a; ++i) outer *= in.dim_size(i);
    for (int i = a + 1; i < rank; ++i) inner *= in.dim_size(i);
    const int64_t reduced = in.dim_size(static_cast<int>(a));
    TensorShape out_shape = in.shape();
    out_shape.RemoveDim(static_cast<int>(a));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (outer * inner == 0) return;
    OP_REQUIRES(ctx, reduced > 0,
                absl::InvalidArgumentError(
                    absl::StrCat("ArgMax over an empty dimension: input shape ",
                                 in.shape().DebugString(), " has size 0 along dimension ", a)));
    if (output_type(0) == DT_INT32) {
      OP_REQUIRES(
          ctx, reduced <= std::numeric_limits<int32_t>::max(),
          absl::InvalidArgumentError(absl::StrCat("dimension ", a, " has size ", reduced,
                                                  ", too large for output_type int32; use int64")));
      Run(ctx, in.data<T>(), outer, reduced, inner, out->data<int32_t>());
    } else {
      Run(ctx, in.data<T>(), outer, reduced, inner, out->data<int64_t>());
    }
  }

 private:
  static bool Better(C v, C best) { return v > best || (cwise::IsNan(v) && !cwise::IsNan(best)); }

  // Index of the best of x[0..n), n >= 1. Eight lanes each keep the first best of their
  // elements (all start from x[0]); merging them prefers the smaller index on ties.
  static int64_t ArgMaxContiguous(const T* x, int64_t n) {
    constexpr int64_t kBlock = 512;
    constexpr int kLanes = 8;
    C widened[cwise::kIsNarrowFloat<T> ? kBlock : 1];
    C lane_best[kLanes];
    int64_t lane_index[kLanes];
    std::fill(lane_best, lane_best + kLanes, static_cast<C>(x[0]));
    std::fill(lane_index, lane_index + kLanes, int64_t{0});
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      const C* v = RowAsAcc<T, C>(x + s, m, widened);
      int64_t i = 0;
      for (; i + kLanes <= m; i += kLanes) {
        SF_SIMD_LOOP
        for (int k = 0; k < kLanes; ++k) {
          const bool take = Better(v[i + k], lane_best[k]);
          lane_best[k] = take ? v[i + k] : lane_best[k];
          lane_index[k] = take ? s + i + k : lane_index[k];
        }
      }
      for (; i < m; ++i) {
        if (Better(v[i], lane_best[0])) {
          lane_best[0] = v[i];
          lane_index[0] = s + i;
        }
      }
    }
    C best = lane_best[0];
    int64_t best_index = lane_index[0];
    for (int k = 1; k < kLanes; ++k) {
      if (Better(lane_best[k], best) ||
          (!Better(best, lane_best[k]) && lane_index[k] < best_index)) {
        best = lane_best[k];
        best_index = lane_index[k];
      }
    }
    return best_index;
  }

  template <typename Idx>
  static void Run(OpKernelContext* ctx, const T* in, int64_t outer, int64_t reduced, int64_t inner,
                  Idx* out) {
    if (inner == 1) {
      cwise::RunSharded(ctx, outer, reduced, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          out[o] = static_cast<Idx>(ArgMaxContiguous(in + o * reduced, reduced));
        }
      });
      return;
    }
    cwise::RunSharded(ctx, outer * inner, reduced, [&](int64_t b, int64_t e) {
      constexpr int64_t kBlock = 256;
      C best[kBlock], widened[cwise::kIsNarrowFloat<T> ? kBlock : 1];
      Idx idx[kBlock];
      while (b < e) {
        const int64_t o = b / inner, j0 = b % inner;
        const int64_t m = std::min({kBlock, inner - j0, e - b});
        const T* row = in + o * reduced * inner + j0;
        const C* first = RowAsAcc<T, C>(row, m, widened);
        std::copy(first, first + m, best);
        std::fill(idx, idx + m, Idx(0));
        for (int64_t r = 1; r < reduced; ++r) {
          row += inner;
          const C* v = RowAsAcc<T, C>(row, m, widened);
          const Idx ri = static_cast<Idx>(r);
          SF_SIMD_LOOP
          for (int64_t j = 0; j < m; ++j) {
            const bool take = Better(v[j], best[j]);
            best[j] = take ? v[j] : best[j];
            idx[j] = take ? ri : idx[j];
          }
        }
        std::copy(idx, idx + m, out + b);
        b += m;
      }
    });
  }
};

#define SF_REGISTER_REDUCTIONS(T)                                              \
  REGISTER_KERNEL(KernelDef("Sum").Device(kDeviceCpu).TypeConstraint<T>("T"),  \
                  ReductionOp<T, SumReducer>);                                 \
  REGISTER_KERNEL(KernelDef("Mean").Device(kDeviceCpu).TypeConstraint<T>("T"), \
                  ReductionOp<T, MeanReducer>);                                \
  REGISTER_KERNEL(KernelDef("Max").Device(kDeviceCpu).TypeConstraint<T>("T"),  \
                  ReductionOp<T, MaxReducer>);                                 \
  REGISTER_KERNEL(KernelDef("Min").Device(kDeviceCpu).TypeConstraint<T>("T"),  \
                  ReductionOp<T, MinReducer>);                                 \
  REGISTER_KERNEL(KernelDef("Prod").Device(kDeviceCpu).TypeConstraint<T>("T"), \
                  ReductionOp<T, ProdReducer>);                                \
  REGISTER_KERNEL(KernelDef("ArgMax").Device(kDeviceCpu).TypeConstraint<T>("T"), ArgMaxOp<T>)

SF_REGISTER_REDUCTIONS(float);
SF_REGISTER_REDUCTIONS(double);
SF_REGISTER_REDUCTIONS(int32_t);
SF_REGISTER_REDUCTIONS(int64_t);
SF_REGISTER_REDUCTIONS(half);
SF_REGISTER_REDUCTIONS(bfloat16);
SF_REGISTER_REDUCTIONS(int8_t);
SF_REGISTER_REDUCTIONS(uint8_t);

// int32 reductions on a GPU device are shape arithmetic, in host memory (cwise_binary_ops.cc).
#define SF_REGISTER_HOST_INT32_REDUCTION(NAME, REDUCER) \
  REGISTER_KERNEL(KernelDef(NAME)                       \
                      .Device(kDeviceGpu)               \
                      .TypeConstraint<int32_t>("T")     \
                      .HostMemory("input")              \
                      .HostMemory("axis")               \
                      .HostMemory("output"),            \
                  ReductionOp<int32_t, REDUCER>)
SF_REGISTER_HOST_INT32_REDUCTION("Sum", SumReducer);
SF_REGISTER_HOST_INT32_REDUCTION("Mean", MeanReducer);
SF_REGISTER_HOST_INT32_REDUCTION("Max", MaxReducer);
SF_REGISTER_HOST_INT32_REDUCTION("Min", MinReducer);
SF_REGISTER_HOST_INT32_REDUCTION("Prod", ProdReducer);
#undef SF_REGISTER_HOST_INT32_REDUCTION

}  // namespace
}  // namespace shardflow
