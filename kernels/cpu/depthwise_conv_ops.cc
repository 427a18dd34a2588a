// DepthwiseConv2dNative and its input and filter gradients on CPU (float), NHWC, filters
// [height, width, in, multiplier] (ops/depthwise_ops.cc).
//
// Direct loops: for each output pixel, each filter tap inside the image adds in[c] * w[c, m] to
// out[c * M + m], the channel loop innermost (contiguous in the image, the filter and the
// output, so it vectorises). A depthwise convolution does kh * kw multiply-adds per output, too
// few for a GEMM to pay off. Sharding: the forward pass over output rows, the input gradient
// over images (windows overlap within an image), the filter gradient over filter taps (each
// tap's sum over the batch is its own).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/windowed_output.h"
#include "core/platform/checked_math.h"
#include "kernels/cpu/cwise_ops_common.h"

namespace shardflow {
namespace {

struct DepthwiseGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0, m = 1;  // input NHWC, channel multiplier
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, rh = 1, rw = 1;
  int64_t oh = 0, ow = 0, pad_top = 0, pad_left = 0;

  TensorShape input_shape() const { return TensorShape({n, h, w, c}); }
  TensorShape filter_shape() const { return TensorShape({kh, kw, c, m}); }
  TensorShape output_shape() const { return TensorShape({n, oh, ow, c * m}); }

  // Calls fn(iy, ix, tap) for the taps of output pixel (y, x) that fall inside the image.
  template <typename Fn>
  void ForEachTap(int64_t y, int64_t x, Fn fn) const {
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t iy = y * sh - pad_top + i * rh;
      if (iy < 0 || iy >= h) continue;
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t ix = x * sw - pad_left + j * rw;
        if (ix < 0 || ix >= w) continue;
        fn(iy, ix, i * kw + j);
      }
    }
  }
};

absl::Status Spatial(OpKernelConstruction* c, const char* attr, int64_t* a, int64_t* b) {
  std::vector<int64_t> v;
  SF_RETURN_IF_ERROR(c->GetAttr(attr, &v));
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(attr, " must be [1, height, width, 1] with entries >= 1, got [",
                     absl::StrJoin(v, ", "), "]"));
  }
  *a = v[1];
  *b = v[2];
  return absl::OkStatus();
}

class DepthwiseOpBase : public OpKernel {
 public:
  explicit DepthwiseOpBase(OpKernelConstruction* c) : OpKernel(c) {
    std::string format = "NHWC";
    absl::Status s = Spatial(c, "strides", &sh_, &sw_);
    if (s.ok() && c->def().attr().count("dilations")) s = Spatial(c, "dilations", &rh_, &rw_);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = CheckPadding(padding_);
    if (s.ok() && c->def().attr().count("data_format")) s = c->GetAttr("data_format", &format);
    if (s.ok() && format != "NHWC") {
      s = absl::InvalidArgumentError(absl::StrCat("data_format \"", format,
                                                  "\" is not supported on CPU; give NHWC input "
                                                  "(from NCHW: transpose with perm [0, 2, 3, 1])"));
    }
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  absl::Status Geometry(const TensorShape& input, const TensorShape& filter,
                        DepthwiseGeometry* g) const {
    if (input.rank() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("input must be 4-D NHWC, got shape ", input.DebugString()));
    }
    if (filter.rank() != 4 || filter.dim(2) != input.dim(3)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "filter ", filter.DebugString(),
          " ([height, width, in, multiplier]) does not fit "
          "input ",
          input.DebugString(), " (NHWC): it needs rank 4 and ", input.dim(3), " input channels"));
    }
    *g = DepthwiseGeometry{};
    g->n = input.dim(0);
    g->h = input.dim(1);
    g->w = input.dim(2);
    g->c = input.dim(3);
    g->kh = filter.dim(0);
    g->kw = filter.dim(1);
    g->m = filter.dim(3);
    g->sh = sh_;
    g->sw = sw_;
    g->rh = rh_;
    g->rw = rw_;
    int64_t span_h, span_w, after;
    if (g->kh < 1 || g->kw < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("filter ", filter.DebugString(), " needs a window of at least 1x1"));
    }
    if (!CheckedMul(g->kh - 1, rh_, &span_h) || !CheckedAdd(span_h, int64_t{1}, &span_h) ||
        !CheckedMul(g->kw - 1, rw_, &span_w) || !CheckedAdd(span_w, int64_t{1}, &span_w)) {
      return absl::InvalidArgumentError(absl::StrCat("the filter ", filter.DebugString(),
                                                     " dilated by [", rh_, ", ", rw_,
                                                     "] is too large a window"));
    }
    SF_RETURN_IF_ERROR(
        WindowedOutputSize(g->h, span_h, g->sh, padding_, &g->oh, &g->pad_top, &after));
    SF_RETURN_IF_ERROR(
        WindowedOutputSize(g->w, span_w, g->sw, padding_, &g->ow, &g->pad_left, &after));
    int64_t out_channels;
    if (!CheckedMul(g->c, g->m, &out_channels)) {
      return absl::InvalidArgumentError("channels times multiplier overflows");
    }
    return absl::OkStatus();
  }

  static absl::Status SizesShape(const Tensor& t, const char* what, TensorShape* shape) {
    if (t.dtype() != DT_INT32 || t.dims() != 1 || t.NumElements() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " must be an int32 vector of 4 sizes, got ", t.DebugString()));
    }
    *shape = TensorShape();
    for (int i = 0; i < 4; ++i) {
      if (t.data<int32_t>()[i] < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " has a negative size: ", t.DebugString()));
      }
      shape->AddDim(t.data<int32_t>()[i]);
    }
    return shape->CheckedNumElements().status();
  }

  static absl::Status CheckOutBackprop(const Tensor& dy, const DepthwiseGeometry& g) {
    if (dy.shape() == g.output_shape()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("out_backprop has shape ", dy.shape().DebugString(),
                     " but the convolution of ", g.input_shape().DebugString(), " with ",
                     g.filter_shape().DebugString(), " gives ", g.output_shape().DebugString()));
  }

 private:
  int64_t sh_ = 1, sw_ = 1, rh_ = 1, rw_ = 1;
  std::string padding_;
};

class DepthwiseConv2dOp : public DepthwiseOpBase {
 public:
  using DepthwiseOpBase::DepthwiseOpBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    DepthwiseGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), filter.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    const float* in = input.data<float>();
    const float* wt = filter.data<float>();
    float* o = out->data<float>();
    const int64_t cm = g.c * g.m;
    cwise::RunSharded(ctx, g.n * g.oh, std::max<int64_t>(1, g.ow * cm * g.kh * g.kw / 4),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t row = begin; row < end; ++row) {
                          const int64_t img = row / g.oh, y = row % g.oh;
                          for (int64_t x = 0; x < g.ow; ++x) {
                            float* op = o + (row * g.ow + x) * cm;
                            std::fill(op, op + cm, 0.0f);
                            g.ForEachTap(y, x, [&](int64_t iy, int64_t ix, int64_t tap) {
                              const float* ip = in + ((img * g.h + iy) * g.w + ix) * g.c;
                              const float* wp = wt + tap * cm;
                              if (g.m == 1) {
                                SF_SIMD_LOOP
                                for (int64_t k = 0; k < g.c; ++k) op[k] += ip[k] * wp[k];
                                return;
                              }
                              for (int64_t k = 0; k < g.c; ++k) {
                                for (int64_t j = 0; j < g.m; ++j)
                                  op[k * g.m + j] += ip[k] * wp[k * g.m + j];
                              }
                            });
                          }
                        }
                      });
  }
};

class DepthwiseConv2dBackpropInputOp : public DepthwiseOpBase {
 public:
  using DepthwiseOpBase::DepthwiseOpBase;

  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    OP_REQUIRES_OK(ctx, SizesShape(ctx->input(0), "input_sizes", &input_shape));
    const Tensor& filter = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    DepthwiseGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input_shape, filter.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckOutBackprop(dy, g));
    Tensor* dx_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx_t));
    float* dx = dx_t->data<float>();
    std::fill(dx, dx + dx_t->NumElements(), 0.0f);
    const float* wt = filter.data<float>();
    const float* d = dy.data<float>();
    const int64_t cm = g.c * g.m;
    cwise::RunSharded(ctx, g.n, std::max<int64_t>(1, g.oh * g.ow * cm * g.kh * g.kw / 4),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t img = begin; img < end; ++img) {
                          for (int64_t y = 0; y < g.oh; ++y) {
                            for (int64_t x = 0; x < g.ow; ++x) {
                              const float* dp = d + ((img * g.oh + y) * g.ow + x) * cm;
                              g.ForEachTap(y, x, [&](int64_t iy, int64_t ix, int64_t tap) {
                                float* xp = dx + ((img * g.h + iy) * g.w + ix) * g.c;
                                const float* wp = wt + tap * cm;
                                for (int64_t k = 0; k < g.c; ++k) {
                                  float sum = 0;
                                  for (int64_t j = 0; j < g.m; ++j) {
                                    sum += dp[k * g.m + j] * wp[k * g.m + j];
                                  }
                                  xp[k] += sum;
                                }
                              });
                            }
                          }
                        }
                      });
  }
};

class DepthwiseConv2dBackpropFilterOp : public DepthwiseOpBase {
 public:
  using DepthwiseOpBase::DepthwiseOpBase;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    TensorShape filter_shape;
    OP_REQUIRES_OK(ctx, SizesShape(ctx->input(1), "filter_sizes", &filter_shape));
    const Tensor& dy = ctx->input(2);
    DepthwiseGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), filter_shape, &g));
    OP_REQUIRES_OK(ctx, CheckOutBackprop(dy, g));
    Tensor* dw_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &dw_t));
    float* dw = dw_t->data<float>();
    std::fill(dw, dw + dw_t->NumElements(), 0.0f);
    const float* in = input.data<float>();
    const float* d = dy.data<float>();
    const int64_t cm = g.c * g.m;
    cwise::RunSharded(ctx, g.kh * g.kw, std::max<int64_t>(1, g.n * g.oh * g.ow * cm / 2),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t tap = begin; tap < end; ++tap) {
                          const int64_t i = tap / g.kw, j = tap % g.kw;
                          float* wp = dw + tap * cm;
                          for (int64_t img = 0; img < g.n; ++img) {
                            for (int64_t y = 0; y < g.oh; ++y) {
                              const int64_t iy = y * g.sh - g.pad_top + i * g.rh;
                              if (iy < 0 || iy >= g.h) continue;
                              for (int64_t x = 0; x < g.ow; ++x) {
                                const int64_t ix = x * g.sw - g.pad_left + j * g.rw;
                                if (ix < 0 || ix >= g.w) continue;
                                const float* ip = in + ((img * g.h + iy) * g.w + ix) * g.c;
                                const float* dp = d + ((img * g.oh + y) * g.ow + x) * cm;
                                for (int64_t k = 0; k < g.c; ++k) {
                                  for (int64_t q = 0; q < g.m; ++q)
                                    wp[k * g.m + q] += ip[k] * dp[k * g.m + q];
                                }
                              }
                            }
                          }
                        }
                      });
  }
};

}  // namespace

REGISTER_KERNEL(KernelDef("DepthwiseConv2dNative").Device(kDeviceCpu).TypeConstraint<float>("T"),
                DepthwiseConv2dOp);
REGISTER_KERNEL(KernelDef("DepthwiseConv2dNativeBackpropInput")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("input_sizes"),
                DepthwiseConv2dBackpropInputOp);
REGISTER_KERNEL(KernelDef("DepthwiseConv2dNativeBackpropFilter")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("filter_sizes"),
                DepthwiseConv2dBackpropFilterOp);

}  // namespace shardflow
