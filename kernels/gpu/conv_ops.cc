// Convolutions and pooling on a GPU through cuDNN, on NHWC tensors as the ops define them:
// Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, _FusedConv2D (+ bias and activation),
// MaxPool, MaxPoolGrad, AvgPool, AvgPoolGrad, all float32.
//
// Layout: the ops' tensors are NHWC, but cuDNN's float32 convolutions without tensor cores are
// much faster in NCHW, where it has FFT and Winograd algorithms (on an H200, the CNN's 5x5
// convolutions at batch 512 took ~2.4x as long in NHWC as PyTorch's NCHW ones). So, in strict
// float32, a big convolution (an activation of 4M elements or more) transposes its activations
// to NCHW around the cuDNN call (cudnnTransformTensor; a tensor with one channel is the same
// bytes in both layouts and is used as it is); smaller ones, where the extra launches cost more
// than the faster algorithms save (the same CNN at batch 128), and all with TF32 (tensor cores)
// stay NHWC. $SHARDFLOW_CUDNN_LAYOUT=nhwc|nchw forces one. cuDNN takes the filter as [out, height,
// width, in] in NHWC and [out, in, height, width] in NCHW; TensorFlow's is [height, width, in,
// out], so the forward and input-gradient kernels transpose the filter into a scratch tensor first
// and the filter gradient transposes its result back (filters are small). Algorithms are timed once
// per shape, layout and process (cudnnFind*, or cuDNN's heuristics with $SHARDFLOW_CUDNN_FIND=0);
// the fastest whose workspace fits in kMaxWorkspace is kept. float32 stays exact (FMA math) unless
// the session allows TF32.
//
// cuDNN pads symmetrically. A SAME window with more padding after than before (e.g. a 3x3
// window with stride 2 on an even size, as in ResNet) is computed over the input padded with
// zeros at the bottom and right (convolutions; the input gradient is cropped back) or by our own
// pooling kernels (pooling.cu).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/fused_ops.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/windowed_output.h"
#include "kernels/gpu/gpu_launchers.h"
#include "kernels/gpu/gpu_util.h"

namespace shardflow {
namespace {

constexpr size_t kMaxWorkspace = size_t{512} << 20;

// RAII cuDNN descriptors.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { cudnnCreateTensorDescriptor(&d); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  // A float tensor in the given layout (NHWC by default).
  cudnnStatus_t Set(int64_t n, int64_t h, int64_t w, int64_t c,
                    cudnnTensorFormat_t format = CUDNN_TENSOR_NHWC) {
    return cudnnSetTensor4dDescriptor(d, format, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                      static_cast<int>(c), static_cast<int>(h),
                                      static_cast<int>(w));
  }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { cudnnCreateFilterDescriptor(&d); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { cudnnCreateConvolutionDescriptor(&d); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
};
struct PoolDesc {
  cudnnPoolingDescriptor_t d = nullptr;
  PoolDesc() { cudnnCreatePoolingDescriptor(&d); }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(d); }
};

// The window of a convolution or pooling over an NHWC input.
struct Window {
  int64_t n, h, w, c;             // input
  int64_t kh, kw, sh, sw;         // window, strides
  int64_t oh, ow;                 // output
  int64_t pad_h, pad_w;           // padding before: top, left (cuDNN pads this much on both sides)
  int64_t pad_bottom, pad_right;  // padding after: more than before for uneven SAME padding
  // SAME padding with more after than before (e.g. a 3x3 window, stride 2, on an even size).
  bool uneven() const { return pad_bottom != pad_h || pad_right != pad_w; }
  // The window over the input padded at the bottom and right by the difference (PadInput), on
  // which cuDNN's symmetric padding gives the same output.
  Window Padded() const {
    Window p = *this;
    p.h += pad_bottom - pad_h;
    p.w += pad_right - pad_w;
    p.pad_bottom = p.pad_h;
    p.pad_right = p.pad_w;
    return p;
  }
};

absl::Status ReadStrides(OpKernelConstruction* c, const char* attr, int64_t* sh, int64_t* sw) {
  std::vector<int64_t> v;
  SF_RETURN_IF_ERROR(c->GetAttr(attr, &v));
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        attr, " must be [1, h, w, 1] with h, w >= 1 (NHWC); got [", absl::StrJoin(v, ", "), "]"));
  }
  *sh = v[1];
  *sw = v[2];
  return absl::OkStatus();
}

// Output sizes and padding; errors for windows cuDNN cannot pad.
absl::Status MakeWindow(int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                        int64_t sh, int64_t sw, const std::string& padding, Window* win) {
  int64_t top, bottom, left, right;
  win->n = n, win->h = h, win->w = w, win->c = c;
  win->kh = kh, win->kw = kw, win->sh = sh, win->sw = sw;
  SF_RETURN_IF_ERROR(WindowedOutputSize(h, kh, sh, padding, &win->oh, &top, &bottom));
  SF_RETURN_IF_ERROR(WindowedOutputSize(w, kw, sw, padding, &win->ow, &left, &right));
  constexpr int64_t kIntMax = (int64_t{1} << 31) - 1;
  for (int64_t v : {n, h, w, c, kh, kw}) {
    if (v > kIntMax) return absl::UnimplementedError("tensor dimensions above 2^31 on a GPU");
  }
  win->pad_h = top;
  win->pad_w = left;
  win->pad_bottom = bottom;
  win->pad_right = right;
  return absl::OkStatus();
}

// Fills `t` (device memory) with zeros: the result of an empty sum.
absl::Status Zero(OpKernelContext* ctx, Tensor* t) {
  return gpu::CudaStatus(cudaMemsetAsync(t->raw_data(), 0, t->TotalBytes(), gpu::StreamOf(ctx)),
                         "cudaMemsetAsync");
}

// `x` [n, h, w, c] copied into the top left of zeros of the padded window's size (uneven SAME).
absl::StatusOr<Tensor> PadInput(OpKernelContext* ctx, const Tensor& x, const Window& win) {
  const Window p = win.Padded();
  Tensor padded;
  SF_RETURN_IF_ERROR(ctx->allocate_temp(DT_FLOAT, TensorShape({p.n, p.h, p.w, p.c}), &padded));
  SF_RETURN_IF_ERROR(gpu::CudaStatus(
      cudaMemsetAsync(padded.raw_data(), 0, padded.TotalBytes(), gpu::StreamOf(ctx)), "memset"));
  SF_RETURN_IF_ERROR(gpu::CudaStatus(
      gpu::LaunchCopyRegion(x.data<float>(), win.h, win.w, padded.data<float>(), p.h, p.w, win.n,
                            win.c, win.h, win.w, gpu::StreamOf(ctx)),
      "LaunchCopyRegion(pad)"));
  return padded;
}

absl::StatusOr<Tensor> Workspace(OpKernelContext* ctx, size_t bytes) {
  Tensor t;
  SF_RETURN_IF_ERROR(ctx->allocate_temp(
      DT_UINT8, TensorShape({static_cast<int64_t>(std::max<size_t>(bytes, 1))}), &t));
  return t;
}

// Convolutions whose larger activation (input or output) has fewer elements stay NHWC in strict
// float32: the transposes' launches then cost more than NCHW's faster algorithms save.
constexpr int64_t kNchwMinElements = int64_t{4} << 20;

// The layout cuDNN computes a convolution in (see the top of the file).
cudnnTensorFormat_t ConvLayout(bool tf32, const Window& win, int64_t out_c) {
  // Read on every call (a getenv), so that a test can try both layouts in one process.
  const char* env = std::getenv("SHARDFLOW_CUDNN_LAYOUT");
  const int forced = env == nullptr               ? 0
                     : std::string(env) == "nchw" ? 1
                     : std::string(env) == "nhwc" ? 2
                                                  : 0;
  if (forced != 0) return forced == 1 ? CUDNN_TENSOR_NCHW : CUDNN_TENSOR_NHWC;
  const int64_t largest = std::max(win.n * win.h * win.w * win.c, win.n * win.oh * win.ow * out_c);
  return tf32 || largest < kNchwMinElements ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

// The filter [kh, kw, in, out] <-> cuDNN's [out, kh, kw, in] (NHWC) or [out, in, kh, kw] (NCHW).
absl::Status FilterToCudnn(OpKernelContext* ctx, const Tensor& hwio, cudnnTensorFormat_t layout,
                           Tensor* out) {
  const int64_t dims[4] = {hwio.dim_size(0), hwio.dim_size(1), hwio.dim_size(2), hwio.dim_size(3)};
  const bool nchw = layout == CUDNN_TENSOR_NCHW;
  const int nhwc_perm[4] = {3, 0, 1, 2}, nchw_perm[4] = {3, 2, 0, 1};
  const int* perm = nchw ? nchw_perm : nhwc_perm;
  SF_RETURN_IF_ERROR(ctx->allocate_temp(
      DT_FLOAT, TensorShape({dims[perm[0]], dims[perm[1]], dims[perm[2]], dims[perm[3]]}), out));
  return gpu::CudaStatus(
      gpu::LaunchTranspose(hwio.raw_data(), out->raw_data(), 4, dims, perm, 4, gpu::StreamOf(ctx)),
      "LaunchTranspose(filter)");
}

// cuDNN's filter (FilterToCudnn's layout) back into [kh, kw, in, out].
absl::Status FilterFromCudnn(OpKernelContext* ctx, const Tensor& from, cudnnTensorFormat_t layout,
                             Tensor* hwio) {
  const int64_t dims[4] = {from.dim_size(0), from.dim_size(1), from.dim_size(2), from.dim_size(3)};
  const int nhwc_perm[4] = {1, 2, 3, 0}, nchw_perm[4] = {2, 3, 1, 0};
  return gpu::CudaStatus(gpu::LaunchTranspose(from.raw_data(), hwio->raw_data(), 4, dims,
                                              layout == CUDNN_TENSOR_NCHW ? nchw_perm : nhwc_perm,
                                              4, gpu::StreamOf(ctx)),
                         "LaunchTranspose(filter gradient)");
}

// An NHWC activation [n, h, w, c] as cuDNN reads it in `layout`: itself in NHWC, or when it has
// one channel (the same bytes); else a transposed NCHW copy.
absl::StatusOr<Tensor> ActivationToCudnn(OpKernelContext* ctx, cudnnHandle_t handle,
                                         const Tensor& nhwc, cudnnTensorFormat_t layout) {
  const int64_t n = nhwc.dim_size(0), h = nhwc.dim_size(1), w = nhwc.dim_size(2),
                c = nhwc.dim_size(3);
  if (layout == CUDNN_TENSOR_NHWC || c == 1) return nhwc;
  Tensor nchw;
  SF_RETURN_IF_ERROR(ctx->allocate_temp(DT_FLOAT, TensorShape({n, c, h, w}), &nchw));
  TensorDesc from, to;
  SF_RETURN_IF_ERROR(gpu::CudnnStatus(from.Set(n, h, w, c), "NHWC descriptor"));
  SF_RETURN_IF_ERROR(gpu::CudnnStatus(to.Set(n, h, w, c, CUDNN_TENSOR_NCHW), "NCHW descriptor"));
  const float one = 1.f, zero = 0.f;
  SF_RETURN_IF_ERROR(gpu::CudnnStatus(
      cudnnTransformTensor(handle, &one, from.d, nhwc.raw_data(), &zero, to.d, nchw.raw_data()),
      "cudnnTransformTensor(NHWC to NCHW)"));
  return nchw;
}

// Where cuDNN writes an activation that the op returns as the NHWC tensor `nhwc`: into it
// directly (NHWC, or one channel), or into an NCHW scratch tensor that ActivationFromCudnn then
// transposes into `nhwc`.
absl::StatusOr<Tensor> CudnnOutput(OpKernelContext* ctx, const Tensor& nhwc,
                                   cudnnTensorFormat_t layout) {
  if (layout == CUDNN_TENSOR_NHWC || nhwc.dim_size(3) == 1) return nhwc;
  Tensor nchw;
  SF_RETURN_IF_ERROR(ctx->allocate_temp(
      DT_FLOAT,
      TensorShape({nhwc.dim_size(0), nhwc.dim_size(3), nhwc.dim_size(1), nhwc.dim_size(2)}),
      &nchw));
  return nchw;
}

absl::Status ActivationFromCudnn(cudnnHandle_t handle, const Tensor& written, Tensor* nhwc) {
  if (written.raw_data() == nhwc->raw_data()) return absl::OkStatus();
  const int64_t n = nhwc->dim_size(0), h = nhwc->dim_size(1), w = nhwc->dim_size(2),
                c = nhwc->dim_size(3);
  TensorDesc from, to;
  SF_RETURN_IF_ERROR(gpu::CudnnStatus(from.Set(n, h, w, c, CUDNN_TENSOR_NCHW), "NCHW descriptor"));
  SF_RETURN_IF_ERROR(gpu::CudnnStatus(to.Set(n, h, w, c), "NHWC descriptor"));
  const float one = 1.f, zero = 0.f;
  return gpu::CudnnStatus(
      cudnnTransformTensor(handle, &one, from.d, written.raw_data(), &zero, to.d, nhwc->raw_data()),
      "cudnnTransformTensor(NCHW to NHWC)");
}

// Descriptors of one convolution in `layout`: x [n,h,w,c] (or [n,c,h,w]), filter [out,kh,kw,c]
// (or [out,c,kh,kw]), y [n,oh,ow,out] (or [n,out,oh,ow]).
struct ConvSetup {
  TensorDesc x, y;
  FilterDesc f;
  ConvDesc conv;
  cudnnTensorFormat_t layout = CUDNN_TENSOR_NHWC;
  absl::Status Init(const Window& win, int64_t out_channels, bool tf32) {
    layout = ConvLayout(tf32, win, out_channels);
    SF_RETURN_IF_ERROR(gpu::CudnnStatus(x.Set(win.n, win.h, win.w, win.c, layout), "x descriptor"));
    SF_RETURN_IF_ERROR(
        gpu::CudnnStatus(y.Set(win.n, win.oh, win.ow, out_channels, layout), "y descriptor"));
    SF_RETURN_IF_ERROR(gpu::CudnnStatus(
        cudnnSetFilter4dDescriptor(f.d, CUDNN_DATA_FLOAT, layout, static_cast<int>(out_channels),
                                   static_cast<int>(win.c), static_cast<int>(win.kh),
                                   static_cast<int>(win.kw)),
        "filter descriptor"));
    SF_RETURN_IF_ERROR(gpu::CudnnStatus(
        cudnnSetConvolution2dDescriptor(conv.d, static_cast<int>(win.pad_h),
                                        static_cast<int>(win.pad_w), static_cast<int>(win.sh),
                                        static_cast<int>(win.sw), 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        "convolution descriptor"));
    return gpu::CudnnStatus(
        cudnnSetConvolutionMathType(conv.d, tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
        "cudnnSetConvolutionMathType");
  }
};

// Picks the first algorithm of cuDNN's ranking that succeeded and whose workspace fits.
template <typename Perf>
absl::StatusOr<Perf> PickFrom(const Perf* perfs, int count, const char* what) {
  for (int i = 0; i < count; ++i) {
    if (perfs[i].status == CUDNN_STATUS_SUCCESS && perfs[i].memory <= kMaxWorkspace) {
      return perfs[i];
    }
  }
  return absl::InternalError(absl::StrCat("cuDNN offers no ", what,
                                          " algorithm for this convolution within a ",
                                          kMaxWorkspace >> 20, " MiB workspace"));
}

// Algorithms are chosen by timing them once per shape (cudnnFind*, as TensorFlow's autotuning
// and PyTorch's cudnn.benchmark do); $SHARDFLOW_CUDNN_FIND=0 takes cuDNN's heuristics instead.
bool UseFind() {
  static const bool find = [] {
    const char* env = std::getenv("SHARDFLOW_CUDNN_FIND");
    return env == nullptr || std::string(env) != "0";
  }();
  return find;
}

// The algorithm cache's key: the shape, the math and the layout the setup chose.
std::string AlgoKey(const Window& w, int64_t out_c, bool tf32, cudnnTensorFormat_t layout) {
  return absl::StrCat(w.n, ",", w.h, ",", w.w, ",", w.c, ",", w.kh, ",", w.kw, ",", w.sh, ",", w.sw,
                      ",", w.pad_h, ",", w.pad_w, ",", out_c, ",", tf32, ",",
                      static_cast<int>(layout));
}

// cuDNN's choice for one convolution shape, asked once per process (the heuristics query costs
// more than launching the convolution of a small layer). `query` fills perfs and count.
template <typename Perf, int kCount, typename Query>
absl::StatusOr<Perf> Pick(const std::string& key, const char* what, Query query) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* cache = new std::map<std::string, Perf>;
  {
    absl::MutexLock lock(&mu);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  Perf perfs[kCount];
  int count = 0;
  SF_RETURN_IF_ERROR(query(perfs, &count));
  SF_ASSIGN_OR_RETURN(Perf perf, PickFrom(perfs, count, what));
  absl::MutexLock lock(&mu);
  (*cache)[key] = perf;
  return perf;
}

absl::Status ConvForward(OpKernelContext* ctx, const Window& win, const Tensor& x,
                         const Tensor& filter_hwio, Tensor* y) {
  const int64_t out_c = filter_hwio.dim_size(3);
  ConvSetup setup;
  SF_RETURN_IF_ERROR(setup.Init(win, out_c, gpu::AllowTf32(ctx)));
  Tensor filter;
  SF_RETURN_IF_ERROR(FilterToCudnn(ctx, filter_hwio, setup.layout, &filter));
  SF_ASSIGN_OR_RETURN(gpu::CudnnHandle handle, gpu::CudnnHandle::Get(gpu::StreamOf(ctx)));
  SF_ASSIGN_OR_RETURN(Tensor cx, ActivationToCudnn(ctx, handle.get(), x, setup.layout));
  SF_ASSIGN_OR_RETURN(Tensor cy, CudnnOutput(ctx, *y, setup.layout));
  SF_ASSIGN_OR_RETURN(auto perf,
                      (Pick<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
                          AlgoKey(win, out_c, gpu::AllowTf32(ctx), setup.layout), "forward",
                          [&](cudnnConvolutionFwdAlgoPerf_t* perfs, int* count) {
                            if (UseFind()) {
                              return gpu::CudnnStatus(
                                  cudnnFindConvolutionForwardAlgorithm(
                                      handle.get(), setup.x.d, setup.f.d, setup.conv.d, setup.y.d,
                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, count, perfs),
                                  "cudnnFindConvolutionForwardAlgorithm");
                            }
                            return gpu::CudnnStatus(
                                cudnnGetConvolutionForwardAlgorithm_v7(
                                    handle.get(), setup.x.d, setup.f.d, setup.conv.d, setup.y.d,
                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, count, perfs),
                                "cudnnGetConvolutionForwardAlgorithm_v7");
                          })));
  SF_RETURN_IF_ERROR(gpu::CudnnStatus(cudnnSetConvolutionMathType(setup.conv.d, perf.mathType),
                                      "cudnnSetConvolutionMathType"));
  SF_ASSIGN_OR_RETURN(Tensor ws, Workspace(ctx, perf.memory));
  const float one = 1.f, zero = 0.f;
  SF_RETURN_IF_ERROR(gpu::CudnnStatus(
      cudnnConvolutionForward(handle.get(), &one, setup.x.d, cx.raw_data(), setup.f.d,
                              filter.raw_data(), setup.conv.d, perf.algo, ws.raw_data(),
                              perf.memory, &zero, setup.y.d, cy.raw_data()),
      "cudnnConvolutionForward"));
  return ActivationFromCudnn(handle.get(), cy, y);
}

class ConvBase : public OpKernel {
 public:
  explicit ConvBase(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = ReadStrides(c, "strides", &sh_, &sw_);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = CheckPadding(padding_);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  // input [n,h,w,c] and filter [kh,kw,c,out].
  absl::Status Geometry(const TensorShape& input, const TensorShape& filter, Window* win) const {
    if (input.rank() != 4 || filter.rank() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("input must be 4-D NHWC and filter 4-D [height, width, in, out]; got ",
                       input.DebugString(), " and ", filter.DebugString()));
    }
    if (input.dim(3) != filter.dim(2)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input has ", input.dim(3), " channels but the filter ",
                       filter.DebugString(), " expects ", filter.dim(2)));
    }
    return MakeWindow(input.dim(0), input.dim(1), input.dim(2), input.dim(3), filter.dim(0),
                      filter.dim(1), sh_, sw_, padding_, win);
  }
  // Geometry, for a gradient: out_backprop `dy` must have the convolution's output shape.
  absl::Status GradGeometry(const TensorShape& input, const TensorShape& filter, const Tensor& dy,
                            Window* win) const {
    SF_RETURN_IF_ERROR(Geometry(input, filter, win));
    const int64_t out_c = filter.dim(3);
    if (dy.shape() == TensorShape({win->n, win->oh, win->ow, out_c})) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("out_backprop has shape ", dy.shape().DebugString(), "; the convolution of ",
                     input.DebugString(), " with ", filter.DebugString(), " has output [", win->n,
                     ",", win->oh, ",", win->ow, ",", out_c, "]"));
  }
  int64_t sh_ = 1, sw_ = 1;
  std::string padding_;
};

class GpuConv2DOp : public ConvBase {
 public:
  explicit GpuConv2DOp(OpKernelConstruction* c) : ConvBase(c) {
    if (c->def().op() == "_FusedConv2D") {
      std::string activation;
      absl::Status s = c->GetAttr("activation", &activation);
      if (s.ok()) s = CheckFusedActivation(activation);
      if (!s.ok()) c->SetStatus(s);
      fused_ = true;
      activation_ = activation == "Relu"      ? 1
                    : activation == "Tanh"    ? 2
                    : activation == "Sigmoid" ? 3
                                              : 0;
    }
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    Window win;
    OP_REQUIRES_OK(ctx, Geometry(x.shape(), filter.shape(), &win));
    const int64_t out_c = filter.dim_size(3);
    if (fused_) {
      const Tensor& bias = ctx->input(2);
      OP_REQUIRES(ctx, bias.dims() == 1 && bias.dim_size(0) == out_c,
                  absl::InvalidArgumentError(absl::StrCat("bias must be a vector of ", out_c,
                                                          " values (the output channels), got ",
                                                          bias.shape().DebugString())));
    }
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({win.n, win.oh, win.ow, out_c}), &y));
    if (y->NumElements() == 0) return;
    if (x.NumElements() == 0 || filter.NumElements() == 0) {
      OP_REQUIRES_OK(ctx, Zero(ctx, y));
    } else if (win.uneven()) {
      auto padded = PadInput(ctx, x, win);
      OP_REQUIRES_OK(ctx, padded.status());
      OP_REQUIRES_OK(ctx, ConvForward(ctx, win.Padded(), *padded, filter, y));
    } else {
      OP_REQUIRES_OK(ctx, ConvForward(ctx, win, x, filter, y));
    }
    if (fused_) {
      OP_REQUIRES_CUDA(
          ctx, gpu::LaunchBiasActivation(y->data<float>(), ctx->input(2).data<float>(),
                                         y->NumElements(), out_c, activation_, gpu::StreamOf(ctx)));
    }
  }

 private:
  bool fused_ = false;
  int activation_ = 0;
};

// A 4-element int32 shape from a host-memory input.
absl::StatusOr<TensorShape> ShapeInput(const Tensor& t, const char* what) {
  if (t.dims() != 1 || t.NumElements() != 4 || t.dtype() != DT_INT32) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be an int32 vector of 4 sizes, got ", t.DebugString(4)));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < 4; ++i) {
    const int32_t d = t.data<int32_t>()[i];
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, " has a negative size ", d));
    dims.push_back(d);
  }
  return TensorShape(dims);
}

class GpuConv2DBackpropInputOp : public ConvBase {
 public:
  using ConvBase::ConvBase;
  void Compute(OpKernelContext* ctx) override {
    auto input_shape = ShapeInput(ctx->input(0), "input_sizes");
    OP_REQUIRES_OK(ctx, input_shape.status());
    const Tensor& filter_hwio = ctx->input(1);
    const Tensor& dy = ctx->input(2);
    Window full;
    OP_REQUIRES_OK(ctx, GradGeometry(*input_shape, filter_hwio.shape(), dy, &full));
    const int64_t out_c = filter_hwio.dim_size(3);
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *input_shape, &out));
    if (out->NumElements() == 0) return;
    if (dy.NumElements() == 0 || filter_hwio.NumElements() == 0) {
      OP_REQUIRES_OK(ctx, Zero(ctx, out));
      return;
    }
    // Uneven padding: the gradient of the padded input, whose top left is cropped into `out`.
    const Window win = full.uneven() ? full.Padded() : full;
    Tensor padded_dx;
    Tensor* dx = out;
    if (full.uneven()) {
      OP_REQUIRES_OK(
          ctx, ctx->allocate_temp(DT_FLOAT, TensorShape({win.n, win.h, win.w, win.c}), &padded_dx));
      dx = &padded_dx;
    }
    ConvSetup setup;
    OP_REQUIRES_OK(ctx, setup.Init(win, out_c, gpu::AllowTf32(ctx)));
    Tensor filter;
    OP_REQUIRES_OK(ctx, FilterToCudnn(ctx, filter_hwio, setup.layout, &filter));
    auto handle = gpu::CudnnHandle::Get(gpu::StreamOf(ctx));
    OP_REQUIRES_OK(ctx, handle.status());
    auto cdy = ActivationToCudnn(ctx, handle->get(), dy, setup.layout);
    OP_REQUIRES_OK(ctx, cdy.status());
    auto cdx = CudnnOutput(ctx, *dx, setup.layout);
    OP_REQUIRES_OK(ctx, cdx.status());
    auto perf = Pick<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        AlgoKey(win, out_c, gpu::AllowTf32(ctx), setup.layout), "backward-data",
        [&](cudnnConvolutionBwdDataAlgoPerf_t* perfs, int* count) {
          if (UseFind()) {
            return gpu::CudnnStatus(
                cudnnFindConvolutionBackwardDataAlgorithm(
                    handle->get(), setup.f.d, setup.y.d, setup.conv.d, setup.x.d,
                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, count, perfs),
                "cudnnFindConvolutionBackwardDataAlgorithm");
          }
          return gpu::CudnnStatus(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                                      handle->get(), setup.f.d, setup.y.d, setup.conv.d, setup.x.d,
                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, count, perfs),
                                  "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        });
    OP_REQUIRES_OK(ctx, perf.status());
    OP_REQUIRES_CUDNN(ctx, cudnnSetConvolutionMathType(setup.conv.d, perf->mathType));
    auto ws = Workspace(ctx, perf->memory);
    OP_REQUIRES_OK(ctx, ws.status());
    const float one = 1.f, zero = 0.f;
    OP_REQUIRES_CUDNN(ctx, cudnnConvolutionBackwardData(
                               handle->get(), &one, setup.f.d, filter.raw_data(), setup.y.d,
                               cdy->raw_data(), setup.conv.d, perf->algo, ws->raw_data(),
                               perf->memory, &zero, setup.x.d, cdx->raw_data()));
    OP_REQUIRES_OK(ctx, ActivationFromCudnn(handle->get(), *cdx, dx));
    if (full.uneven()) {
      OP_REQUIRES_CUDA(
          ctx, gpu::LaunchCopyRegion(dx->data<float>(), win.h, win.w, out->data<float>(), full.h,
                                     full.w, full.n, full.c, full.h, full.w, gpu::StreamOf(ctx)));
    }
  }
};

class GpuConv2DBackpropFilterOp : public ConvBase {
 public:
  using ConvBase::ConvBase;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    auto filter_shape = ShapeInput(ctx->input(1), "filter_sizes");
    OP_REQUIRES_OK(ctx, filter_shape.status());
    const Tensor& dy = ctx->input(2);
    Window full;
    OP_REQUIRES_OK(ctx, GradGeometry(x.shape(), *filter_shape, dy, &full));
    // Uneven padding: over the input padded at the bottom and right.
    const Window win = full.uneven() ? full.Padded() : full;
    const int64_t out_c = filter_shape->dim(3);
    Tensor* dw;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, *filter_shape, &dw));
    if (dw->NumElements() == 0) return;
    if (dy.NumElements() == 0 || x.NumElements() == 0) {
      OP_REQUIRES_OK(ctx, Zero(ctx, dw));
      return;
    }
    ConvSetup setup;
    OP_REQUIRES_OK(ctx, setup.Init(win, out_c, gpu::AllowTf32(ctx)));
    // cuDNN writes [out, kh, kw, in] or [out, in, kh, kw]; transposed back into dw below.
    Tensor dw_cudnn;
    const bool nchw = setup.layout == CUDNN_TENSOR_NCHW;
    OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT,
                                           nchw ? TensorShape({out_c, win.c, win.kh, win.kw})
                                                : TensorShape({out_c, win.kh, win.kw, win.c}),
                                           &dw_cudnn));
    auto handle = gpu::CudnnHandle::Get(gpu::StreamOf(ctx));
    OP_REQUIRES_OK(ctx, handle.status());
    Tensor input = x;
    if (full.uneven()) {
      auto padded = PadInput(ctx, x, full);
      OP_REQUIRES_OK(ctx, padded.status());
      input = *padded;
    }
    auto cx = ActivationToCudnn(ctx, handle->get(), input, setup.layout);
    OP_REQUIRES_OK(ctx, cx.status());
    auto cdy = ActivationToCudnn(ctx, handle->get(), dy, setup.layout);
    OP_REQUIRES_OK(ctx, cdy.status());
    auto perf = Pick<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        AlgoKey(win, out_c, gpu::AllowTf32(ctx), setup.layout), "backward-filter",
        [&](cudnnConvolutionBwdFilterAlgoPerf_t* perfs, int* count) {
          if (UseFind()) {
            return gpu::CudnnStatus(
                cudnnFindConvolutionBackwardFilterAlgorithm(
                    handle->get(), setup.x.d, setup.y.d, setup.conv.d, setup.f.d,
                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, count, perfs),
                "cudnnFindConvolutionBackwardFilterAlgorithm");
          }
          return gpu::CudnnStatus(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                                      handle->get(), setup.x.d, setup.y.d, setup.conv.d, setup.f.d,
                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, count, perfs),
                                  "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        });
    OP_REQUIRES_OK(ctx, perf.status());
    OP_REQUIRES_CUDNN(ctx, cudnnSetConvolutionMathType(setup.conv.d, perf->mathType));
    auto ws = Workspace(ctx, perf->memory);
    OP_REQUIRES_OK(ctx, ws.status());
    const float one = 1.f, zero = 0.f;
    OP_REQUIRES_CUDNN(ctx, cudnnConvolutionBackwardFilter(
                               handle->get(), &one, setup.x.d, cx->raw_data(), setup.y.d,
                               cdy->raw_data(), setup.conv.d, perf->algo, ws->raw_data(),
                               perf->memory, &zero, setup.f.d, dw_cudnn.raw_data()));
    OP_REQUIRES_OK(ctx, FilterFromCudnn(ctx, dw_cudnn, setup.layout, dw));
  }
};

// ---- pooling -----------------------------------------------------------------------------------

class PoolBase : public OpKernel {
 public:
  PoolBase(OpKernelConstruction* c, cudnnPoolingMode_t mode) : OpKernel(c), mode_(mode) {
    absl::Status s = ReadStrides(c, "ksize", &kh_, &kw_);
    if (s.ok()) s = ReadStrides(c, "strides", &sh_, &sw_);
    if (s.ok()) s = c->GetAttr("padding", &padding_);
    if (s.ok()) s = CheckPadding(padding_);
    if (!s.ok()) c->SetStatus(s);
  }

 protected:
  absl::Status Setup(const TensorShape& input, Window* win, PoolDesc* pool, TensorDesc* x,
                     TensorDesc* y) const {
    if (input.rank() != 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("input must be 4-D NHWC, got ", input.DebugString()));
    }
    SF_RETURN_IF_ERROR(MakeWindow(input.dim(0), input.dim(1), input.dim(2), input.dim(3), kh_, kw_,
                                  sh_, sw_, padding_, win));
    SF_RETURN_IF_ERROR(gpu::CudnnStatus(
        cudnnSetPooling2dDescriptor(pool->d, mode_, CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(kh_),
                                    static_cast<int>(kw_), static_cast<int>(win->pad_h),
                                    static_cast<int>(win->pad_w), static_cast<int>(sh_),
                                    static_cast<int>(sw_)),
        "cudnnSetPooling2dDescriptor"));
    SF_RETURN_IF_ERROR(gpu::CudnnStatus(x->Set(win->n, win->h, win->w, win->c), "x descriptor"));
    return gpu::CudnnStatus(y->Set(win->n, win->oh, win->ow, win->c), "y descriptor");
  }
  const cudnnPoolingMode_t mode_;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1;
  std::string padding_;
};

gpu::MaxPoolGradShape PoolShape(const Window& w) {
  return {w.n, w.h, w.w, w.c, w.oh, w.ow, w.kh, w.kw, w.sh, w.sw, w.pad_h, w.pad_w};
}

cudnnPoolingMode_t ModeOf(const std::string& op) {
  return op.rfind("MaxPool", 0) == 0 ? CUDNN_POOLING_MAX
                                     : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
}

class GpuPoolOp : public PoolBase {
 public:
  explicit GpuPoolOp(OpKernelConstruction* c) : PoolBase(c, ModeOf(c->def().op())) {}
  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    Window win;
    PoolDesc pool;
    TensorDesc xd, yd;
    OP_REQUIRES_OK(ctx, Setup(x.shape(), &win, &pool, &xd, &yd));
    Tensor* y;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({win.n, win.oh, win.ow, win.c}), &y));
    if (y->NumElements() == 0) return;
    if (win.uneven()) {  // cuDNN pads symmetrically: our own kernel
      OP_REQUIRES_CUDA(ctx,
                       gpu::LaunchPoolForward(x.data<float>(), y->data<float>(), PoolShape(win),
                                              mode_ == CUDNN_POOLING_MAX, gpu::StreamOf(ctx)));
      return;
    }
    auto handle = gpu::CudnnHandle::Get(gpu::StreamOf(ctx));
    OP_REQUIRES_OK(ctx, handle.status());
    const float one = 1.f, zero = 0.f;
    OP_REQUIRES_CUDNN(ctx, cudnnPoolingForward(handle->get(), pool.d, &one, xd.d, x.raw_data(),
                                               &zero, yd.d, y->raw_data()));
  }
};

// MaxPoolGrad(orig_input, orig_output, grad) and AvgPoolGrad(orig_input_shape, grad).
class GpuPoolGradOp : public PoolBase {
 public:
  explicit GpuPoolGradOp(OpKernelConstruction* c) : PoolBase(c, ModeOf(c->def().op())) {}
  void Compute(OpKernelContext* ctx) override {
    const bool max = mode_ == CUDNN_POOLING_MAX;
    TensorShape input_shape;
    if (max) {
      input_shape = ctx->input(0).shape();
    } else {
      auto s = ShapeInput(ctx->input(0), "orig_input_shape");
      OP_REQUIRES_OK(ctx, s.status());
      input_shape = *s;
    }
    const Tensor& dy = ctx->input(max ? 2 : 1);
    Window win;
    PoolDesc pool;
    TensorDesc xd, yd;
    OP_REQUIRES_OK(ctx, Setup(input_shape, &win, &pool, &xd, &yd));
    const TensorShape out_shape({win.n, win.oh, win.ow, win.c});
    OP_REQUIRES(ctx, dy.shape() == out_shape,
                absl::InvalidArgumentError(absl::StrCat("grad has shape ", dy.shape().DebugString(),
                                                        "; the pooling's output is ",
                                                        out_shape.DebugString())));
    if (max) {
      OP_REQUIRES(ctx, ctx->input(1).shape() == out_shape,
                  absl::InvalidArgumentError(
                      absl::StrCat("orig_output has shape ", ctx->input(1).shape().DebugString(),
                                   "; the pooling's output is ", out_shape.DebugString())));
    }
    Tensor* dx;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, input_shape, &dx));
    if (dx->NumElements() == 0) return;
    if (dy.NumElements() == 0) {
      OP_REQUIRES_OK(ctx, Zero(ctx, dx));
      return;
    }
    if (max) {
      // Our own kernel: the CPU's tie rule, and much faster than cuDNN's NHWC backward pass.
      OP_REQUIRES_CUDA(
          ctx, gpu::LaunchMaxPoolGrad(ctx->input(0).data<float>(), ctx->input(1).data<float>(),
                                      dy.data<float>(), dx->data<float>(), PoolShape(win),
                                      gpu::StreamOf(ctx)));
      return;
    }
    if (win.uneven()) {
      OP_REQUIRES_CUDA(ctx, gpu::LaunchAvgPoolGrad(dy.data<float>(), dx->data<float>(),
                                                   PoolShape(win), gpu::StreamOf(ctx)));
      return;
    }
    auto handle = gpu::CudnnHandle::Get(gpu::StreamOf(ctx));
    OP_REQUIRES_OK(ctx, handle.status());
    const float one = 1.f, zero = 0.f;
    // Average pooling's gradient reads neither x nor y; cuDNN still takes pointers: dy/dx serve.
    const void* x = max ? ctx->input(0).raw_data() : dx->raw_data();
    const void* y = max ? ctx->input(1).raw_data() : dy.raw_data();
    OP_REQUIRES_CUDNN(
        ctx, cudnnPoolingBackward(handle->get(), pool.d, &one, yd.d, y, yd.d, dy.raw_data(), xd.d,
                                  x, &zero, xd.d, dx->raw_data()));
  }
};

REGISTER_KERNEL(KernelDef("Conv2D").Device(kDeviceGpu).TypeConstraint<float>("T"), GpuConv2DOp);
REGISTER_KERNEL(KernelDef("_FusedConv2D").Device(kDeviceGpu).TypeConstraint<float>("T"),
                GpuConv2DOp);
REGISTER_KERNEL(KernelDef("Conv2DBackpropInput")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("input_sizes"),
                GpuConv2DBackpropInputOp);
REGISTER_KERNEL(KernelDef("Conv2DBackpropFilter")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("filter_sizes"),
                GpuConv2DBackpropFilterOp);
REGISTER_KERNEL(KernelDef("MaxPool").Device(kDeviceGpu).TypeConstraint<float>("T"), GpuPoolOp);
REGISTER_KERNEL(KernelDef("AvgPool").Device(kDeviceGpu).TypeConstraint<float>("T"), GpuPoolOp);
REGISTER_KERNEL(KernelDef("MaxPoolGrad").Device(kDeviceGpu).TypeConstraint<float>("T"),
                GpuPoolGradOp);
REGISTER_KERNEL(KernelDef("AvgPoolGrad")
                    .Device(kDeviceGpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("orig_input_shape"),
                GpuPoolGradOp);

}  // namespace
}  // namespace shardflow
