// Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool, MaxPoolGrad, AvgPool and
// AvgPoolGrad for double, NHWC, in plain loops.
//
// oneDNN has no double convolutions (and the float pooling kernels are tuned for float's
// vectors); these exist for what double is used for: gradient checks
// (tf.test.compute_gradient_error and finite differences in float64) and scientific models
// that want the precision, where exactness matters more than speed. The loops follow the same
// geometry as the float kernels (core/framework/windowed_output.h: TensorFlow's SAME and VALID).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_kernel.h"
#include "core/framework/windowed_output.h"
#include "core/platform/status.h"
#include "kernels/cpu/kernel_checks.h"

namespace shardflow {
namespace {

// One convolution's sizes: input [n, h, w, ci], filter [kh, kw, ci, co], output [n, oh, ow, co].
struct Geometry {
  int64_t n, h, w, ci, kh, kw, co, oh, ow, sh, sw, pad_top, pad_left;

  // Calls fn(input index, filter index, output index) for every product of the convolution.
  template <typename Fn>
  void ForEachTerm(Fn fn) const {
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t out = ((b * oh + y) * ow + x) * co;
          for (int64_t ky = 0; ky < kh; ++ky) {
            const int64_t iy = y * sh - pad_top + ky;
            if (iy < 0 || iy >= h) continue;
            for (int64_t kx = 0; kx < kw; ++kx) {
              const int64_t ix = x * sw - pad_left + kx;
              if (ix < 0 || ix >= w) continue;
              const int64_t in = ((b * h + iy) * w + ix) * ci;
              const int64_t f = (ky * kw + kx) * ci * co;
              for (int64_t c = 0; c < ci; ++c) fn(in + c, f + c * co, out);
            }
          }
        }
      }
    }
  }
};

class DoubleConvBase : public OpKernel {
 public:
  explicit DoubleConvBase(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = ReadConv2DStrides(c, &sh_, &sw_, &padding_);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  absl::Status MakeGeometry(const TensorShape& in, const TensorShape& filter, Geometry* g) const {
    SF_RETURN_IF_ERROR(CheckConv2DShapes(in, filter));
    *g = Geometry{in.dim(0),
                  in.dim(1),
                  in.dim(2),
                  in.dim(3),
                  filter.dim(0),
                  filter.dim(1),
                  filter.dim(3),
                  0,
                  0,
                  sh_,
                  sw_,
                  0,
                  0};
    int64_t after;
    SF_RETURN_IF_ERROR(WindowedOutputSize(g->h, g->kh, sh_, padding_, &g->oh, &g->pad_top, &after));
    return WindowedOutputSize(g->w, g->kw, sw_, padding_, &g->ow, &g->pad_left, &after);
  }

  static absl::Status CheckOutBackprop(const Tensor& dy, const Geometry& g) {
    const TensorShape want({g.n, g.oh, g.ow, g.co});
    if (dy.shape() == want) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("out_backprop has shape ",
                                                   dy.shape().DebugString(),
                                                   " but the "
                                                   "convolution's output is ",
                                                   want.DebugString()));
  }

 private:
  int64_t sh_ = 1, sw_ = 1;
  std::string padding_;
};

class Conv2DDoubleOp : public DoubleConvBase {
 public:
  using DoubleConvBase::DoubleConvBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    Geometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input.shape(), filter.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({g.n, g.oh, g.ow, g.co}), &out));
    double* o = out->data<double>();
    std::fill(o, o + out->NumElements(), 0.0);
    const double* x = input.data<double>();
    const double* f = filter.data<double>();
    g.ForEachTerm([&](int64_t i, int64_t k, int64_t y) {
      const double v = x[i];
      for (int64_t c = 0; c < g.co; ++c) o[y + c] += v * f[k + c];
    });
  }
};

class Conv2DBackpropInputDoubleOp : public DoubleConvBase {
 public:
  using DoubleConvBase::DoubleConvBase;
  void Compute(OpKernelContext* ctx) override {
    TensorShape in_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(0), "input_sizes", &in_shape));
    const Tensor& filter = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    Geometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(in_shape, filter.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckOutBackprop(dy, g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in_shape, &out));
    double* dx = out->data<double>();
    std::fill(dx, dx + out->NumElements(), 0.0);
    const double* f = filter.data<double>();
    const double* d = dy.data<double>();
    g.ForEachTerm([&](int64_t i, int64_t k, int64_t y) {
      double sum = 0;
      for (int64_t c = 0; c < g.co; ++c) sum += d[y + c] * f[k + c];
      dx[i] += sum;
    });
  }
};

class Conv2DBackpropFilterDoubleOp : public DoubleConvBase {
 public:
  using DoubleConvBase::DoubleConvBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    TensorShape filter_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(1), "filter_sizes", &filter_shape));
    const Tensor& dy = ctx->input(2);
    Geometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input.shape(), filter_shape, &g));
    OP_REQUIRES_OK(ctx, CheckOutBackprop(dy, g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &out));
    double* df = out->data<double>();
    std::fill(df, df + out->NumElements(), 0.0);
    const double* x = input.data<double>();
    const double* d = dy.data<double>();
    g.ForEachTerm([&](int64_t i, int64_t k, int64_t y) {
      const double v = x[i];
      for (int64_t c = 0; c < g.co; ++c) df[k + c] += v * d[y + c];
    });
  }
};

// ---- pooling ----------------------------------------------------------------------------------

class DoublePoolBase : public OpKernel {
 public:
  explicit DoublePoolBase(OpKernelConstruction* c) : OpKernel(c) {
    std::vector<int64_t> ksize, strides;
    absl::Status s = c->GetAttr("ksize", &ksize);
    if (s.ok()) s = c->GetAttr("strides", &strides);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = CheckPadding(padding_);
    for (const auto* v : {&ksize, &strides}) {
      if (s.ok() &&
          (v->size() != 4 || (*v)[0] != 1 || (*v)[3] != 1 || (*v)[1] < 1 || (*v)[2] < 1)) {
        s = absl::InvalidArgumentError(absl::StrCat(
            v == &ksize ? "ksize" : "strides",
            " must be [1, height, width, 1] with entries >= 1 (no pooling over batch or "
            "channels)"));
      }
    }
    if (s.ok()) {
      kh_ = ksize[1];
      kw_ = ksize[2];
      sh_ = strides[1];
      sw_ = strides[2];
    }
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  // The pooled sizes of `in` (pooling is a convolution with one channel in and out).
  absl::Status MakeGeometry(const TensorShape& in, Geometry* g) const {
    if (in.rank() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("input must be 4-D NHWC, got shape ", in.DebugString()));
    }
    *g = Geometry{in.dim(0), in.dim(1), in.dim(2), in.dim(3), kh_, kw_, in.dim(3),
                  0,         0,         sh_,       sw_,       0,   0};
    int64_t after;
    SF_RETURN_IF_ERROR(WindowedOutputSize(g->h, kh_, sh_, padding_, &g->oh, &g->pad_top, &after));
    return WindowedOutputSize(g->w, kw_, sw_, padding_, &g->ow, &g->pad_left, &after);
  }

  // Calls fn(input offset, output offset) for every output position and every input position of
  // its window (clipped to the input: padding never counts), windows in row-major order; the
  // offsets point at C channels.
  template <typename Fn>
  static void ForEachWindowEntry(const Geometry& g, Fn fn) {
    for (int64_t b = 0; b < g.n; ++b) {
      for (int64_t y = 0; y < g.oh; ++y) {
        for (int64_t x = 0; x < g.ow; ++x) {
          const int64_t out = ((b * g.oh + y) * g.ow + x) * g.ci;
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            const int64_t iy = y * g.sh - g.pad_top + ky;
            if (iy < 0 || iy >= g.h) continue;
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t ix = x * g.sw - g.pad_left + kx;
              if (ix < 0 || ix >= g.w) continue;
              fn(((b * g.h + iy) * g.w + ix) * g.ci, out);
            }
          }
        }
      }
    }
  }

  // The number of input positions in each output position's window.
  static std::vector<int64_t> WindowCounts(const Geometry& g) {
    std::vector<int64_t> counts(g.n * g.oh * g.ow, 0);
    ForEachWindowEntry(g, [&](int64_t, int64_t out) { ++counts[out / g.ci]; });
    return counts;
  }

  static absl::Status CheckPooledShape(const Tensor& t, const char* what, const Geometry& g) {
    const TensorShape want({g.n, g.oh, g.ow, g.ci});
    if (t.shape() == want) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(what, " has shape ", t.shape().DebugString(),
                                                   " but pooling gives ", want.DebugString()));
  }

 private:
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1;
  std::string padding_;
};

class MaxPoolDoubleOp : public DoublePoolBase {
 public:
  using DoublePoolBase::DoublePoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    Geometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({g.n, g.oh, g.ow, g.ci}), &out));
    double* o = out->data<double>();
    std::fill(o, o + out->NumElements(), -std::numeric_limits<double>::infinity());
    const double* x = input.data<double>();
    ForEachWindowEntry(g, [&](int64_t in, int64_t at) {
      for (int64_t c = 0; c < g.ci; ++c) {
        if (x[in + c] > o[at + c]) o[at + c] = x[in + c];
      }
    });
  }
};

// Each window's gradient goes to the first position (row-major in the window) holding its
// maximum, as the float kernel and TensorFlow.
class MaxPoolGradDoubleOp : public DoublePoolBase {
 public:
  using DoublePoolBase::DoublePoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    Geometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckPooledShape(output, "orig_output", g));
    OP_REQUIRES_OK(ctx, CheckPooledShape(grad, "grad", g));
    Tensor* dx_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &dx_t));
    double* dx = dx_t->data<double>();
    std::fill(dx, dx + dx_t->NumElements(), 0.0);
    const double* x = input.data<double>();
    const double* y = output.data<double>();
    const double* dy = grad.data<double>();
    std::vector<char> given(output.NumElements(), 0);
    ForEachWindowEntry(g, [&](int64_t in, int64_t at) {
      for (int64_t c = 0; c < g.ci; ++c) {
        if (!given[at + c] && x[in + c] == y[at + c]) {
          dx[in + c] += dy[at + c];
          given[at + c] = 1;
        }
      }
    });
  }
};

// The mean over each window's positions inside the input (padding not counted).
class AvgPoolDoubleOp : public DoublePoolBase {
 public:
  using DoublePoolBase::DoublePoolBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    Geometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(input.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({g.n, g.oh, g.ow, g.ci}), &out));
    double* o = out->data<double>();
    std::fill(o, o + out->NumElements(), 0.0);
    const double* x = input.data<double>();
    ForEachWindowEntry(g, [&](int64_t in, int64_t at) {
      for (int64_t c = 0; c < g.ci; ++c) o[at + c] += x[in + c];
    });
    const std::vector<int64_t> counts = WindowCounts(g);
    for (int64_t i = 0; i < out->NumElements(); ++i) {
      o[i] /= static_cast<double>(std::max<int64_t>(counts[i / g.ci], 1));
    }
  }
};

class AvgPoolGradDoubleOp : public DoublePoolBase {
 public:
  using DoublePoolBase::DoublePoolBase;
  void Compute(OpKernelContext* ctx) override {
    TensorShape in_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(0), "orig_input_shape", &in_shape));
    const Tensor& grad = ctx->input(1);
    Geometry g;
    OP_REQUIRES_OK(ctx, MakeGeometry(in_shape, &g));
    OP_REQUIRES_OK(ctx, CheckPooledShape(grad, "grad", g));
    Tensor* dx_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in_shape, &dx_t));
    double* dx = dx_t->data<double>();
    std::fill(dx, dx + dx_t->NumElements(), 0.0);
    const double* dy = grad.data<double>();
    const std::vector<int64_t> counts = WindowCounts(g);
    ForEachWindowEntry(g, [&](int64_t in, int64_t at) {
      const double share = 1.0 / static_cast<double>(counts[at / g.ci]);
      for (int64_t c = 0; c < g.ci; ++c) dx[in + c] += dy[at + c] * share;
    });
  }
};

REGISTER_KERNEL(KernelDef("MaxPool").Device(kDeviceCpu).TypeConstraint<double>("T"),
                MaxPoolDoubleOp);
REGISTER_KERNEL(KernelDef("MaxPoolGrad").Device(kDeviceCpu).TypeConstraint<double>("T"),
                MaxPoolGradDoubleOp);
REGISTER_KERNEL(KernelDef("AvgPool").Device(kDeviceCpu).TypeConstraint<double>("T"),
                AvgPoolDoubleOp);
REGISTER_KERNEL(KernelDef("AvgPoolGrad")
                    .Device(kDeviceCpu)
                    .TypeConstraint<double>("T")
                    .HostMemory("orig_input_shape"),
                AvgPoolGradDoubleOp);
REGISTER_KERNEL(KernelDef("Conv2D").Device(kDeviceCpu).TypeConstraint<double>("T"), Conv2DDoubleOp);
REGISTER_KERNEL(KernelDef("Conv2DBackpropInput")
                    .Device(kDeviceCpu)
                    .TypeConstraint<double>("T")
                    .HostMemory("input_sizes"),
                Conv2DBackpropInputDoubleOp);
REGISTER_KERNEL(KernelDef("Conv2DBackpropFilter")
                    .Device(kDeviceCpu)
                    .TypeConstraint<double>("T")
                    .HostMemory("filter_sizes"),
                Conv2DBackpropFilterDoubleOp);

}  // namespace
}  // namespace shardflow
