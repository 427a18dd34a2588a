// Random kernels. Each kernel instance owns a generator seeded from (seed, seed2), so the k-th
// run of a node gives the same values in every process; both zero means a random seed.
#include <random>

#include "absl/synchronization/mutex.h"
#include "core/framework/kernel_registry.h"

namespace shardflow {
namespace {

enum class Distribution { kUniform, kNormal, kTruncatedNormal };

template <typename T, Distribution kDist>
class RandomOp : public OpKernel {
 public:
  explicit RandomOp(OpKernelConstruction* c) : OpKernel(c) {
    int64_t seed = 0, seed2 = 0;
    absl::Status s = c->GetAttr("seed", &seed);
    if (s.ok()) s = c->GetAttr("seed2", &seed2);
    if (!s.ok()) c->SetStatus(s);
    if (seed == 0 && seed2 == 0) {
      gen_.seed(std::random_device()());
    } else {
      std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                        static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
      gen_.seed(seq);
    }
  }

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
