// FusedBatchNorm and FusedBatchNormGrad on CPU (float), channels in the last dimension.
//
// x is viewed as [rows, channels]. Per-channel sums run over row blocks in float, each block's
// sums added into double per shard, so that a batch of 10^5 rows keeps float precision; the
// element-wise passes are plain vectorised loops. Training reads x once for the statistics (the
// sums of d = x - shift and d^2, with the shift the mean of the first 64 rows, so that the
// variance E[d^2] - E[d]^2 does not cancel: d is of the order of the deviation, not of the mean)
// and once to normalise.
//
// Reserve spaces: reserve_space_1 is the mean that was subtracted and reserve_space_2 the
// 1 / sqrt(variance + epsilon) that was applied (batch statistics in training, the given ones in
// inference), so the gradient needs neither epsilon nor a recomputation.
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "kernels/cpu/batch_norm_kernel.h"
#include "kernels/cpu/cwise_ops_common.h"

namespace shardflow {
namespace {

// total[j * c + k] = sum over rows of the j-th of `sums` quantities of channel k; `fn(r0, r1,
// acc)` adds rows [r0, r1) into acc ([sums * c], float).
void ReduceColumns(OpKernelContext* ctx, int64_t rows, int64_t c, int sums,
                   const std::function<void(int64_t, int64_t, float*)>& fn,
                   std::vector<double>* total) {
  constexpr int64_t kBlockRows = 64;
  const int64_t width = sums * c;
  const int64_t shards =
      rows * width < (1 << 15) ? 1 : std::max<int64_t>(1, ctx->device()->intra_op_threads());
  std::vector<double> partial(shards * width, 0.0);
  cwise::RunSharded(ctx, shards, 1 << 20, [&](int64_t begin, int64_t end) {
    std::vector<float> block(width);
    for (int64_t s = begin; s < end; ++s) {
      double* acc = partial.data() + s * width;
      for (int64_t r0 = rows * s / shards, stop = rows * (s + 1) / shards; r0 < stop;
           r0 += kBlockRows) {
        std::fill(block.begin(), block.end(), 0.0f);
        fn(r0, std::min(stop, r0 + kBlockRows), block.data());
        for (int64_t k = 0; k < width; ++k) acc[k] += block[k];
      }
    }
  });
  total->assign(width, 0.0);
  for (int64_t s = 0; s < shards; ++s) {
    for (int64_t k = 0; k < width; ++k) (*total)[k] += partial[s * width + k];
  }
}

class FusedBatchNormOp : public BatchNormKernel {
 public:
  using BatchNormKernel::BatchNormKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    int64_t rows = 0, c = 0;
    Tensor* out[5];
    OP_REQUIRES_OK(ctx, PrepareForward(ctx, &rows, &c, out));
    Tensor *y = out[0], *batch_mean = out[1], *batch_var = out[2], *saved_mean = out[3],
           *saved_inv_std = out[4];
    const float* xd = x.data<float>();
    std::vector<double> mean(c), var(c);
    if (is_training_) {
      // One pass: sums of d and d^2 for d = x - shift, with the shift the mean of the first 64
      // rows, so that E[d^2] - E[d]^2 does not cancel (d is of the order of the deviation).
      std::vector<float> shift(c, 0.0f);
      const int64_t head = std::min<int64_t>(rows, 64);
      for (int64_t r = 0; r < head; ++r) {
        for (int64_t k = 0; k < c; ++k) shift[k] += xd[r * c + k];
      }
      for (int64_t k = 0; k < c; ++k) shift[k] /= static_cast<float>(std::max<int64_t>(head, 1));
      const float* sh = shift.data();
      std::vector<double> total;
      ReduceColumns(
          ctx, rows, c, 2,
          [&](int64_t r0, int64_t r1, float* acc) {
            float* sq = acc + c;
            for (int64_t r = r0; r < r1; ++r) {
              const float* xr = xd + r * c;
              SF_SIMD_LOOP
              for (int64_t k = 0; k < c; ++k) {
                const float d = xr[k] - sh[k];
                acc[k] += d;
                sq[k] += d * d;
              }
            }
          },
          &total);
      for (int64_t k = 0; k < c; ++k) {
        const double m = total[k] / rows;
        mean[k] = sh[k] + m;
        total[k] = std::max(0.0, total[c + k] - rows * m * m);  // sum of squared deviations
      }
      const double bessel = rows > 1 ? static_cast<double>(rows) / (rows - 1) : 1.0;
      for (int64_t k = 0; k < c; ++k) {
        var[k] = total[k] / rows;
        batch_mean->data<float>()[k] = static_cast<float>(mean[k]);
        batch_var->data<float>()[k] = static_cast<float>(var[k] * bessel);
      }
    } else {
      for (int64_t k = 0; k < c; ++k) {
        mean[k] = ctx->input(3).data<float>()[k];
        var[k] = ctx->input(4).data<float>()[k];
        batch_mean->data<float>()[k] = static_cast<float>(mean[k]);
        batch_var->data<float>()[k] = static_cast<float>(var[k]);
      }
    }
    // y = x * a + b with a = scale * inv_std, b = offset - mean * a.
    std::vector<float> a(c), b(c);
    for (int64_t k = 0; k < c; ++k) {
      const double inv_std = 1.0 / std::sqrt(var[k] + static_cast<double>(epsilon_));
      saved_mean->data<float>()[k] = static_cast<float>(mean[k]);
      saved_inv_std->data<float>()[k] = static_cast<float>(inv_std);
      const double ak = ctx->input(1).data<float>()[k] * inv_std;
      a[k] = static_cast<float>(ak);
      b[k] = static_cast<float>(ctx->input(2).data<float>()[k] - mean[k] * ak);
    }
    const float* ap = a.data();
    const float* bp = b.data();
    float* yd = y->data<float>();
    cwise::RunSharded(ctx, rows, std::max<int64_t>(1, c / 4), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xd + r * c;
        float* yr = yd + r * c;
        SF_SIMD_LOOP
        for (int64_t k = 0; k < c; ++k) yr[k] = xr[k] * ap[k] + bp[k];
      }
    });
  }
};

class FusedBatchNormGradOp : public BatchNormKernel {
 public:
  using BatchNormKernel::BatchNormKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    int64_t rows = 0, c = 0;
    Tensor* outs[3];
    OP_REQUIRES_OK(ctx, PrepareGrad(ctx, &rows, &c, outs));
    Tensor *dx = outs[0], *dscale = outs[1], *doffset = outs[2];
    const float* g = dy.data<float>();
    const float* xd = x.data<float>();
    const float* mean = ctx->input(3).data<float>();
    const float* inv_std = ctx->input(4).data<float>();
    // sums[k] = sum(dy), sums[c + k] = sum(dy * (x - mean)).
    std::vector<double> sums;
    ReduceColumns(
        ctx, rows, c, 2,
        [&](int64_t r0, int64_t r1, float* acc) {
          float* acc_dy = acc;
          float* acc_dyx = acc + c;
          for (int64_t r = r0; r < r1; ++r) {
            const float* gr = g + r * c;
            const float* xr = xd + r * c;
            SF_SIMD_LOOP
            for (int64_t k = 0; k < c; ++k) {
              acc_dy[k] += gr[k];
              acc_dyx[k] += gr[k] * (xr[k] - mean[k]);
            }
          }
        },
        &sums);
    // Training: dx = scale * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)), which is
    // dy * a + (x - mean) * b + d per channel. Inference: dx = dy * scale * inv_std.
    std::vector<float> a(c), b(c), d(c);
    for (int64_t k = 0; k < c; ++k) {
      const double s = inv_std[k];
      const double scale = ctx->input(2).data<float>()[k];
      doffset->data<float>()[k] = static_cast<float>(sums[k]);
      dscale->data<float>()[k] = static_cast<float>(sums[c + k] * s);
      a[k] = static_cast<float>(scale * s);
      if (is_training_ && rows > 0) {
        b[k] = static_cast<float>(-scale * s * s * s * sums[c + k] / rows);
        d[k] = static_cast<float>(-scale * s * sums[k] / rows);
      } else {
        b[k] = d[k] = 0.0f;
      }
    }
    const float* ap = a.data();
    const float* bp = b.data();
    const float* dp = d.data();
    float* out = dx->data<float>();
    cwise::RunSharded(ctx, rows, std::max<int64_t>(1, c / 3), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* gr = g + r * c;
        const float* xr = xd + r * c;
        float* o = out + r * c;
        SF_SIMD_LOOP
        for (int64_t k = 0; k < c; ++k) o[k] = gr[k] * ap[k] + (xr[k] - mean[k]) * bp[k] + dp[k];
      }
    });
  }
};

REGISTER_KERNEL(KernelDef("FusedBatchNorm").Device(kDeviceCpu).TypeConstraint<float>("T"),
                FusedBatchNormOp);
REGISTER_KERNEL(KernelDef("FusedBatchNormGrad").Device(kDeviceCpu).TypeConstraint<float>("T"),
                FusedBatchNormGradOp);

}  // namespace
}  // namespace shardflow
