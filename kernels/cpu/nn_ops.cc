// CPU kernels for BiasAdd, BiasAddGrad, ReluGrad, Softmax, LogSoftmax, the two softmax
// cross-entropies and Dropout, for float and double.
//
// All of them view their input as rows of the last dimension. Loops over a row are plain and
// vectorised; rows are sharded over the intra-op pool. Softmax and the cross-entropies subtract
// each row's maximum before exponentiating, so large logits (1e4) stay finite.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "kernels/cpu/counter_random.h"
#include "kernels/cpu/cwise_ops_common.h"
#include "kernels/cpu/kernel_checks.h"

namespace shardflow {
namespace {

template <typename T>
using RowMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstRowMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// ---- BiasAdd ---------------------------------------------------------------------------------

template <typename T>
class BiasAddOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& value = ctx->input(0);
    const Tensor& bias = ctx->input(1);
    auto channels = BiasAddChannels(value, bias);
    OP_REQUIRES_OK(ctx, channels.status());
    const int64_t c = *channels;
    // Read the input before it may be forwarded to the output (which empties ctx->input(0)).
    const T* x = value.data<T>();
    const T* b = bias.data<T>();
    const int64_t rows = c == 0 ? 0 : value.NumElements() / c;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, value.shape(), &out));
    if (c == 0) return;
    T* y = out->data<T>();
    cwise::RunSharded(ctx, rows, std::max<int64_t>(1, c / 8), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = x + r * c;
        T* yr = y + r * c;
        SF_SIMD_LOOP
        for (int64_t k = 0; k < c; ++k) yr[k] = xr[k] + b[k];
      }
    });
  }
};

// Sums rows [begin, end) of x ([rows, c]) into acc[0..c), in blocks so that float keeps its
// precision over many rows.
template <typename T>
void SumRows(const T* x, int64_t begin, int64_t end, int64_t c, T* acc, T* block) {
  constexpr int64_t kBlockRows = 64;
  for (int64_t r0 = begin; r0 < end; r0 += kBlockRows) {
    const int64_t r1 = std::min(end, r0 + kBlockRows);
    std::fill(block, block + c, T(0));
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = x + r * c;
      SF_SIMD_LOOP
      for (int64_t k = 0; k < c; ++k) block[k] += xr[k];
    }
    SF_SIMD_LOOP
    for (int64_t k = 0; k < c; ++k) acc[k] += block[k];
  }
}

template <typename T>
class BiasAddGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    auto channels = BiasAddGradChannels(grad);
    OP_REQUIRES_OK(ctx, channels.status());
    const int64_t c = *channels;
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({c}), &out));
    T* sum = out->data<T>();
    std::fill(sum, sum + c, T(0));
    if (c == 0) return;
    const int64_t rows = grad.NumElements() / c;
    const T* x = grad.data<T>();
    // One partial sum per shard, added up at the end.
    const int64_t shards =
        rows * c < (1 << 15) ? 1 : std::min<int64_t>(rows, ctx->device()->intra_op_threads());
    std::vector<T> partial(shards * c, T(0)), blocks(shards * c);
    cwise::RunSharded(ctx, shards, 1 << 20, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        SumRows(x, rows * s / shards, rows * (s + 1) / shards, c, partial.data() + s * c,
                blocks.data() + s * c);
      }
    });
    for (int64_t s = 0; s < shards; ++s) {
      for (int64_t k = 0; k < c; ++k) sum[k] += partial[s * c + k];
    }
  }
};

// ---- ReluGrad --------------------------------------------------------------------------------

template <typename T>
class ReluGradOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& grad = ctx->input(0);
    const Tensor& features = ctx->input(1);
    OP_REQUIRES(ctx, grad.shape() == features.shape(),
                absl::InvalidArgumentError(
                    absl::StrCat("gradients ", grad.shape().DebugString(), " and features ",
                                 features.shape().DebugString(), " must have one shape")));
    // Read the input before it may be forwarded to the output (which empties ctx->input(0)).
    const T* g = grad.data<T>();
    const T* f = features.data<T>();
    const int64_t n = grad.NumElements();
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output(0, 0, grad.shape(), &out));
    T* y = out->data<T>();
    // Both operands are loaded unconditionally, so that the select vectorises.
    cwise::RunSharded(ctx, n, 1, [g, f, y](int64_t begin, int64_t end) {
      SF_SIMD_LOOP
      for (int64_t i = begin; i < end; ++i) {
        const T gi = g[i];
        y[i] = f[i] > T(0) ? gi : T(0);
      }
    });
  }
};

// ---- Softmax, LogSoftmax ---------------------------------------------------------------------

template <typename T, bool kLog>
class SoftmaxOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& logits = ctx->input(0);
    int64_t rows, c;
    OP_REQUIRES_OK(ctx, LastDimRows(logits, "logits", &rows, &c));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, logits.shape(), &out));
    const T* x = logits.data<T>();
    T* y = out->data<T>();
    cwise::RunSharded(ctx, rows, std::max<int64_t>(1, c * 4), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        ConstRowMap<T> in(x + r * c, c);
        RowMap<T> o(y + r * c, c);
        o = in - in.maxCoeff();
        if constexpr (kLog) {
          o -= std::log(o.exp().sum());
        } else {
          o = o.exp();
          o *= T(1) / o.sum();
        }
      }
    });
  }
};

// ---- cross-entropies -------------------------------------------------------------------------

// For one row: backprop = softmax(x); returns log(sum(exp(x - max))) and sets *max.
template <typename T>
T SoftmaxRow(const T* x, int64_t c, T* backprop, T* max) {
  ConstRowMap<T> in(x, c);
  RowMap<T> b(backprop, c);
  *max = in.maxCoeff();
  b = (in - *max).exp();
  const T sum = b.sum();
  b *= T(1) / sum;
  return std::log(sum);
}

template <typename T>
class SoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& features = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckSoftmaxXentShapes(features, labels));
    const int64_t n = features.dim_size(0), c = features.dim_size(1);
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n}), &loss));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, features.shape(), &backprop));
    if (c == 0) {
      std::fill(loss->data<T>(), loss->data<T>() + n, T(0));
      return;
    }
    const T* x = features.data<T>();
    const T* l = labels.data<T>();
    T* lo = loss->data<T>();
    T* b = backprop->data<T>();
    cwise::RunSharded(ctx, n, std::max<int64_t>(1, c * 6), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = x + r * c;
        const T* lr = l + r * c;
        T* br = b + r * c;
        T max;
        const T log_sum = SoftmaxRow(xr, c, br, &max);
        // loss = sum_j labels_j * (log_sum - (x_j - max))
        T sum = 0;
        for (int64_t k = 0; k < c; ++k) {
          sum += lr[k] * (log_sum - (xr[k] - max));
          br[k] -= lr[k];
        }
        lo[r] = sum;
      }
    });
  }
};

template <typename T, typename L>
class SparseSoftmaxXentOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& features = ctx->input(0);
    const Tensor& labels = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckSparseXentInputs(features, labels));
    const int64_t n = features.dim_size(0), c = features.dim_size(1);
    const L* lab = labels.data<L>();
    Tensor *loss, *backprop;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n}), &loss));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, features.shape(), &backprop));
    const T* x = features.data<T>();
    T* lo = loss->data<T>();
    T* b = backprop->data<T>();
    cwise::RunSharded(ctx, n, std::max<int64_t>(1, c * 5), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = x + r * c;
        T* br = b + r * c;
        T max;
        const T log_sum = SoftmaxRow(xr, c, br, &max);
        const int64_t k = static_cast<int64_t>(lab[r]);
        lo[r] = log_sum - (xr[k] - max);
        br[k] -= T(1);
      }
    });
  }
};

// ---- Dropout ---------------------------------------------------------------------------------

// The mask is a pure function of (key, element index), so it does not depend on how the
// elements are sharded. Dropout's key comes from (seed, seed2) and the run index, which advances
// once per Compute; StatelessDropout's from its `seed` input alone (the same seed, the same
// mask: Note [Random ops in functions] in python_bindings/shardflow/framework.py). An element's
// bits are two rounds of Mix32 over its index keyed by the 64-bit key (indices are taken modulo
// 2^32).
template <typename T, bool kStateless>
class DropoutOp : public OpKernel {
 public:
  explicit DropoutOp(OpKernelConstruction* c) : OpKernel(c) {
    int64_t seed = 0, seed2 = 0;
    absl::Status s = c->GetAttr("rate", &rate_);
    if (s.ok() && !kStateless) s = c->GetAttr("seed", &seed);
    if (s.ok() && !kStateless) s = c->GetAttr("seed2", &seed2);
    if (s.ok() && !(rate_ >= 0.0f && rate_ < 1.0f)) {
      s = absl::InvalidArgumentError(absl::StrCat("rate must be in [0, 1), got ", rate_));
    }
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    if (kStateless) return;
    if (seed == 0 && seed2 == 0) {
      std::random_device rd;
      key_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    } else {
      key_ = counter_random::KeyOf(seed, seed2);
    }
  }

  bool SharedAcrossExecutors() const override { return true; }  // runs_ numbers the masks

  void Compute(OpKernelContext* ctx) override {
    using counter_random::Mix32;
    const Tensor& x = ctx->input(0);
    uint64_t key;
    if (kStateless) {
      OP_REQUIRES_OK(ctx, counter_random::KeyFromSeedInput(ctx, 1, &key));
    } else {
      const uint64_t run = runs_.fetch_add(1, std::memory_order_relaxed);
      key = counter_random::Bits(key_, run);
    }
    Tensor *out, *mask;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, x.shape(), &mask));
    const uint32_t k1 = static_cast<uint32_t>(key), k2 = static_cast<uint32_t>(key >> 32);
    // u = 24 random bits / 2^24 in [0, 1); keep when u >= rate, i.e. bits >= threshold.
    const uint32_t threshold =
        static_cast<uint32_t>(std::ceil(static_cast<double>(rate_) * (1 << 24)));
    const T scale = T(1) / (T(1) - static_cast<T>(rate_));
    const T* in = x.data<T>();
    T* o = out->data<T>();
    T* m = mask->data<T>();
    cwise::RunSharded(ctx, x.NumElements(), 1, [=](int64_t begin, int64_t end) {
      const T s = scale;  // a local, so that the select below needs no load
      SF_SIMD_LOOP
      for (int64_t i = begin; i < end; ++i) {
        const uint32_t bits = Mix32(Mix32(static_cast<uint32_t>(i) ^ k1) + k2) >> 8;
        // 1 when bits >= threshold, else 0, by arithmetic (a compare becomes a branch here).
        const int32_t kept = 1 + (static_cast<int32_t>(bits - threshold) >> 31);
        const T keep = static_cast<T>(kept) * s;
        m[i] = keep;
        o[i] = in[i] * keep;
      }
    });
  }

 private:
  float rate_ = 0;
  uint64_t key_ = 0;
  std::atomic<uint64_t> runs_{0};
};

// LRN over the channels (the last dimension) of NHWC data: each pixel's channel vector is
// normalised by the sums of squares in a window of 2 * depth_radius + 1 channels.
struct LrnParams {
  int64_t radius = 5;
  float bias = 1, alpha = 1, beta = 0.5f;

  absl::Status Read(OpKernelConstruction* c) {
    SF_RETURN_IF_ERROR(c->GetAttr("depth_radius", &radius));
    SF_RETURN_IF_ERROR(c->GetAttr("bias", &bias));
    SF_RETURN_IF_ERROR(c->GetAttr("alpha", &alpha));
    SF_RETURN_IF_ERROR(c->GetAttr("beta", &beta));
    if (radius < 0 || radius > (int64_t{1} << 20)) {
      return absl::InvalidArgumentError(
          absl::StrCat("LRN's depth_radius must be in [0, 2^20], got ", radius));
    }
    return absl::OkStatus();
  }
};

absl::Status CheckLrnInput(const Tensor& t, const char* what) {
  if (t.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("LRN's ", what, " must be 4-D (NHWC), got ", t.shape().DebugString()));
  }
  return absl::OkStatus();
}

// scale[c] = bias + alpha * sum of x[j]^2 for |j - c| <= radius, for one pixel's channels.
template <typename T>
void LrnScale(const T* x, int64_t depth, const LrnParams& p, double* scale) {
  for (int64_t c = 0; c < depth; ++c) {
    double sum = 0;
    const int64_t lo = std::max<int64_t>(0, c - p.radius), hi = std::min(depth - 1, c + p.radius);
    for (int64_t j = lo; j <= hi; ++j) sum += static_cast<double>(x[j]) * x[j];
    scale[c] = p.bias + p.alpha * sum;
  }
}

// LRN and LRNGrad read the same attrs.
class LrnKernel : public OpKernel {
 public:
  explicit LrnKernel(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = p_.Read(c);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  LrnParams p_;
};

template <typename T>
class LrnOp : public LrnKernel {
 public:
  using LrnKernel::LrnKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& in = ctx->input(0);
    OP_REQUIRES_OK(ctx, CheckLrnInput(in, "input"));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t depth = in.dim_size(3);
    if (depth == 0) return;
    const int64_t pixels = in.NumElements() / depth;
    const T* x = in.data<T>();
    T* y = out->data<T>();
    cwise::RunSharded(ctx, pixels, depth * (2 * p_.radius + 4), [&](int64_t b, int64_t e) {
      std::vector<double> scale(depth);
      for (int64_t px = b; px < e; ++px) {
        LrnScale(x + px * depth, depth, p_, scale.data());
        for (int64_t c = 0; c < depth; ++c) {
          y[px * depth + c] = static_cast<T>(x[px * depth + c] * std::pow(scale[c], -p_.beta));
        }
      }
    });
  }
};

// dx[j] = dy[j] * s[j]^-beta - 2 alpha beta x[j] * sum over c with |j - c| <= radius of
//         dy[c] x[c] s[c]^(-beta - 1).
template <typename T>
class LrnGradOp : public LrnKernel {
 public:
  using LrnKernel::LrnKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& in = ctx->input(1);
    OP_REQUIRES_OK(ctx, CheckLrnInput(in, "input_image"));
    OP_REQUIRES(ctx, dy.shape() == in.shape() && ctx->input(2).shape() == in.shape(),
                absl::InvalidArgumentError(
                    absl::StrCat("LRNGrad: input_grads ", dy.shape().DebugString(),
                                 ", input_image ", in.shape().DebugString(), " and output_image ",
                                 ctx->input(2).shape().DebugString(), " must have one shape")));
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in.shape(), &out));
    const int64_t depth = in.dim_size(3);
    if (depth == 0) return;
    const int64_t pixels = in.NumElements() / depth;
    const T* x = in.data<T>();
    const T* g = dy.data<T>();
    T* dx = out->data<T>();
    cwise::RunSharded(ctx, pixels, depth * (4 * p_.radius + 8), [&](int64_t b, int64_t e) {
      std::vector<double> scale(depth), t(depth);
      for (int64_t px = b; px < e; ++px) {
        const T* xp = x + px * depth;
        const T* gp = g + px * depth;
        LrnScale(xp, depth, p_, scale.data());
        for (int64_t c = 0; c < depth; ++c) {
          t[c] = static_cast<double>(gp[c]) * xp[c] * std::pow(scale[c], -p_.beta - 1.0);
        }
        for (int64_t j = 0; j < depth; ++j) {
          double sum = 0;
          const int64_t lo = std::max<int64_t>(0, j - p_.radius),
                        hi = std::min(depth - 1, j + p_.radius);
          for (int64_t c = lo; c <= hi; ++c) sum += t[c];
          dx[px * depth + j] = static_cast<T>(gp[j] * std::pow(scale[j], -p_.beta) -
                                              2.0 * p_.alpha * p_.beta * xp[j] * sum);
        }
      }
    });
  }
};

#define SF_REGISTER_NN_FLOATING(T)                                                                 \
  REGISTER_KERNEL(KernelDef("BiasAdd").Device(kDeviceCpu).TypeConstraint<T>("T"), BiasAddOp<T>);   \
  REGISTER_KERNEL(KernelDef("BiasAddGrad").Device(kDeviceCpu).TypeConstraint<T>("T"),              \
                  BiasAddGradOp<T>);                                                               \
  REGISTER_KERNEL(KernelDef("ReluGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), ReluGradOp<T>); \
  REGISTER_KERNEL(KernelDef("LRN").Device(kDeviceCpu).TypeConstraint<T>("T"), LrnOp<T>);           \
  REGISTER_KERNEL(KernelDef("LRNGrad").Device(kDeviceCpu).TypeConstraint<T>("T"), LrnGradOp<T>);   \
  REGISTER_KERNEL(KernelDef("Softmax").Device(kDeviceCpu).TypeConstraint<T>("T"),                  \
                  SoftmaxOp<T, false>);                                                            \
  REGISTER_KERNEL(KernelDef("LogSoftmax").Device(kDeviceCpu).TypeConstraint<T>("T"),               \
                  SoftmaxOp<T, true>);                                                             \
  REGISTER_KERNEL(                                                                                 \
      KernelDef("SoftmaxCrossEntropyWithLogits").Device(kDeviceCpu).TypeConstraint<T>("T"),        \
      SoftmaxXentOp<T>);                                                                           \
  REGISTER_KERNEL(KernelDef("SparseSoftmaxCrossEntropyWithLogits")                                 \
                      .Device(kDeviceCpu)                                                          \
                      .TypeConstraint<T>("T")                                                      \
                      .TypeConstraint<int32_t>("Tlabels"),                                         \
                  SparseSoftmaxXentOp<T, int32_t>);                                                \
  REGISTER_KERNEL(KernelDef("SparseSoftmaxCrossEntropyWithLogits")                                 \
                      .Device(kDeviceCpu)                                                          \
                      .TypeConstraint<T>("T")                                                      \
                      .TypeConstraint<int64_t>("Tlabels"),                                         \
                  SparseSoftmaxXentOp<T, int64_t>);                                                \
  REGISTER_KERNEL(KernelDef("Dropout").Device(kDeviceCpu).TypeConstraint<T>("T"),                  \
                  DropoutOp<T, false>);                                                            \
  REGISTER_KERNEL(                                                                                 \
      KernelDef("StatelessDropout").Device(kDeviceCpu).TypeConstraint<T>("T").HostMemory("seed"),  \
      DropoutOp<T, true>)

SF_REGISTER_NN_FLOATING(float);
SF_REGISTER_NN_FLOATING(double);

}  // namespace
}  // namespace shardflow
