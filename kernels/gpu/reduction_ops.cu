// CUDA kernels for the reductions (launchers declared in reduction_ops.cu.h).
//
// One pass reduces the middle dimension of an [outer, reduced, inner] view with one of two
// kernels:
// - rows (inner == 1 and long rows): a block per row, its threads striding along the row, then
//   a shared-memory tree;
// - columns (otherwise): a thread per output, walking down its column (consecutive threads read
//   consecutive addresses).
// When there are too few outputs to fill the GPU, the reduced dimension is cut into chunks: a
// first pass writes [outer, chunks, inner] partial results to scratch memory, and the partials
// are reduced again (recursively, with fewer chunks each time).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/reduction_ops.cu.h"

namespace shardflow {
namespace gpu {
namespace {

// ---- reducers --------------------------------------------------------------------------------

template <typename T>
struct SumReducer {
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int32_t>) {
      return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
    } else {
      return a + b;
    }
  }
  __device__ static T Identity() { return T(0); }
};
template <typename T>
struct ProdReducer {
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, int32_t>) {
      return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
    } else {
      return a * b;
    }
  }
  __device__ static T Identity() { return T(1); }
};
// Max and Min propagate NaN: a NaN operand on either side wins.
template <typename T>
struct MaxReducer {
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return (a > b || a != a) ? a : b;
    } else {
      return a > b ? a : b;
    }
  }
  __device__ static T Identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return -INFINITY;
    } else {
      return INT_MIN;
    }
  }
};
template <typename T>
struct MinReducer {
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return (a < b || a != a) ? a : b;
    } else {
      return a < b ? a : b;
    }
  }
  __device__ static T Identity() {
    if constexpr (std::is_floating_point_v<T>) {
      return INFINITY;
    } else {
      return INT_MAX;
    }
  }
};

// ---- planning --------------------------------------------------------------------------------

// Rows at least this long get a block each (shorter ones a thread each).
constexpr int64_t kMinBlockRow = 128;
// Rows kernel: aim for this many blocks, each reducing at least kRowChunk elements.
constexpr int64_t kTargetBlocks = 4 * 132;
constexpr int64_t kRowChunk = 4096;
// Columns kernel: aim for this many threads, each reducing at least kColumnChunk elements.
constexpr int64_t kTargetThreads = 65536;
constexpr int64_t kColumnChunk = 32;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One pass over [outer, reduced, inner]: which kernel, and the reduced dimension cut into
// `chunks` ranges of `per` elements (the last may be shorter; none is empty).
struct PassPlan {
  bool rows = false;
  int64_t chunks = 1;
  int64_t per = 0;
};

PassPlan PlanPass(int64_t outer, int64_t reduced, int64_t inner) {
  PassPlan p;
  p.rows = inner == 1 && reduced >= kMinBlockRow;
  int64_t chunks = 1;
  if (p.rows) {
    if (outer < kTargetBlocks && reduced > 2 * kRowChunk) {
      // chunks <= reduced / kRowChunk < reduced, so the next pass is shorter.
      chunks = std::min(CeilDiv(reduced, kRowChunk), CeilDiv(kTargetBlocks, outer));
    }
  } else {
    const int64_t outputs = outer * inner;
    if (outputs < kTargetThreads && reduced > 2 * kColumnChunk) {
      chunks = std::min(CeilDiv(reduced, kColumnChunk), CeilDiv(kTargetThreads, outputs));
    }
  }
  if (chunks < 1) chunks = 1;
  p.per = CeilDiv(reduced, chunks);
  p.chunks = CeilDiv(reduced, p.per);  // drops chunks that would be empty
  return p;
}

// ---- kernels ---------------------------------------------------------------------------------

// Block task t = o * chunks + c reduces in[o, c * per : min(reduced, (c + 1) * per)] (inner is
// 1) into out[t].
template <typename T, typename R>
__global__ void ReduceRowsKernel(const T* in, int64_t outer, int64_t reduced, int64_t chunks,
                                 int64_t per, T* out) {
  __shared__ T shared[32];
  const R combine;
  const int64_t tasks = outer * chunks;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) {
    const int64_t o = t / chunks, c = t % chunks;
    const int64_t r0 = c * per;
    const int64_t r1 = r0 + per < reduced ? r0 + per : reduced;
    const T* row = in + o * reduced;
    T acc = R::Identity();
    for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) acc = combine(acc, row[r]);
    acc = BlockReduce(acc, combine, R::Identity(), shared);
    if (threadIdx.x == 0) out[t] = acc;
  }
}

// Thread i = (o * chunks + c) * inner + j reduces in[o, c * per : ..., j] into out[i].
template <typename T, typename R>
__global__ void ReduceColumnsKernel(const T* in, int64_t outer, int64_t reduced, int64_t inner,
                                    int64_t chunks, int64_t per, T* out) {
  const R combine;
  const int64_t n = outer * chunks * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t j = i % inner;
    const int64_t t = i / inner;
    const int64_t o = t / chunks, c = t % chunks;
    const int64_t r0 = c * per;
    const int64_t r1 = r0 + per < reduced ? r0 + per : reduced;
    const T* p = in + (o * reduced + r0) * inner + j;
    T acc = R::Identity();
    for (int64_t r = r0; r < r1; ++r, p += inner) acc = combine(acc, *p);
    out[i] = acc;
  }
}

template <typename T, typename R>
cudaError_t LaunchPass(const PassPlan& p, const T* in, int64_t outer, int64_t reduced,
                       int64_t inner, T* out, cudaStream_t stream) {
  if (p.rows) {
    const int64_t tasks = outer * p.chunks;
    const int blocks = static_cast<int>(tasks < kMaxBlocks ? tasks : kMaxBlocks);
    ReduceRowsKernel<T, R>
        <<<blocks, kThreads, 0, stream>>>(in, outer, reduced, p.chunks, p.per, out);
  } else {
    const int64_t n = outer * p.chunks * inner;
    ReduceColumnsKernel<T, R>
        <<<BlocksFor(n), kThreads, 0, stream>>>(in, outer, reduced, inner, p.chunks, p.per, out);
  }
  return cudaGetLastError();
}

template <typename T, typename R>
cudaError_t Reduce(const T* in, int64_t outer, int64_t reduced, int64_t inner, T* out, T* scratch,
                   cudaStream_t stream) {
  if (outer < 0 || inner < 0 || reduced < 1) return cudaErrorInvalidValue;
  if (outer == 0 || inner == 0) return cudaSuccess;
  while (true) {
    const PassPlan p = PlanPass(outer, reduced, inner);
    if (p.chunks == 1) return LaunchPass<T, R>(p, in, outer, reduced, inner, out, stream);
    if (scratch == nullptr) return cudaErrorInvalidValue;
    const cudaError_t e = LaunchPass<T, R>(p, in, outer, reduced, inner, scratch, stream);
    if (e != cudaSuccess) return e;
    // Reduce the partials [outer, chunks, inner] next, with the scratch behind them.
    in = scratch;
    scratch += outer * p.chunks * inner;
    reduced = p.chunks;
  }
}

template <typename T>
cudaError_t ReduceAny(ReduceFn fn, const T* in, int64_t outer, int64_t reduced, int64_t inner,
                      T* out, T* scratch, cudaStream_t stream) {
  switch (fn) {
    case ReduceFn::kSum:
      return Reduce<T, SumReducer<T>>(in, outer, reduced, inner, out, scratch, stream);
    case ReduceFn::kProd:
      return Reduce<T, ProdReducer<T>>(in, outer, reduced, inner, out, scratch, stream);
    case ReduceFn::kMax:
      return Reduce<T, MaxReducer<T>>(in, outer, reduced, inner, out, scratch, stream);
    case ReduceFn::kMin:
      return Reduce<T, MinReducer<T>>(in, outer, reduced, inner, out, scratch, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
__global__ void DivideKernel(T* data, int64_t n, T divisor) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    data[i] = data[i] / divisor;
  }
}

template <typename T>
__global__ void FillConstantKernel(T* out, int64_t n, T value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = value;
  }
}

// ---- ArgMax ----------------------------------------------------------------------------------

template <typename T>
__device__ __forceinline__ bool Better(T v, T best) {
  if constexpr (std::is_floating_point_v<T>) {
    return v > best || (v != v && best == best);
  } else {
    return v > best;
  }
}

// Folds candidate (v, vi) into (best, bi): the better value wins, the smaller index on ties.
// An index of -1 marks "no element yet".
template <typename T>
__device__ __forceinline__ void MergeArg(T& best, int64_t& bi, T v, int64_t vi) {
  if (vi < 0) return;
  if (bi < 0 || Better(v, best) || (!Better(best, v) && vi < bi)) {
    best = v;
    bi = vi;
  }
}

// A block per row (inner == 1).
template <typename T, typename Idx>
__global__ void ArgMaxRowsKernel(const T* in, int64_t outer, int64_t reduced, Idx* out) {
  __shared__ T shared_v[32];
  __shared__ int64_t shared_i[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    const T* row = in + o * reduced;
    T best = row[0];
    int64_t bi = -1;
    // Each thread sees its indices in increasing order, so it keeps its first best.
    for (int64_t r = threadIdx.x; r < reduced; r += blockDim.x) {
      const T v = row[r];
      if (bi < 0 || Better(v, best)) {
        best = v;
        bi = r;
      }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const T v = __shfl_down_sync(0xffffffffu, best, offset);
      const int64_t vi = __shfl_down_sync(0xffffffffu, bi, offset);
      MergeArg(best, bi, v, vi);
    }
    __syncthreads();  // the previous row's readers of shared_* are done
    if (lane == 0) {
      shared_v[warp] = best;
      shared_i[warp] = bi;
    }
    __syncthreads();
    if (warp == 0) {
      const bool have = lane < static_cast<int>(blockDim.x >> 5);
      best = have ? shared_v[lane] : best;
      bi = have ? shared_i[lane] : -1;
      for (int offset = 16; offset > 0; offset >>= 1) {
        const T v = __shfl_down_sync(0xffffffffu, best, offset);
        const int64_t vi = __shfl_down_sync(0xffffffffu, bi, offset);
        MergeArg(best, bi, v, vi);
      }
      if (lane == 0) out[o] = static_cast<Idx>(bi < 0 ? 0 : bi);
    }
  }
}

// A thread per output, walking its column from r = 0.
template <typename T, typename Idx>
__global__ void ArgMaxColumnsKernel(const T* in, int64_t outer, int64_t reduced, int64_t inner,
                                    Idx* out) {
  const int64_t n = outer * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t o = i / inner, j = i % inner;
    const T* p = in + o * reduced * inner + j;
    T best = p[0];
    int64_t bi = 0;
    for (int64_t r = 1; r < reduced; ++r) {
      const T v = p[r * inner];
      if (Better(v, best)) {
        best = v;
        bi = r;
      }
    }
    out[i] = static_cast<Idx>(bi);
  }
}

template <typename T, typename Idx>
cudaError_t ArgMax(const T* in, int64_t outer, int64_t reduced, int64_t inner, Idx* out,
                   cudaStream_t stream) {
  if (outer < 0 || inner < 0 || reduced < 1) return cudaErrorInvalidValue;
  if (outer == 0 || inner == 0) return cudaSuccess;
  if (inner == 1 && reduced >= kMinBlockRow) {
    const int blocks = static_cast<int>(outer < kMaxBlocks ? outer : kMaxBlocks);
    ArgMaxRowsKernel<T, Idx><<<blocks, kThreads, 0, stream>>>(in, outer, reduced, out);
  } else {
    ArgMaxColumnsKernel<T, Idx>
        <<<BlocksFor(outer * inner), kThreads, 0, stream>>>(in, outer, reduced, inner, out);
  }
  return cudaGetLastError();
}

}  // namespace

int64_t ReduceScratchElems(int64_t outer, int64_t reduced, int64_t inner) {
  if (outer <= 0 || inner <= 0 || reduced < 1) return 0;
  int64_t total = 0;
  while (true) {
    const PassPlan p = PlanPass(outer, reduced, inner);
    if (p.chunks == 1) return total;
    total += outer * p.chunks * inner;
    reduced = p.chunks;
  }
}

cudaError_t LaunchReduce(ReduceFn fn, const float* in, int64_t outer, int64_t reduced,
                         int64_t inner, float* out, float* scratch, cudaStream_t stream) {
  return ReduceAny<float>(fn, in, outer, reduced, inner, out, scratch, stream);
}

cudaError_t LaunchReduce(ReduceFn fn, const int32_t* in, int64_t outer, int64_t reduced,
                         int64_t inner, int32_t* out, int32_t* scratch, cudaStream_t stream) {
  return ReduceAny<int32_t>(fn, in, outer, reduced, inner, out, scratch, stream);
}

cudaError_t LaunchDivide(float* data, int64_t n, float divisor, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  DivideKernel<float><<<BlocksFor(n), kThreads, 0, stream>>>(data, n, divisor);
  return cudaGetLastError();
}

cudaError_t LaunchDivide(int32_t* data, int64_t n, int32_t divisor, cudaStream_t stream) {
  if (divisor == 0) return cudaErrorInvalidValue;
  if (n <= 0) return cudaSuccess;
  DivideKernel<int32_t><<<BlocksFor(n), kThreads, 0, stream>>>(data, n, divisor);
  return cudaGetLastError();
}

cudaError_t LaunchFillConstant(float* out, int64_t n, float value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  FillConstantKernel<float><<<BlocksFor(n), kThreads, 0, stream>>>(out, n, value);
  return cudaGetLastError();
}

cudaError_t LaunchFillConstant(int32_t* out, int64_t n, int32_t value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  FillConstantKernel<int32_t><<<BlocksFor(n), kThreads, 0, stream>>>(out, n, value);
  return cudaGetLastError();
}

cudaError_t LaunchArgMax(const float* in, int64_t outer, int64_t reduced, int64_t inner,
                         int32_t* out, cudaStream_t stream) {
  return ArgMax<float, int32_t>(in, outer, reduced, inner, out, stream);
}
cudaError_t LaunchArgMax(const float* in, int64_t outer, int64_t reduced, int64_t inner,
                         int64_t* out, cudaStream_t stream) {
  return ArgMax<float, int64_t>(in, outer, reduced, inner, out, stream);
}
cudaError_t LaunchArgMax(const int32_t* in, int64_t outer, int64_t reduced, int64_t inner,
                         int32_t* out, cudaStream_t stream) {
  return ArgMax<int32_t, int32_t>(in, outer, reduced, inner, out, stream);
}
cudaError_t LaunchArgMax(const int32_t* in, int64_t outer, int64_t reduced, int64_t inner,
                         int64_t* out, cudaStream_t stream) {
  return ArgMax<int32_t, int64_t>(in, outer, reduced, inner, out, stream);
}

}  // namespace gpu
}  // namespace shardflow
