// Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool3D, MaxPool3DGrad, AvgPool3D and
// AvgPool3DGrad on CPU (float), NDHWC, filters [depth, height, width, in, out] (ops/nn3d_ops.cc).
//
// The convolutions are im2col + GEMM (kernels/cpu/sgemm.h): a block of output positions gathers
// its input patches into rows of [kd * kh * kw * in] (the filter's own layout, so the filter is
// the GEMM's right-hand matrix as it lies), then
//   forward:        out[rows, F]      = patches[rows, K] · filter[K, F]
//   input gradient: patches'[rows, K] = dout[rows, F] · filter[K, F]^T, scattered back (col2im)
//   filter grad:    dfilter[K, F]    += patches[rows, K]^T · dout[rows, F]
// Blocks are sized so one patch matrix stays within kPatchBytes, whatever the volume. Pooling is
// plain loops with the channels innermost, sharded over output planes (forward) or images
// (gradients, whose windows may overlap within an image).
//
// MaxPool3DGrad gives each window's gradient to the first position (depth, then height, then
// width) whose input equals the window's output, as TensorFlow does. AvgPool3D divides by the
// number of positions inside the volume (padding is not counted), as TensorFlow does.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/windowed_output.h"
#include "core/platform/checked_math.h"
#include "kernels/cpu/cwise_ops_common.h"
#include "kernels/cpu/onednn_util.h"
#include "kernels/cpu/sgemm.h"

namespace shardflow {
namespace {

constexpr int64_t kPatchBytes = int64_t{8} << 20;

// One sliding window over an NDHWC volume. For pooling, f == c and the dilations are 1.
struct Geometry3D {
  int64_t n = 0, c = 0, f = 0;
  int64_t in[3] = {0, 0, 0}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, r[3] = {1, 1, 1};
  int64_t out[3] = {0, 0, 0}, pad[3] = {0, 0, 0};

  TensorShape input_shape() const { return TensorShape({n, in[0], in[1], in[2], c}); }
  TensorShape output_shape() const { return TensorShape({n, out[0], out[1], out[2], f}); }
  TensorShape filter_shape() const { return TensorShape({k[0], k[1], k[2], c, f}); }
  int64_t positions() const { return out[0] * out[1] * out[2]; }
  int64_t volume() const { return in[0] * in[1] * in[2]; }
  int64_t taps() const { return k[0] * k[1] * k[2]; }
  // The input coordinate under output coordinate o, tap t, along spatial axis a (may be outside).
  int64_t At(int a, int64_t o, int64_t t) const { return o * s[a] - pad[a] + t * r[a]; }
  // The window of output (od, oh, ow) clipped to the volume, [b[a], e[a]) per axis (pooling).
  void Clip(const int64_t o[3], int64_t b[3], int64_t e[3]) const {
    for (int a = 0; a < 3; ++a) {
      const int64_t first = o[a] * s[a] - pad[a];
      b[a] = std::max<int64_t>(first, 0);
      e[a] = std::min(first + k[a], in[a]);
    }
  }
};

// Reads a 5-entry attr [1, d, h, w, 1].
absl::Status Spatial(OpKernelConstruction* c, const char* attr, int64_t v[3]) {
  std::vector<int64_t> a;
  SF_RETURN_IF_ERROR(c->GetAttr(attr, &a));
  if (a.size() != 5 || a[0] != 1 || a[4] != 1 || a[1] < 1 || a[2] < 1 || a[3] < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(attr, " must be [1, depth, height, width, 1] with entries >= 1, got [",
                     absl::StrJoin(a, ", "), "]"));
  }
  for (int i = 0; i < 3; ++i) v[i] = a[i + 1];
  return absl::OkStatus();
}

absl::Status CheckFilter(const TensorShape& filter, const Geometry3D& g) {
  if (filter.rank() == 5 && filter.dim(3) == g.c) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "filter ", filter.DebugString(), " ([depth, height, width, in, out]) does not fit input ",
      g.input_shape().DebugString(), " (NDHWC): it needs rank 5 and ", g.c, " input channels"));
}

// The attrs every op of the family has: strides, padding, data_format (+ ksize or dilations).
class Window3DOp : public OpKernel {
 public:
  Window3DOp(OpKernelConstruction* c, bool pooling) : OpKernel(c) {
    std::string format = "NDHWC";
    absl::Status s = Spatial(c, "strides", strides_);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = CheckPadding(padding_);
    if (s.ok() && c->def().attr().count("data_format")) s = c->GetAttr("data_format", &format);
    if (s.ok() && format != "NDHWC") {
      s = absl::InvalidArgumentError(
          absl::StrCat("data_format \"", format,
                       "\" is not supported on CPU; give NDHWC input (from NCDHW: "
                       "transpose with perm [0, 2, 3, 4, 1])"));
    }
    if (s.ok() && pooling) s = Spatial(c, "ksize", ksize_);
    if (s.ok() && !pooling && c->def().attr().count("dilations")) {
      s = Spatial(c, "dilations", dilations_);
    }
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  // The geometry of a window of `k` over `input` (rank 5) with `f` output channels.
  absl::Status Geometry(const TensorShape& input, const int64_t k[3], int64_t f,
                        Geometry3D* g) const {
    if (input.rank() != 5) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input must be 5-D NDHWC [batch, depth, height, width, channels], got shape ",
          input.DebugString()));
    }
    g->n = input.dim(0);
    g->c = input.dim(4);
    g->f = f;
    for (int a = 0; a < 3; ++a) {
      g->in[a] = input.dim(a + 1);
      g->k[a] = k[a];
      g->s[a] = strides_[a];
      g->r[a] = dilations_[a];
      int64_t span, after;
      if (!CheckedMul(k[a] - 1, g->r[a], &span) || !CheckedAdd(span, int64_t{1}, &span)) {
        return absl::InvalidArgumentError("the dilated window is too large");
      }
      SF_RETURN_IF_ERROR(
          WindowedOutputSize(g->in[a], span, g->s[a], padding_, &g->out[a], &g->pad[a], &after));
    }
    return absl::OkStatus();
  }
  // A convolution's geometry: `filter` must be [depth, height, width, in, out] with `in` the
  // input's channels.
  absl::Status ConvGeometry(const TensorShape& input, const TensorShape& filter,
                            Geometry3D* g) const {
    if (filter.rank() != 5) {
      return absl::InvalidArgumentError(absl::StrCat(
          "filter must be 5-D [depth, height, width, in, out], got shape ", filter.DebugString()));
    }
    const int64_t k[3] = {filter.dim(0), filter.dim(1), filter.dim(2)};
    SF_RETURN_IF_ERROR(Geometry(input, k, filter.dim(4), g));
    return CheckFilter(filter, *g);
  }
  absl::Status PoolGeometry(const TensorShape& input, Geometry3D* g) const {
    return Geometry(input, ksize_, input.rank() == 5 ? input.dim(4) : 0, g);
  }

 private:
  int64_t strides_[3] = {1, 1, 1}, ksize_[3] = {1, 1, 1}, dilations_[3] = {1, 1, 1};
  std::string padding_;
};

// A shape held by a 5-vector of sizes (int32, or int64 where the op allows it).
absl::Status ShapeFromSizes(const Tensor& t, const char* what, TensorShape* shape) {
  if ((t.dtype() != DT_INT32 && t.dtype() != DT_INT64) || t.dims() != 1 || t.NumElements() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be an int32 or int64 vector of 5 sizes, got ", t.DebugString()));
  }
  *shape = TensorShape();
  for (int i = 0; i < 5; ++i) {
    const int64_t d = t.dtype() == DT_INT32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i];
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has a negative size: ", t.DebugString()));
    }
    shape->AddDim(d);
  }
  SF_RETURN_IF_ERROR(shape->CheckedNumElements().status());
  return absl::OkStatus();
}

absl::Status CheckShape(const Tensor& t, const char* what, const TensorShape& want,
                        const char* because) {
  if (t.shape() == want) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " has shape ", t.shape().DebugString(),
                                                 " but ", because, " gives ", want.DebugString()));
}

// Rows [p0, p1) of image `img`'s patch matrix: each row the window of one output position,
// taps in filter order, zeros where the window leaves the volume.
void Gather(const Geometry3D& g, const float* image, int64_t p0, int64_t p1, float* patches) {
  const int64_t row = g.taps() * g.c;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t o[3] = {p / (g.out[1] * g.out[2]), (p / g.out[2]) % g.out[1], p % g.out[2]};
    float* dst = patches + (p - p0) * row;
    for (int64_t i = 0; i < g.k[0]; ++i) {
      const int64_t z = g.At(0, o[0], i);
      for (int64_t j = 0; j < g.k[1]; ++j) {
        const int64_t y = g.At(1, o[1], j);
        for (int64_t l = 0; l < g.k[2]; ++l, dst += g.c) {
          const int64_t x = g.At(2, o[2], l);
          if (z < 0 || z >= g.in[0] || y < 0 || y >= g.in[1] || x < 0 || x >= g.in[2]) {
            std::memset(dst, 0, sizeof(float) * g.c);
          } else {
            std::memcpy(dst, image + ((z * g.in[1] + y) * g.in[2] + x) * g.c, sizeof(float) * g.c);
          }
        }
      }
    }
  }
}

// The reverse of Gather: adds rows [p0, p1) of a patch matrix into the image they came from.
void Scatter(const Geometry3D& g, const float* patches, int64_t p0, int64_t p1, float* image) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t o[3] = {p / (g.out[1] * g.out[2]), (p / g.out[2]) % g.out[1], p % g.out[2]};
    const float* src = patches + (p - p0) * g.taps() * g.c;
    for (int64_t i = 0; i < g.k[0]; ++i) {
      const int64_t z = g.At(0, o[0], i);
      for (int64_t j = 0; j < g.k[1]; ++j) {
        const int64_t y = g.At(1, o[1], j);
        for (int64_t l = 0; l < g.k[2]; ++l, src += g.c) {
          const int64_t x = g.At(2, o[2], l);
          if (z < 0 || z >= g.in[0] || y < 0 || y >= g.in[1] || x < 0 || x >= g.in[2]) continue;
          float* dst = image + ((z * g.in[1] + y) * g.in[2] + x) * g.c;
          for (int64_t ch = 0; ch < g.c; ++ch) dst[ch] += src[ch];
        }
      }
    }
  }
}

// Calls fn(img, p0, p1, patches) for blocks of output positions of every image, with a patch
// buffer of at most kPatchBytes (or one row, if a row alone is larger).
template <typename Fn>
absl::Status ForEachBlock(OpKernelContext* ctx, const Geometry3D& g, Fn fn) {
  const int64_t row = g.taps() * g.c;
  if (g.n == 0 || g.positions() == 0 || row == 0) return absl::OkStatus();
  const int64_t rows = std::clamp<int64_t>(kPatchBytes / static_cast<int64_t>(sizeof(float) * row),
                                           1, g.positions());
  Tensor patches;
  SF_RETURN_IF_ERROR(ctx->allocate_temp(DT_FLOAT, TensorShape({rows, row}), &patches));
  for (int64_t img = 0; img < g.n; ++img) {
    for (int64_t p0 = 0; p0 < g.positions(); p0 += rows) {
      SF_RETURN_IF_ERROR(fn(img, p0, std::min(p0 + rows, g.positions()), patches.data<float>()));
    }
  }
  return absl::OkStatus();
}

void FillZero(Tensor* t) { std::fill_n(t->data<float>(), t->NumElements(), 0.0f); }

class Conv3DOp : public Window3DOp {
 public:
  explicit Conv3DOp(OpKernelConstruction* c) : Window3DOp(c, /*pooling=*/false) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    Geometry3D g;
    OP_REQUIRES_OK(ctx, ConvGeometry(input.shape(), filter.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    if (g.c == 0) return FillZero(out);
    SetOneDnnThreads(ctx);
    const int64_t row = g.taps() * g.c;
    const float* in = input.data<float>();
    float* o = out->data<float>();
    OP_REQUIRES_OK(
        ctx, ForEachBlock(ctx, g, [&](int64_t img, int64_t p0, int64_t p1, float* patches) {
          Gather(g, in + img * g.volume() * g.c, p0, p1, patches);
          return Sgemm(false, false, p1 - p0, g.f, row, patches, row, filter.data<float>(), g.f,
                       0.0f, o + (img * g.positions() + p0) * g.f, g.f);
        }));
  }
};

class Conv3DBackpropInputOp : public Window3DOp {
 public:
  explicit Conv3DBackpropInputOp(OpKernelConstruction* c) : Window3DOp(c, /*pooling=*/false) {}

  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(0), "input_sizes", &input_shape));
    const Tensor& filter = ctx->input(1);
    const Tensor& dout = ctx->input(2);
    Geometry3D g;
    OP_REQUIRES_OK(ctx, ConvGeometry(input_shape, filter.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckShape(dout, "out_backprop", g.output_shape(),
                                   "convolving input_sizes with the filter"));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    FillZero(dx);
    if (g.f == 0) return;
    SetOneDnnThreads(ctx);
    const int64_t row = g.taps() * g.c;
    float* d = dx->data<float>();
    OP_REQUIRES_OK(ctx,
                   ForEachBlock(ctx, g, [&](int64_t img, int64_t p0, int64_t p1, float* patches) {
                     SF_RETURN_IF_ERROR(Sgemm(false, true, p1 - p0, row, g.f,
                                              dout.data<float>() + (img * g.positions() + p0) * g.f,
                                              g.f, filter.data<float>(), g.f, 0.0f, patches, row));
                     Scatter(g, patches, p0, p1, d + img * g.volume() * g.c);
                     return absl::OkStatus();
                   }));
  }
};

class Conv3DBackpropFilterOp : public Window3DOp {
 public:
  explicit Conv3DBackpropFilterOp(OpKernelConstruction* c) : Window3DOp(c, /*pooling=*/false) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    TensorShape filter_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(1), "filter_sizes", &filter_shape));
    const Tensor& dout = ctx->input(2);
    Geometry3D g;
    OP_REQUIRES_OK(ctx, ConvGeometry(input.shape(), filter_shape, &g));
    OP_REQUIRES_OK(ctx, CheckShape(dout, "out_backprop", g.output_shape(),
                                   "convolving the input with filter_sizes"));
    Tensor* df;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &df));
    FillZero(df);
    if (g.f == 0) return;
    SetOneDnnThreads(ctx);
    const int64_t row = g.taps() * g.c;
    const float* in = input.data<float>();
    OP_REQUIRES_OK(ctx,
                   ForEachBlock(ctx, g, [&](int64_t img, int64_t p0, int64_t p1, float* patches) {
                     Gather(g, in + img * g.volume() * g.c, p0, p1, patches);
                     return Sgemm(true, false, row, g.f, p1 - p0, patches, row,
                                  dout.data<float>() + (img * g.positions() + p0) * g.f, g.f, 1.0f,
                                  df->data<float>(), g.f);
                   }));
  }
};

// ---- pooling ----

// Calls fn(img, b, e, at) for each output position of output planes [begin, end) (planes over
// n * out_depth): [b, e) its window clipped to the volume, `at` the offset of its C outputs.
template <typename Fn>
void ForEachWindow(const Geometry3D& g, int64_t begin, int64_t end, Fn fn) {
  for (int64_t plane = begin; plane < end; ++plane) {
    const int64_t img = plane / g.out[0];
    for (int64_t y = 0; y < g.out[1]; ++y) {
      for (int64_t x = 0; x < g.out[2]; ++x) {
        const int64_t o[3] = {plane % g.out[0], y, x};
        int64_t b[3], e[3];
        g.Clip(o, b, e);
        fn(img, b, e, ((plane * g.out[1] + y) * g.out[2] + x) * g.c);
      }
    }
  }
}

// The offset of input position (z, y, x) of image img.
int64_t Offset(const Geometry3D& g, int64_t img, int64_t z, int64_t y, int64_t x) {
  return (((img * g.in[0] + z) * g.in[1] + y) * g.in[2] + x) * g.c;
}

template <bool kMax>
class Pool3DOp : public Window3DOp {
 public:
  explicit Pool3DOp(OpKernelConstruction* c) : Window3DOp(c, /*pooling=*/true) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    Geometry3D g;
    OP_REQUIRES_OK(ctx, PoolGeometry(input.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    const float* in = input.data<float>();
    const int64_t cost = std::max<int64_t>(1, g.out[1] * g.out[2] * g.c * g.taps() / 8);
    cwise::RunSharded(ctx, g.n * g.out[0], cost, [&](int64_t begin, int64_t end) {
      ForEachWindow(
          g, begin, end, [&](int64_t img, const int64_t b[3], const int64_t e[3], int64_t at) {
            float* o = out->data<float>() + at;
            std::fill_n(o, g.c, kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
            for (int64_t z = b[0]; z < e[0]; ++z) {
              for (int64_t y = b[1]; y < e[1]; ++y) {
                for (int64_t x = b[2]; x < e[2]; ++x) {
                  const float* v = in + Offset(g, img, z, y, x);
                  for (int64_t ch = 0; ch < g.c; ++ch) {
                    o[ch] = kMax ? std::max(o[ch], v[ch]) : o[ch] + v[ch];
                  }
                }
              }
            }
            if (!kMax) {
              const float count = static_cast<float>((e[0] - b[0]) * (e[1] - b[1]) * (e[2] - b[2]));
              for (int64_t ch = 0; ch < g.c; ++ch) o[ch] /= count;
            }
          });
    });
  }
};

class MaxPool3DGradOp : public Window3DOp {
 public:
  explicit MaxPool3DGradOp(OpKernelConstruction* c) : Window3DOp(c, /*pooling=*/true) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& output = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    Geometry3D g;
    OP_REQUIRES_OK(ctx, PoolGeometry(input.shape(), &g));
    OP_REQUIRES_OK(ctx, CheckShape(output, "orig_output", g.output_shape(), "pooling orig_input"));
    OP_REQUIRES_OK(ctx, CheckShape(grad, "grad", g.output_shape(), "pooling orig_input"));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input.shape(), &dx));
    FillZero(dx);
    const float* in = input.data<float>();
    const float* dy = grad.data<float>();
    const int64_t per_image = g.positions() * g.c;
    const int64_t cost = std::max<int64_t>(1, per_image * g.taps() / 4);
    cwise::RunSharded(ctx, g.n, cost, [&](int64_t begin, int64_t end) {
      std::vector<int64_t> where(g.c);
      ForEachWindow(g, begin * g.out[0], end * g.out[0],
                    [&](int64_t img, const int64_t b[3], const int64_t e[3], int64_t at) {
                      const float* o = output.data<float>() + at;
                      std::fill(where.begin(), where.end(), -1);
                      for (int64_t z = b[0]; z < e[0]; ++z) {
                        for (int64_t y = b[1]; y < e[1]; ++y) {
                          for (int64_t x = b[2]; x < e[2]; ++x) {
                            const int64_t off = Offset(g, img, z, y, x);
                            for (int64_t ch = 0; ch < g.c; ++ch) {
                              if (where[ch] < 0 && in[off + ch] == o[ch]) where[ch] = off + ch;
                            }
                          }
                        }
                      }
                      float* d = dx->data<float>();
                      for (int64_t ch = 0; ch < g.c; ++ch) {
                        if (where[ch] >= 0) d[where[ch]] += dy[at + ch];
                      }
                    });
    });
  }
};

class AvgPool3DGradOp : public Window3DOp {
 public:
  explicit AvgPool3DGradOp(OpKernelConstruction* c) : Window3DOp(c, /*pooling=*/true) {}

  void Compute(OpKernelContext* ctx) override {
    TensorShape input_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(0), "orig_input_shape", &input_shape));
    const Tensor& grad = ctx->input(1);
    Geometry3D g;
    OP_REQUIRES_OK(ctx, PoolGeometry(input_shape, &g));
    OP_REQUIRES_OK(ctx, CheckShape(grad, "grad", g.output_shape(), "pooling orig_input_shape"));
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    FillZero(dx);
    const int64_t cost = std::max<int64_t>(1, g.positions() * g.c * g.taps() / 4);
    cwise::RunSharded(ctx, g.n, cost, [&](int64_t begin, int64_t end) {
      ForEachWindow(g, begin * g.out[0], end * g.out[0],
                    [&](int64_t img, const int64_t b[3], const int64_t e[3], int64_t at) {
                      const float* dy = grad.data<float>() + at;
                      const float count =
                          static_cast<float>((e[0] - b[0]) * (e[1] - b[1]) * (e[2] - b[2]));
                      float* d = dx->data<float>();
                      for (int64_t z = b[0]; z < e[0]; ++z) {
                        for (int64_t y = b[1]; y < e[1]; ++y) {
                          for (int64_t x = b[2]; x < e[2]; ++x) {
                            float* v = d + Offset(g, img, z, y, x);
                            for (int64_t ch = 0; ch < g.c; ++ch) v[ch] += dy[ch] / count;
                          }
                        }
                      }
                    });
    });
  }
};

}  // namespace

REGISTER_KERNEL(KernelDef("Conv3D").Device(kDeviceCpu).TypeConstraint<float>("T"), Conv3DOp);
REGISTER_KERNEL(KernelDef("Conv3DBackpropInputV2")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("input_sizes"),
                Conv3DBackpropInputOp);
REGISTER_KERNEL(KernelDef("Conv3DBackpropFilterV2")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("filter_sizes"),
                Conv3DBackpropFilterOp);
REGISTER_KERNEL(KernelDef("MaxPool3D").Device(kDeviceCpu).TypeConstraint<float>("T"),
                Pool3DOp<true>);
REGISTER_KERNEL(KernelDef("AvgPool3D").Device(kDeviceCpu).TypeConstraint<float>("T"),
                Pool3DOp<false>);
REGISTER_KERNEL(KernelDef("MaxPool3DGrad").Device(kDeviceCpu).TypeConstraint<float>("T"),
                MaxPool3DGradOp);
REGISTER_KERNEL(KernelDef("AvgPool3DGrad")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("orig_input_shape"),
                AvgPool3DGradOp);

}  // namespace shardflow
