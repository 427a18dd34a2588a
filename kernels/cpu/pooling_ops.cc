// MaxPool, MaxPoolGrad, MaxPoolWithArgmax, MaxPoolGradWithArgmax, AvgPool and AvgPoolGrad on
// CPU (float), NHWC.
//
// Plain loops with the channel loop innermost (contiguous, vectorised), sharded over output rows
// (forward) or images (gradients, whose windows may overlap within an image). Pooling is bound by
// memory bandwidth, and these loops read each input once; oneDNN's pooling would add a workspace
// or a recomputation for MaxPoolGrad, whose signature carries no argmax.
//
// MaxPoolGrad gives each window's gradient to the first position (in row-major order within the
// window) whose input equals the window's output, as TensorFlow does. When windows do not overlap
// (stride >= window), it writes the input gradient once instead of zeroing and accumulating.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/windowed_output.h"
#include "kernels/cpu/cwise_ops_common.h"

namespace shardflow {
namespace {

struct PoolGeometry {
  int64_t n, h, w, c, kh, kw, sh, sw, oh, ow, pad_top, pad_left;

  TensorShape input_shape() const { return TensorShape({n, h, w, c}); }
  TensorShape output_shape() const { return TensorShape({n, oh, ow, c}); }
  // The rows [*begin, *end) of the input under output row y (columns likewise).
  void Rows(int64_t y, int64_t* begin, int64_t* end) const {
    const int64_t h0 = y * sh - pad_top;
    *begin = std::max<int64_t>(h0, 0);
    *end = std::min(h0 + kh, h);
  }
  void Cols(int64_t x, int64_t* begin, int64_t* end) const {
    const int64_t w0 = x * sw - pad_left;
    *begin = std::max<int64_t>(w0, 0);
    *end = std::min(w0 + kw, w);
  }
  bool overlapping() const { return sh < kh || sw < kw; }
};

int64_t SpatialEntry(const std::vector<int64_t>& v, int i) { return v.size() == 4 ? v[i] : 0; }

class PoolOpBase : public OpKernel {
 public:
  explicit PoolOpBase(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = c->GetAttr("ksize", &ksize_);
    if (s.ok()) s = c->GetAttr("strides", &strides_);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = CheckPadding(padding_);
    for (const auto* v : {&ksize_, &strides_}) {
      if (s.ok() &&
          (v->size() != 4 || (*v)[0] != 1 || (*v)[3] != 1 || (*v)[1] < 1 || (*v)[2] < 1)) {
        s = absl::InvalidArgumentError(absl::StrCat(
            v == &ksize_ ? "ksize" : "strides",
            " must be [1, height, width, 1] with entries >= 1 (no pooling over batch or "
            "channels)"));
      }
    }
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  absl::Status Geometry(const TensorShape& in, PoolGeometry* g) const {
    if (in.rank() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("input must be 4-D NHWC, got shape ", in.DebugString()));
    }
    *g = PoolGeometry{in.dim(0),
                      in.dim(1),
                      in.dim(2),
                      in.dim(3),
                      SpatialEntry(ksize_, 1),
                      SpatialEntry(ksize_, 2),
                      SpatialEntry(strides_, 1),
                      SpatialEntry(strides_, 2),
                      0,
                      0,
                      0,
                      0};
    int64_t after;
    SF_RETURN_IF_ERROR(
        WindowedOutputSize(g->h, g->kh, g->sh, padding_, &g->oh, &g->pad_top, &after));
    return WindowedOutputSize(g->w, g->kw, g->sw, padding_, &g->ow, &g->pad_left, &after);
  }

  // The forward pass shared by MaxPool and AvgPool: allocates the output and calls
  // window(in, g, img, h0, h1, w0, w1, o) for every output pixel, sharded over the intra-op
  // threads; [h0, h1) x [w0, w1) is the pixel's window clipped to the input, o its C outputs.
  template <typename Window>
  void PoolForward(OpKernelContext* ctx, Window window) const {
    const Tensor& input = ctx->input(0);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    const float* in = input.data<float>();
    cwise::RunSharded(ctx, g.n * g.oh, std::max<int64_t>(1, g.ow * g.c * g.kh * g.kw / 8),
                      [&](int64_t begin, int64_t end) {
                        ForEachOutputPixel(g, begin, end, out->data<float>(),
                                           [&](int64_t img, int64_t y, int64_t x, float* o) {
                                             int64_t h0, h1, w0, w1;
                                             g.Rows(y, &h0, &h1);
                                             g.Cols(x, &w0, &w1);
                                             window(in, g, img, h0, h1, w0, w1, o);
                                           });
                      });
  }

  static absl::Status CheckGradShape(const Tensor& t, const char* what, const PoolGeometry& g) {
    if (t.shape() == g.output_shape()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(what, " has shape ", t.shape().DebugString(),
                                                   " but pooling ", g.input_shape().DebugString(),
                                                   " gives ", g.output_shape().DebugString()));
  }

 private:
  std::vector<int64_t> ksize_, strides_;
  std::string padding_;
};

// Calls fn(y, x, out) for the output pixels of output rows [begin, end) (rows over n * oh).
template <typename Fn>
void ForEachOutputPixel(const PoolGeometry& g, int64_t begin, int64_t end, float* out, Fn fn) {
  for (int64_t r = begin; r < end; ++r) {
    const int64_t img = r / g.oh, y = r % g.oh;
    for (int64_t x = 0; x < g.ow; ++x) fn(img, y, x, out + (r * g.ow + x) * g.c);
  }
}

// The 2x2 window of a pixel whose window lies inside the image, as pointers to its four
// channel vectors (the CNN's pooling; one fused loop instead of four short ones).
struct Window2x2 {
  const float *p00, *p01, *p10, *p11;
  Window2x2(const float* in, const PoolGeometry& g, int64_t img, int64_t hh, int64_t ww) {
    p00 = in + ((img * g.h + hh) * g.w + ww) * g.c;
    p01 = p00 + g.c;
    p10 = p00 + g.w * g.c;
    p11 = p10 + g.c;
  }
};

bool Is2x2(const PoolGeometry& g) { return g.kh == 2 && g.kw == 2; }

class MaxPoolOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    PoolForward(ctx, [](const float* in, const PoolGeometry& g, int64_t img, int64_t h0, int64_t h1,
                        int64_t w0, int64_t w1, float* o) {
      const int64_t c = g.c;
      if (Is2x2(g) && h1 - h0 == 2 && w1 - w0 == 2) {
        const Window2x2 p(in, g, img, h0, w0);
        SF_SIMD_LOOP
        for (int64_t k = 0; k < c; ++k) {
          const float a = p.p00[k] > p.p01[k] ? p.p00[k] : p.p01[k];
          const float b = p.p10[k] > p.p11[k] ? p.p10[k] : p.p11[k];
          o[k] = b > a ? b : a;
        }
        return;
      }
      std::fill(o, o + c, -std::numeric_limits<float>::infinity());
      for (int64_t hh = h0; hh < h1; ++hh) {
        for (int64_t ww = w0; ww < w1; ++ww) {
          const float* p = in + ((img * g.h + hh) * g.w + ww) * c;
          SF_SIMD_LOOP
          for (int64_t k = 0; k < c; ++k) {
            o[k] = p[k] > o[k] ? p[k] : o[k];
          }
        }
      }
    });
  }
};

class AvgPoolOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    PoolForward(ctx, [](const float* in, const PoolGeometry& g, int64_t img, int64_t h0, int64_t h1,
                        int64_t w0, int64_t w1, float* o) {
      const int64_t c = g.c;
      std::fill(o, o + c, 0.0f);
      for (int64_t hh = h0; hh < h1; ++hh) {
        for (int64_t ww = w0; ww < w1; ++ww) {
          const float* p = in + ((img * g.h + hh) * g.w + ww) * c;
          SF_SIMD_LOOP
          for (int64_t k = 0; k < c; ++k) o[k] += p[k];
        }
      }
      const float scale = 1.0f / static_cast<float>((h1 - h0) * (w1 - w0));
      SF_SIMD_LOOP
      for (int64_t k = 0; k < c; ++k) o[k] *= scale;
    });
  }
};

// Zeroes the pixels of image `img` of `dx` that no window covers (only when windows do not
// overlap, where the gradient kernels write covered pixels instead of accumulating).
void ZeroUncovered(const PoolGeometry& g, int64_t img, float* dx) {
  std::vector<char> row_covered(g.h, 0), col_covered(g.w, 0);
  for (int64_t y = 0; y < g.oh; ++y) {
    int64_t b, e;
    g.Rows(y, &b, &e);
    for (int64_t i = b; i < e; ++i) row_covered[i] = 1;
  }
  for (int64_t x = 0; x < g.ow; ++x) {
    int64_t b, e;
    g.Cols(x, &b, &e);
    for (int64_t i = b; i < e; ++i) col_covered[i] = 1;
  }
  for (int64_t hh = 0; hh < g.h; ++hh) {
    for (int64_t ww = 0; ww < g.w; ++ww) {
      if (row_covered[hh] && col_covered[ww]) continue;
      std::memset(dx + ((img * g.h + hh) * g.w + ww) * g.c, 0, g.c * sizeof(float));
    }
  }
}

// Writes the gradient of one 2x2 window that no other window overlaps: gp goes to the first of
// the four positions equal to the output yp. `dx` points at the window's top-left channel vector;
// `row` is the distance to the next image row.
void MaxPoolGrad2x2(const Window2x2& p, const float* yp, const float* gp, int64_t c, float* dx,
                    int64_t row) {
  float* d00 = dx;
  float* d01 = dx + c;
  float* d10 = dx + row;
  float* d11 = d10 + c;
  SF_SIMD_LOOP
  for (int64_t k = 0; k < c; ++k) {
    const float y = yp[k], g = gp[k];
    const bool h00 = p.p00[k] == y;
    const bool h01 = !h00 & (p.p01[k] == y);
    const bool h10 = !h00 & !h01 & (p.p10[k] == y);
    const bool h11 = !h00 & !h01 & !h10 & (p.p11[k] == y);
    d00[k] = h00 ? g : 0.0f;
    d01[k] = h01 ? g : 0.0f;
    d10[k] = h10 ? g : 0.0f;
    d11[k] = h11 ? g : 0.0f;
  }
}

class MaxPoolGradOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckGradShape(output, "orig_output", g));
    OP_REQUIRES_OK(ctx, CheckGradShape(grad, "grad", g));
    Tensor* dx_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &dx_t));
    const float* in = input.data<float>();
    const float* out = output.data<float>();
    const float* dy = grad.data<float>();
    float* dx = dx_t->data<float>();
    const int64_t c = g.c;
    const bool accumulate = g.overlapping();
    const int64_t image = g.h * g.w * c;
    cwise::RunSharded(ctx, g.n, std::max<int64_t>(1, image / 2), [&](int64_t begin, int64_t end) {
      std::vector<float> done(c);
      for (int64_t img = begin; img < end; ++img) {
        if (accumulate) {
          std::memset(dx + img * image, 0, image * sizeof(float));
        } else {
          ZeroUncovered(g, img, dx);
        }
        for (int64_t y = 0; y < g.oh; ++y) {
          int64_t h0, h1;
          g.Rows(y, &h0, &h1);
          for (int64_t x = 0; x < g.ow; ++x) {
            int64_t w0, w1;
            g.Cols(x, &w0, &w1);
            const int64_t o = ((img * g.oh + y) * g.ow + x) * c;
            const float* yp = out + o;
            const float* gp = dy + o;
            if (!accumulate && Is2x2(g) && h1 - h0 == 2 && w1 - w0 == 2) {
              MaxPoolGrad2x2(Window2x2(in, g, img, h0, w0), yp, gp, c,
                             dx + ((img * g.h + h0) * g.w + w0) * c, g.w * c);
              continue;
            }
            std::fill(done.begin(), done.end(), 0.0f);
            float* dn = done.data();
            for (int64_t hh = h0; hh < h1; ++hh) {
              for (int64_t ww = w0; ww < w1; ++ww) {
                const int64_t p = ((img * g.h + hh) * g.w + ww) * c;
                const float* xp = in + p;
                float* dxp = dx + p;
                // Unconditional loads and a bitwise and: the selects vectorise.
                if (accumulate) {
                  SF_SIMD_LOOP
                  for (int64_t k = 0; k < c; ++k) {
                    const float d = dn[k];
                    const bool hit = (xp[k] == yp[k]) & (d == 0.0f);
                    // gp[k] masked by bits: a select GCC would turn back into a branch.
                    uint32_t bits;
                    std::memcpy(&bits, gp + k, sizeof(bits));
                    bits &= 0u - static_cast<uint32_t>(hit);
                    float add;
                    std::memcpy(&add, &bits, sizeof(add));
                    dxp[k] += add;
                    dn[k] = hit ? 1.0f : d;
                  }
                } else {
                  SF_SIMD_LOOP
                  for (int64_t k = 0; k < c; ++k) {
                    const float d = dn[k], gk = gp[k];
                    const bool hit = (xp[k] == yp[k]) & (d == 0.0f);
                    dxp[k] = hit ? gk : 0.0f;
                    dn[k] = hit ? 1.0f : d;
                  }
                }
              }
            }
          }
        }
      }
    });
  }
};

class AvgPoolGradOp : public PoolOpBase {
 public:
  using PoolOpBase::PoolOpBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& sizes = ctx->input(0);
    const Tensor& grad = ctx->input(1);
    OP_REQUIRES(
        ctx, sizes.dtype() == DT_INT32 && sizes.dims() == 1 && sizes.NumElements() == 4,
        absl::InvalidArgumentError(absl::StrCat(
            "orig_input_shape must be an int32 vector of 4 sizes, got ", sizes.DebugString())));
    TensorShape in_shape;
    for (int i = 0; i < 4; ++i) {
      OP_REQUIRES(ctx, sizes.data<int32_t>()[i] >= 0,
                  absl::InvalidArgumentError("orig_input_shape has a negative size"));
      in_shape.AddDim(sizes.data<int32_t>()[i]);
    }
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(in_shape, &g));
    OP_REQUIRES_OK(ctx, CheckGradShape(grad, "grad", g));
    Tensor* dx_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in_shape, &dx_t));
    const float* dy = grad.data<float>();
    float* dx = dx_t->data<float>();
    const int64_t c = g.c, image = g.h * g.w * c;
    cwise::RunSharded(ctx, g.n, std::max<int64_t>(1, image / 2), [&](int64_t begin, int64_t end) {
      std::vector<float> share(c);
      for (int64_t img = begin; img < end; ++img) {
        std::memset(dx + img * image, 0, image * sizeof(float));
        for (int64_t y = 0; y < g.oh; ++y) {
          int64_t h0, h1;
          g.Rows(y, &h0, &h1);
          for (int64_t x = 0; x < g.ow; ++x) {
            int64_t w0, w1;
            g.Cols(x, &w0, &w1);
            const float* gp = dy + ((img * g.oh + y) * g.ow + x) * c;
            const float scale = 1.0f / static_cast<float>((h1 - h0) * (w1 - w0));
            float* sp = share.data();
            SF_SIMD_LOOP
            for (int64_t k = 0; k < c; ++k) sp[k] = gp[k] * scale;
            for (int64_t hh = h0; hh < h1; ++hh) {
              for (int64_t ww = w0; ww < w1; ++ww) {
                float* dxp = dx + ((img * g.h + hh) * g.w + ww) * c;
                SF_SIMD_LOOP
                for (int64_t k = 0; k < c; ++k) dxp[k] += sp[k];
              }
            }
          }
        }
      }
    });
  }
};

// MaxPoolWithArgmax: MaxPool's output and, per output, the flat index of the first position
// holding the maximum (row-major in the window, as MaxPoolGrad's rule): (y * w + x) * c + k
// within the image, plus img * h * w * c with include_batch_in_index.
template <typename Index>
class MaxPoolWithArgmaxOp : public PoolOpBase {
 public:
  explicit MaxPoolWithArgmaxOp(OpKernelConstruction* c) : PoolOpBase(c) {
    if (c->def().attr().count("include_batch_in_index")) {
      absl::Status s = c->GetAttr("include_batch_in_index", &include_batch_);
      if (!s.ok()) c->SetStatus(s);
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &g));
    OP_REQUIRES(ctx, input.NumElements() <= std::numeric_limits<Index>::max(),
                absl::InvalidArgumentError(absl::StrCat(
                    "input ", input.shape().DebugString(), " has more elements than Targmax ",
                    sizeof(Index) == 4 ? "int32" : "int64", " can index; use Targmax=int64")));
    Tensor *out, *argmax;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, g.output_shape(), &argmax));
    const float* in = input.data<float>();
    float* o = out->data<float>();
    Index* am = argmax->data<Index>();
    const int64_t image = g.h * g.w * g.c;
    cwise::RunSharded(
        ctx, g.n * g.oh, std::max<int64_t>(1, g.ow * g.c * g.kh * g.kw / 8),
        [&](int64_t begin, int64_t end) {
          ForEachOutputPixel(g, begin, end, o, [&](int64_t img, int64_t y, int64_t x, float* op) {
            Index* ap = am + (op - o);
            int64_t h0, h1, w0, w1;
            g.Rows(y, &h0, &h1);
            g.Cols(x, &w0, &w1);
            std::fill(op, op + g.c, -std::numeric_limits<float>::infinity());
            std::fill(ap, ap + g.c, Index{-1});
            for (int64_t hh = h0; hh < h1; ++hh) {
              for (int64_t ww = w0; ww < w1; ++ww) {
                const int64_t at = (hh * g.w + ww) * g.c;
                const float* p = in + img * image + at;
                for (int64_t k = 0; k < g.c; ++k) {
                  if (p[k] > op[k] || ap[k] < 0) {
                    op[k] = p[k];
                    ap[k] = static_cast<Index>((include_batch_ ? img * image : 0) + at + k);
                  }
                }
              }
            }
          });
        });
  }

 private:
  bool include_batch_ = false;
};

// MaxPoolGradWithArgmax: dx[argmax[i]] += grad[i]; every index is checked to lie in its image
// (or, with include_batch_in_index, in the input), since argmax may come from a feed.
template <typename Index>
class MaxPoolGradWithArgmaxOp : public PoolOpBase {
 public:
  explicit MaxPoolGradWithArgmaxOp(OpKernelConstruction* c) : PoolOpBase(c) {
    if (c->def().attr().count("include_batch_in_index")) {
      absl::Status s = c->GetAttr("include_batch_in_index", &include_batch_);
      if (!s.ok()) c->SetStatus(s);
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& grad = ctx->input(1);
    const Tensor& argmax = ctx->input(2);
    PoolGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckGradShape(grad, "grad", g));
    OP_REQUIRES_OK(ctx, CheckGradShape(argmax, "argmax", g));
    Tensor* dx_t;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &dx_t));
    float* dx = dx_t->data<float>();
    std::fill(dx, dx + dx_t->NumElements(), 0.0f);
    const float* dy = grad.data<float>();
    const Index* am = argmax.data<Index>();
    const int64_t image = g.h * g.w * g.c, per_image = g.oh * g.ow * g.c;
    for (int64_t img = 0; img < g.n; ++img) {
      const int64_t base = include_batch_ ? 0 : img * image;
      const int64_t limit = include_batch_ ? g.n * image : image;
      for (int64_t i = img * per_image; i < (img + 1) * per_image; ++i) {
        const int64_t at = static_cast<int64_t>(am[i]);
        OP_REQUIRES(
            ctx, at >= 0 && at < limit,
            absl::InvalidArgumentError(absl::StrCat(
                "argmax[", i, "] = ", at, " is outside the input ", input.shape().DebugString(),
                include_batch_ ? "" : " (indices are within one image)")));
        dx[base + at] += dy[i];
      }
    }
  }

 private:
  bool include_batch_ = false;
};

REGISTER_KERNEL(KernelDef("MaxPool").Device(kDeviceCpu).TypeConstraint<float>("T"), MaxPoolOp);
REGISTER_KERNEL(KernelDef("MaxPoolGrad").Device(kDeviceCpu).TypeConstraint<float>("T"),
                MaxPoolGradOp);
REGISTER_KERNEL(KernelDef("AvgPool").Device(kDeviceCpu).TypeConstraint<float>("T"), AvgPoolOp);
REGISTER_KERNEL(KernelDef("AvgPoolGrad")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("orig_input_shape"),
                AvgPoolGradOp);
REGISTER_KERNEL(KernelDef("MaxPoolWithArgmax")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .TypeConstraint<int64_t>("Targmax"),
                MaxPoolWithArgmaxOp<int64_t>);
REGISTER_KERNEL(KernelDef("MaxPoolWithArgmax")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .TypeConstraint<int32_t>("Targmax"),
                MaxPoolWithArgmaxOp<int32_t>);
REGISTER_KERNEL(KernelDef("MaxPoolGradWithArgmax")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .TypeConstraint<int64_t>("Targmax"),
                MaxPoolGradWithArgmaxOp<int64_t>);
REGISTER_KERNEL(KernelDef("MaxPoolGradWithArgmax")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .TypeConstraint<int32_t>("Targmax"),
                MaxPoolGradWithArgmaxOp<int32_t>);

}  // namespace
}  // namespace shardflow
