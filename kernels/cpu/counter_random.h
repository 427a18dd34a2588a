// Counter-based random bits for the kernels whose values must be a pure function of a key and
// an element's index: Dropout's masks (the k-th run of a node) and the stateless random ops
// (StatelessRandomUniform, ..., StatelessDropout: the key comes from their `seed` input, so a
// function recomputed for its gradient draws the same numbers again; Note [Random ops in
// functions] in python_bindings/shardflow/framework.py).
//
//   OP_REQUIRES_OK(ctx, KeyFromSeedInput(ctx, 1, &key));
//   double u = UniformDouble(key, i);   // element i, in [0, 1)
#ifndef SHARDFLOW_KERNELS_CPU_COUNTER_RANDOM_H_
#define SHARDFLOW_KERNELS_CPU_COUNTER_RANDOM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/framework/op_kernel.h"

namespace shardflow {
namespace counter_random {

// SplitMix64's finaliser: a bijective 64-bit mix.
inline uint64_t Mix(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// MurmurHash3's 32-bit finaliser: a bijective mix of 32-bit multiplies, which vectorise.
inline uint32_t Mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  return h ^ (h >> 16);
}

// The key of a (seed, seed2) pair, as Dropout derives it from its attrs.
inline uint64_t KeyOf(int64_t seed, int64_t seed2) {
  return Mix(static_cast<uint64_t>(seed) * kGolden ^ Mix(static_cast<uint64_t>(seed2) + 1));
}

// The key of input `index`, a [2] int32 or int64 tensor (TensorFlow's stateless seed).
inline absl::Status KeyFromSeedInput(OpKernelContext* ctx, int index, uint64_t* key) {
  const Tensor& seed = ctx->input(index);
  if (seed.dims() != 1 || seed.NumElements() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "seed must be a vector of 2 integers, got shape ", seed.shape().DebugString()));
  }
  int64_t s[2];
  for (int i = 0; i < 2; ++i) {
    s[i] = seed.dtype() == DT_INT32 ? seed.data<int32_t>()[i] : seed.data<int64_t>()[i];
  }
  *key = KeyOf(s[0], s[1]);
  return absl::OkStatus();
}

// 64 random bits for counter `i` under `key`.
inline uint64_t Bits(uint64_t key, uint64_t i) { return Mix(key ^ Mix((i + 1) * kGolden)); }

// A double in [0, 1) with 53 random bits.
inline double UniformDouble(uint64_t key, uint64_t i) {
  return static_cast<double>(Bits(key, i) >> 11) * 0x1.0p-53;
}

}  // namespace counter_random
}  // namespace shardflow

#endif  // SHARDFLOW_KERNELS_CPU_COUNTER_RANDOM_H_
