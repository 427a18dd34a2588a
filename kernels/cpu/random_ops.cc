// Random kernels. Each kernel instance owns a generator seeded from (seed, seed2), so the k-th
// run of a node gives the same values in every process; both zero means a random seed. The
// stateless ones (StatelessRandomUniform, StatelessRandomNormal, StatelessTruncatedNormal) draw
// element i from counter-based bits keyed by their `seed` input: the same seed, the same values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/kernel_registry.h"
#include "core/platform/checked_math.h"
#include "kernels/cpu/counter_random.h"
#include "kernels/cpu/cwise_ops_common.h"

namespace shardflow {
namespace {

// Seeds a generator from the seed and seed2 attrs; both zero means a random seed.
absl::Status SeedFromAttrs(OpKernelConstruction* c, std::mt19937_64* gen) {
  int64_t seed = 0, seed2 = 0;
  absl::Status s = c->GetAttr("seed", &seed);
  if (s.ok()) s = c->GetAttr("seed2", &seed2);
  if (seed == 0 && seed2 == 0) {
    gen->seed(std::random_device()());
  } else {
    std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                      static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
    gen->seed(seq);
  }
  return s;
}

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

template <typename T, Distribution kDist>
class RandomOp : public OpKernel {
 public:
  explicit RandomOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = SeedFromAttrs(c, &gen_);
    if (!s.ok()) c->SetStatus(s);
  }
  bool SharedAcrossExecutors() const override { return true; }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& shape_t = ctx->input(0);
    OP_REQUIRES(ctx, shape_t.dims() == 1, absl::InvalidArgumentError("shape must be a vector"));
    TensorShape shape;
    for (int64_t i = 0; i < shape_t.NumElements(); ++i) {
      int64_t d =
          shape_t.dtype() == DT_INT32 ? shape_t.data<int32_t>()[i] : shape_t.data<int64_t>()[i];
      OP_REQUIRES(ctx, d >= 0, absl::InvalidArgumentError("shape has a negative dimension"));
      shape.AddDim(d);
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    T* o = out->data<T>();
    absl::MutexLock lock(&mu_);
    // Draw in double, then round, so float and double runs of one seed agree closely.
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (int64_t i = 0; i < out->NumElements(); ++i) {
      double v;
      if constexpr (kDist == Distribution::kUniform) {
        v = uniform(gen_);
      } else if constexpr (kDist == Distribution::kNormal) {
        v = normal(gen_);
      } else {
        do {
          v = normal(gen_);
        } while (v < -2.0 || v > 2.0);
      }
      o[i] = static_cast<T>(v);
    }
  }

 private:
  absl::Mutex mu_;
  std::mt19937_64 gen_ ABSL_GUARDED_BY(mu_);
};

// RandomGamma and RandomPoissonV2: `shape` + param.shape samples, each row of param.NumElements()
// drawn from the distribution of the matching parameter (std::gamma_distribution,
// std::poisson_distribution, in double). The sample count is checked before allocating.
constexpr double kMaxExactPoissonRate = 1e18;

template <typename P, typename Out, bool kGamma>
class ParameterizedRandomOp : public OpKernel {
 public:
  explicit ParameterizedRandomOp(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = SeedFromAttrs(c, &gen_);
    if (!s.ok()) c->SetStatus(s);
  }
  bool SharedAcrossExecutors() const override { return true; }

  void Compute(OpKernelContext* ctx) override {
    const char* what = kGamma ? "RandomGamma" : "RandomPoissonV2";
    const Tensor& shape_t = ctx->input(0);
    const Tensor& param = ctx->input(1);
    OP_REQUIRES(ctx, shape_t.dims() == 1,
                absl::InvalidArgumentError(absl::StrCat(what, ": shape must be a vector")));
    TensorShape shape;
    int64_t total = param.NumElements();
    for (int64_t i = 0; i < shape_t.NumElements(); ++i) {
      const int64_t d =
          shape_t.dtype() == DT_INT32 ? shape_t.data<int32_t>()[i] : shape_t.data<int64_t>()[i];
      OP_REQUIRES(
          ctx, d >= 0,
          absl::InvalidArgumentError(absl::StrCat(what, ": shape has a negative dimension ", d)));
      OP_REQUIRES(ctx, CheckedMul(total, d, &total) && total <= (int64_t{1} << 40),
                  absl::InvalidArgumentError(absl::StrCat(what, ": shape ", shape_t.DebugString(),
                                                          " times the ", param.NumElements(),
                                                          " parameters is too many samples")));
      shape.AddDim(d);
    }
    for (int d = 0; d < param.dims(); ++d) shape.AddDim(param.shape().dim(d));
    const P* p = param.data<P>();
    const int64_t params = param.NumElements();
    // The largest rate whose samples the output type holds (a Poisson sample stays within a
    // few square roots of its rate; half the type's range leaves room for them).
    constexpr double kMaxRate = std::is_integral_v<Out>
                                    ? static_cast<double>(std::numeric_limits<Out>::max()) / 2
                                    : std::numeric_limits<double>::max();
    for (int64_t j = 0; j < params; ++j) {
      const double v = static_cast<double>(p[j]);
      // std::gamma_distribution and std::poisson_distribution never return for infinite
      // parameters: refused, as rates too large for the output type.
      OP_REQUIRES(ctx, std::isfinite(v),
                  absl::InvalidArgumentError(absl::StrCat(what, kGamma ? ": alpha" : ": rate",
                                                          " must be finite, got ", v,
                                                          " at flat index ", j)));
      OP_REQUIRES(ctx, kGamma || v <= kMaxRate,
                  absl::InvalidArgumentError(absl::StrCat(
                      what, ": rate ", v, " at flat index ", j, " is above ", kMaxRate,
                      ", too large for samples of the output type; use a wider dtype")));
      OP_REQUIRES(ctx, kGamma ? v > 0 : v >= 0,
                  absl::InvalidArgumentError(absl::StrCat(what,
                                                          kGamma ? ": alpha must be positive, got "
                                                                 : ": rate must not be "
                                                                   "negative, got ",
                                                          v, " at flat index ", j)));
    }
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    if (params == 0) return;
    Out* o = out->data<Out>();
    const int64_t rows = out->NumElements() / params;
    absl::MutexLock lock(&mu_);
    for (int64_t j = 0; j < params; ++j) {
      const double v = static_cast<double>(p[j]);
      if constexpr (kGamma) {
        std::gamma_distribution<double> dist(v, 1.0);
        for (int64_t r = 0; r < rows; ++r) o[r * params + j] = static_cast<Out>(dist(gen_));
      } else {
        if (v == 0) {
          for (int64_t r = 0; r < rows; ++r) o[r * params + j] = static_cast<Out>(0);
          continue;
        }
        if (v > kMaxExactPoissonRate) {
          // Beyond int64's range std::poisson_distribution<int64_t> never returns; at such
          // rates the Poisson is a normal of mean and variance v to within 1e-9 (relative).
          std::normal_distribution<double> normal(v, std::sqrt(v));
          for (int64_t r = 0; r < rows; ++r) {
            o[r * params + j] = static_cast<Out>(std::max(0.0, std::round(normal(gen_))));
          }
          continue;
        }
        std::poisson_distribution<int64_t> dist(v);
        for (int64_t r = 0; r < rows; ++r) o[r * params + j] = static_cast<Out>(dist(gen_));
      }
    }
  }

 private:
  absl::Mutex mu_;
  std::mt19937_64 gen_ ABSL_GUARDED_BY(mu_);
};

// A shape from a vector input of int32 or int64, each dimension non-negative and the element
// count bounded (the shape may come from an untrusted graph).
absl::Status ShapeFromInput(const char* what, const Tensor& shape_t, TensorShape* shape) {
  if (shape_t.dims() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": shape must be a vector, got shape ", shape_t.shape().DebugString()));
  }
  int64_t total = 1;
  for (int64_t i = 0; i < shape_t.NumElements(); ++i) {
    const int64_t d =
        shape_t.dtype() == DT_INT32 ? shape_t.data<int32_t>()[i] : shape_t.data<int64_t>()[i];
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": shape has a negative dimension ", d));
    }
    if (!CheckedMul(total, d, &total) || total > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": shape ", shape_t.DebugString(), " is too many samples"));
    }
    shape->AddDim(d);
  }
  return absl::OkStatus();
}

// Element i of a stateless draw: uniform from counter i; normal by Box-Muller from counters 2i
// and 2i+1; truncated normal redraws under keys derived from the attempt number (each attempt
// lands within two standard deviations with probability 0.954; 64 failures in a row, which
// never happens, give 0).
template <Distribution kDist>
double StatelessSample(uint64_t key, uint64_t i) {
  using counter_random::UniformDouble;
  if constexpr (kDist == Distribution::kUniform) {
    return UniformDouble(key, i);
  } else {
    for (uint64_t attempt = 0; attempt < 64; ++attempt) {
      const uint64_t k = attempt == 0 ? key : counter_random::Bits(key, ~attempt);
      const double r = std::sqrt(-2.0 * std::log(1.0 - UniformDouble(k, 2 * i)));
      const double v = r * std::cos(6.283185307179586 * UniformDouble(k, 2 * i + 1));
      if (kDist == Distribution::kNormal || (v >= -2.0 && v <= 2.0)) return v;
    }
    return 0.0;
  }
}

template <typename T, Distribution kDist>
class StatelessRandomOp : public OpKernel {
 public:
  explicit StatelessRandomOp(OpKernelConstruction* c) : OpKernel(c) {}

  void Compute(OpKernelContext* ctx) override {
    TensorShape shape;
    OP_REQUIRES_OK(ctx, ShapeFromInput(name().c_str(), ctx->input(0), &shape));
    uint64_t key;
    OP_REQUIRES_OK(ctx, counter_random::KeyFromSeedInput(ctx, 1, &key));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &out));
    T* o = out->data<T>();
    cwise::RunSharded(ctx, out->NumElements(), kDist == Distribution::kUniform ? 2 : 20,
                      [=](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) {
                          o[i] =
                              static_cast<T>(StatelessSample<kDist>(key, static_cast<uint64_t>(i)));
                        }
                      });
  }
};

#define SF_REGISTER_STATELESS(NAME, DIST)              \
  REGISTER_KERNEL(KernelDef(NAME)                      \
                      .Device(kDeviceCpu)              \
                      .TypeConstraint<float>("dtype")  \
                      .HostMemory("shape")             \
                      .HostMemory("seed"),             \
                  StatelessRandomOp<float, DIST>);     \
  REGISTER_KERNEL(KernelDef(NAME)                      \
                      .Device(kDeviceCpu)              \
                      .TypeConstraint<double>("dtype") \
                      .HostMemory("shape")             \
                      .HostMemory("seed"),             \
                  StatelessRandomOp<double, DIST>)
SF_REGISTER_STATELESS("StatelessRandomUniform", Distribution::kUniform);
SF_REGISTER_STATELESS("StatelessRandomNormal", Distribution::kNormal);
SF_REGISTER_STATELESS("StatelessTruncatedNormal", Distribution::kTruncatedNormal);
#undef SF_REGISTER_STATELESS

#define SF_REGISTER_GAMMA(T)                                                                  \
  REGISTER_KERNEL(                                                                            \
      KernelDef("RandomGamma").Device(kDeviceCpu).TypeConstraint<T>("T").HostMemory("shape"), \
      ParameterizedRandomOp<T, T, true>)
SF_REGISTER_GAMMA(float);
SF_REGISTER_GAMMA(double);
#undef SF_REGISTER_GAMMA

#define SF_REGISTER_POISSON(R, OUT)                 \
  REGISTER_KERNEL(KernelDef("RandomPoissonV2")      \
                      .Device(kDeviceCpu)           \
                      .TypeConstraint<R>("R")       \
                      .TypeConstraint<OUT>("dtype") \
                      .HostMemory("shape"),         \
                  ParameterizedRandomOp<R, OUT, false>)
#define SF_REGISTER_POISSON_OUTS(R) \
  SF_REGISTER_POISSON(R, float);    \
  SF_REGISTER_POISSON(R, double);   \
  SF_REGISTER_POISSON(R, int32_t);  \
  SF_REGISTER_POISSON(R, int64_t)
SF_REGISTER_POISSON_OUTS(float);
SF_REGISTER_POISSON_OUTS(double);
SF_REGISTER_POISSON_OUTS(int32_t);
SF_REGISTER_POISSON_OUTS(int64_t);
#undef SF_REGISTER_POISSON_OUTS
#undef SF_REGISTER_POISSON

#define SF_REGISTER_RANDOM(NAME, DIST)                                                        \
  REGISTER_KERNEL(                                                                            \
      KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<float>("dtype").HostMemory("shape"),  \
      RandomOp<float, DIST>);                                                                 \
  REGISTER_KERNEL(                                                                            \
      KernelDef(NAME).Device(kDeviceCpu).TypeConstraint<double>("dtype").HostMemory("shape"), \
      RandomOp<double, DIST>)
SF_REGISTER_RANDOM("RandomUniform", Distribution::kUniform);
SF_REGISTER_RANDOM("RandomStandardNormal", Distribution::kNormal);
SF_REGISTER_RANDOM("TruncatedNormal", Distribution::kTruncatedNormal);

}  // namespace
}  // namespace shardflow
