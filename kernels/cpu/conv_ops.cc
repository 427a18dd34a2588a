// Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter on CPU (float) through oneDNN.
//
// Note [Conv layouts]
// Activations stay NHWC, as the graph holds them: oneDNN's NHWC kernels (brgconv forward, jit
// backward) measured as fast as or faster than its blocked-layout ones at the CNN's sizes once
// the reorders of activations into and out of blocked layouts are counted, so only filters are
// reordered: from [height, width, in, out] into whatever layout the primitive asks for (a few
// microseconds for 5x5x32x64) and, for the filter gradient, back.
//
// The input gradient of a stride-1 convolution is itself a convolution: of out_backprop with the
// filter flipped in space and with in and out swapped, padded by window - 1 - padding. oneDNN's
// forward kernel runs it about twice as fast as its backward-data kernel (9.4 vs 19.7 ms for the
// CNN's second layer at batch 128, one thread), so stride 1 takes that path; larger strides use
// the backward-data primitive.
//
// Each kernel caches its primitives (and reorders) per input shape; they run with a user-owned
// scratchpad allocated per call, so concurrent steps may share them.
//
// Note [bfloat16 convolutions]
// A node the mixed-precision pass marked (kBf16ProductsAttr, core/framework/fused_ops.h) keeps
// fp32 inputs and outputs, but its primitive reads bfloat16: the activations and out_backprop are
// rounded into bfloat16 NHWC copies (RoundedToBf16, Note [bfloat16 copies] in onednn_util.h: a
// tensor the forward convolution and a gradient both read is rounded once), and the filter's
// reorder into the primitive's layout converts it on the way; the primitive accumulates in fp32
// and writes fp32 (oneDNN's avx512_core_bf16 / AMX kernels). Such a node never takes the GEMM
// path below. A convolution whose dot products (kh * kw * cin) are shorter than
// kMinBf16DotLength stays fp32: bf16 kernels gain little on so short a dot product, and rounding
// its large out_backprop costs more than its filter gradient saves. AMD EPYC with AVX512-BF16,
// 2 threads, 2026-11-29: the CNN's 5x5x1 -> 32 first layer (25) at batch 128, forward 1.27 ms
// fp32 vs 1.21 bf16, filter gradient 0.69 vs 0.47 plus ~1 ms to round out_backprop; ResNet-50's
// 7x7x3 -> 64 first layer (147) at batch 32, forward 34.5 vs 24.7 ms, filter gradient 44 vs 23.5
// plus 4.5 ms to round out_backprop. Where oneDNN has no bf16
// kernels (OneDnnHasBf16: before AVX-512; the pass marks nothing there unless
// SHARDFLOW_NATIVE_BF16=1 forces it) a marked convolution computes in plain fp32.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/framework/fused_ops.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/windowed_output.h"
#include "core/platform/status.h"
#include "kernels/cpu/kernel_checks.h"
#include "kernels/cpu/onednn_util.h"

namespace shardflow {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr memory::data_type kF32 = memory::data_type::f32;

// Sizes of one convolution; filter [kh, kw, cin, cout], output [n, oh, ow, cout].
struct ConvGeometry {
  int64_t n, h, w, cin, kh, kw, cout, oh, ow;
  int64_t sh, sw, pad_top, pad_left, pad_bottom, pad_right;
  // What the primitives read their activations, filter and out_backprop as (Note [bfloat16
  // convolutions]); the tensors themselves are fp32.
  memory::data_type product = kF32;

  using Key = std::array<int64_t, 7>;
  Key key() const { return {n, h, w, cin, kh, kw, cout}; }
  TensorShape input_shape() const { return TensorShape({n, h, w, cin}); }
  TensorShape filter_shape() const { return TensorShape({kh, kw, cin, cout}); }
  TensorShape output_shape() const { return TensorShape({n, oh, ow, cout}); }

  // oneDNN's logical dims are NCHW / OIHW whatever the layout.
  memory::desc src(Tag tag = Tag::nhwc) const { return memory::desc({n, cin, h, w}, kF32, tag); }
  memory::desc dst(Tag tag = Tag::nhwc) const { return memory::desc({n, cout, oh, ow}, kF32, tag); }
  memory::desc filter(Tag tag) const { return memory::desc({cout, cin, kh, kw}, kF32, tag); }
  // The same as the primitives read them.
  memory::desc product_src() const { return memory::desc({n, cin, h, w}, product, Tag::nhwc); }
  memory::desc product_dst() const { return memory::desc({n, cout, oh, ow}, product, Tag::nhwc); }
  memory::desc product_filter() const {
    return memory::desc({cout, cin, kh, kw}, product, Tag::any);
  }
  memory::dims strides() const { return {sh, sw}; }
  memory::dims pad_l() const { return {pad_top, pad_left}; }
  memory::dims pad_r() const { return {pad_bottom, pad_right}; }
};

absl::Status MakeGeometry(const TensorShape& in, const TensorShape& filter, int64_t sh, int64_t sw,
                          const std::string& padding, ConvGeometry* g) {
  SF_RETURN_IF_ERROR(CheckConv2DShapes(in, filter));
  *g = ConvGeometry{in.dim(0),
                    in.dim(1),
                    in.dim(2),
                    in.dim(3),
                    filter.dim(0),
                    filter.dim(1),
                    filter.dim(3),
                    0,
                    0,
                    sh,
                    sw,
                    0,
                    0,
                    0,
                    0};
  SF_RETURN_IF_ERROR(
      WindowedOutputSize(g->h, g->kh, sh, padding, &g->oh, &g->pad_top, &g->pad_bottom));
  SF_RETURN_IF_ERROR(
      WindowedOutputSize(g->w, g->kw, sw, padding, &g->ow, &g->pad_left, &g->pad_right));
  // With one output position along a dimension its stride is never used; oneDNN refuses strides
  // beyond int32 (a stride of 2^40 failed "could not create a descriptor" where TF's output is
  // one position), so it is given the smallest stride that still makes one position.
  if (g->oh == 1) g->sh = std::max<int64_t>(1, g->h + g->pad_top + g->pad_bottom - g->kh + 1);
  if (g->ow == 1) g->sw = std::max<int64_t>(1, g->w + g->pad_left + g->pad_right - g->kw + 1);
  return absl::OkStatus();
}

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A reorder between two layouts, or nothing when they are the same.
struct Reorder {
  std::optional<dnnl::reorder::primitive_desc> pd;
  std::optional<dnnl::reorder> prim;

  static Reorder Make(const memory::desc& from, const memory::desc& to) {
    Reorder r;
    if (from == to) return r;
    r.pd.emplace(CpuEngine(), from, CpuEngine(), to, UserScratchpad());
    r.prim.emplace(*r.pd);
    return r;
  }
  size_t scratch_bytes() const { return pd ? pd->scratchpad_desc().get_size() : 0; }
};

// What one call needs besides its inputs and outputs: scratchpad and filter buffers.
class CallBuffers {
 public:
  explicit CallBuffers(OpKernelContext* ctx) : ctx_(ctx) {}
  // `bytes` of temporary memory, valid until this object is destroyed.
  absl::StatusOr<void*> Get(size_t bytes) {
    temps_.emplace_back();
    SF_RETURN_IF_ERROR(ctx_->allocate_temp(
        DT_UINT8, TensorShape({static_cast<int64_t>(std::max<size_t>(bytes, 64))}),
        &temps_.back()));
    return temps_.back().raw_data();
  }

 private:
  OpKernelContext* ctx_;
  std::vector<Tensor> temps_;
};

void Run(dnnl::stream& stream, const Reorder& r, const memory& from, const memory& to,
         const memory& scratch) {
  r.prim->execute(stream,
                  {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch}});
}

// What a primitive reading `md` gets for the fp32 tensor `t`: `t`'s data, or, where `md` is
// bfloat16, the data of `t`'s bfloat16 copy, held in *hold (Note [bfloat16 convolutions]).
absl::StatusOr<void*> ProductData(const memory::desc& md, const Tensor& t, Tensor* hold) {
  if (md.data_type() == kF32) return const_cast<void*>(t.raw_data());
  SF_ASSIGN_OR_RETURN(*hold, RoundedToBf16(t));
  return hold->raw_data();
}

// What a forward kernel knows of a filter to reuse its reordered copy (FilterCache): a Const (a
// frozen graph; attr _filter_is_constant) never changes; otherwise a buffer's content version
// (Tensor::content_version) identifies the bytes, so a variable read twice without a write in
// between (inference) is reordered once.
struct FilterId {
  bool constant = false;
  uint64_t version = 0;  // 0: unknown, never cached
  const void* data = nullptr;

  static FilterId Of(const Tensor& filter, bool constant) {
    return FilterId{constant, filter.content_version(), filter.raw_data()};
  }
  bool operator==(const FilterId& o) const {
    return constant == o.constant && version == o.version && data == o.data;
  }
};

// The filters a forward convolution kernel keeps reordered into its primitives' layouts between
// calls: at most kSlots (the least recently used is replaced), whatever the number of input shapes
// the kernel meets, so memory stays bounded. A filter is kept when it is constant or the same as
// the previous call's: training writes its filters every step, and keeping those would only hold
// memory. Thread-safe; a call holds a reference to the copy it uses, so replacing a slot never
// frees memory another call still reads.
class FilterCache {
 public:
  static constexpr int kSlots = 2;

  // The kept copy of filter `id` in layout `md` into *hold (true); else false, with *keep telling
  // whether a copy made now is worth keeping (Keep): a constant, or the previous call's filter.
  bool Find(const FilterId& id, const dnnl::memory::desc& md, Tensor* hold, bool* keep) {
    absl::MutexLock lock(&mu_);
    const bool cacheable = id.constant || id.version != 0;
    *keep = cacheable && (id.constant || previous_ == id);
    previous_ = id;
    if (!cacheable) return false;
    for (Slot& s : slots_) {
      if (s.weights.IsInitialized() && s.id == id && s.md == md) {
        s.used = ++clock_;
        *hold = s.weights;
        return true;
      }
    }
    return false;
  }
  void Keep(const FilterId& id, const dnnl::memory::desc& md, const Tensor& weights) {
    absl::MutexLock lock(&mu_);
    Slot* victim = &slots_[0];
    for (Slot& s : slots_) {
      if (s.used < victim->used) victim = &s;
    }
    *victim = Slot{id, md, weights, ++clock_};
  }

 private:
  struct Slot {
    FilterId id;
    dnnl::memory::desc md;
    Tensor weights;
    uint64_t used = 0;
  };
  absl::Mutex mu_;
  std::array<Slot, kSlots> slots_ ABSL_GUARDED_BY(mu_);
  FilterId previous_ ABSL_GUARDED_BY(mu_);  // the filter of the call before
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
};

// A forward call's filter and the cache that may hold its reordered copy (null: none).
struct CachedFilter {
  FilterCache* cache = nullptr;
  FilterId id;
};

// The common part of the three kernels: attrs, geometry, the primitive cache and error handling.
template <typename Entry>
class ConvOpBase : public OpKernel {
 public:
  explicit ConvOpBase(OpKernelConstruction* c) : OpKernel(c) {
    absl::Status s = ReadConv2DStrides(c, &sh_, &sw_, &padding_);
    if (!s.ok()) {
      c->SetStatus(s);
      return;
    }
    // Set by the remapping pass when the filter is a Const (absent: false).
    if (!c->GetAttr("_filter_is_constant", &constant_filter_).ok()) constant_filter_ = false;
    if (!c->GetAttr(kBf16ProductsAttr, &bf16_).ok()) bf16_ = false;
  }

  void Compute(OpKernelContext* ctx) final {
    try {
      ComputeConv(ctx);
    } catch (const dnnl::error& e) {
      ctx->SetStatus(absl::InternalError(absl::StrCat("oneDNN: ", e.what())));
    }
  }

 protected:
  virtual void ComputeConv(OpKernelContext* ctx) = 0;
  virtual std::unique_ptr<Entry> MakeEntry(const ConvGeometry& g) const = 0;

  // The cached primitives for `g`, made on first use. Entries are never removed, so the
  // reference stays valid.
  const Entry& GetEntry(const ConvGeometry& g) {
    absl::MutexLock lock(&mu_);
    std::unique_ptr<Entry>& e = cache_[g.key()];
    if (e == nullptr) e = MakeEntry(g);
    return *e;
  }

  // Input 1, the filter, for RunForward's cache of reordered filters.
  CachedFilter Cached(const Tensor& filter) const { return Cached(filter, constant_filter_); }
  // Whether the filter is a constant (_filter_is_constant: a frozen graph, inference).
  bool constant_filter() const { return constant_filter_; }
  // `constant`: the filter never changes (else its content version identifies it).
  CachedFilter Cached(const Tensor& filter, bool constant) const {
    return CachedFilter{&filter_cache_, FilterId::Of(filter, constant)};
  }

  absl::Status Geometry(const TensorShape& in, const TensorShape& filter, ConvGeometry* g) const {
    SF_RETURN_IF_ERROR(MakeGeometry(in, filter, sh_, sw_, padding_, g));
    g->product = bf16_ && Bf16DotProductsLongEnough(g->kh, g->kw, g->cin) && OneDnnHasBf16()
                     ? memory::data_type::bf16
                     : kF32;
    return absl::OkStatus();
  }

  // The forward primitive descriptor of `g` (also the hint of the backward ones).
  static dnnl::convolution_forward::primitive_desc ForwardPd(const ConvGeometry& g) {
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, g.product_src(),
        g.product_filter(), g.dst(), g.strides(), g.pad_l(), g.pad_r());
    return dnnl::convolution_forward::primitive_desc(d, UserScratchpad(), CpuEngine());
  }

 private:
  std::string padding_;
  int64_t sh_ = 1, sw_ = 1;
  bool constant_filter_ = false;
  bool bf16_ = false;  // kBf16ProductsAttr
  mutable FilterCache filter_cache_;
  absl::Mutex mu_;
  std::map<ConvGeometry::Key, std::unique_ptr<Entry>> cache_ ABSL_GUARDED_BY(mu_);
};

// ---- Conv2D ---------------------------------------------------------------------------------

struct ForwardEntry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  Reorder filter_in;  // [h, w, in, out] -> pd.weights_desc()
  size_t scratch_bytes;
  // A primitive of its own activation layout (Winograd, Note [Winograd for inference]): NHWC ->
  // pd.src_desc() before it, pd.dst_desc() -> NHWC after it. Else empty.
  Reorder src_in;
  Reorder dst_out;
};

// Runs the cached forward convolution of `e` on NHWC src/dst and an HWIO filter. `filter` is
// reordered into the primitive's layout first (or a copy kept in `cached.cache` used).
// `bias` (may be null): for a primitive made with one (_FusedConv2D).
// `post_op_inputs` (may be empty): the second inputs of binary post-ops 0, 1, ...
struct PostOpInput {
  memory::desc md;
  const void* data;
};
absl::Status RunForward(OpKernelContext* ctx, const ForwardEntry& e, const memory::desc& filter_md,
                        const Tensor& src, const void* filter, void* dst,
                        const void* bias = nullptr,
                        const std::vector<PostOpInput>& post_op_inputs = {},
                        const CachedFilter& cached = {}) {
  CallBuffers buffers(ctx);
  SF_ASSIGN_OR_RETURN(void* scratch, buffers.Get(e.scratch_bytes));
  dnnl::engine& eng = CpuEngine();
  dnnl::stream stream(eng);
  memory scratch_mem(e.pd.scratchpad_desc(), eng, scratch);
  memory weights(filter_md, eng, const_cast<void*>(filter));
  Tensor hold;  // keeps a cached filter alive while the convolution reads it
  if (e.filter_in.prim) {
    const memory::desc& md = e.pd.weights_desc();
    const memory reorder_scratch(e.filter_in.pd->scratchpad_desc(), eng, scratch);
    bool keep = false;
    if (cached.cache != nullptr && cached.cache->Find(cached.id, md, &hold, &keep)) {
      weights = memory(md, eng, hold.raw_data());
    } else if (keep) {
      SF_ASSIGN_OR_RETURN(hold, Tensor::Create(CpuAllocator(), DT_UINT8,
                                               TensorShape({static_cast<int64_t>(md.get_size())})));
      memory kept(md, eng, hold.raw_data());
      Run(stream, e.filter_in, weights, kept, reorder_scratch);
      stream.wait();
      cached.cache->Keep(cached.id, md, hold);
      weights = kept;
    } else {
      SF_ASSIGN_OR_RETURN(void* w, buffers.Get(md.get_size()));
      memory reordered(md, eng, w);
      Run(stream, e.filter_in, weights, reordered, reorder_scratch);
      weights = reordered;
    }
  }
  Tensor src_copy;
  SF_ASSIGN_OR_RETURN(void* product_src, ProductData(e.pd.src_desc(), src, &src_copy));
  memory src_mem(e.pd.src_desc(), eng, product_src);
  memory dst_mem(e.pd.dst_desc(), eng, dst);
  if (e.src_in.prim) {
    SF_ASSIGN_OR_RETURN(void* blocked, buffers.Get(e.pd.src_desc().get_size()));
    memory from(e.src_in.pd->src_desc(), eng, product_src);
    src_mem = memory(e.pd.src_desc(), eng, blocked);
    Run(stream, e.src_in, from, src_mem, memory(e.src_in.pd->scratchpad_desc(), eng, scratch));
  }
  if (e.dst_out.prim) {
    SF_ASSIGN_OR_RETURN(void* blocked, buffers.Get(e.pd.dst_desc().get_size()));
    dst_mem = memory(e.pd.dst_desc(), eng, blocked);
  }
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_mem},
                                          {DNNL_ARG_WEIGHTS, weights},
                                          {DNNL_ARG_DST, dst_mem},
                                          {DNNL_ARG_SCRATCHPAD, scratch_mem}};
  if (bias != nullptr) {
    args.insert({DNNL_ARG_BIAS, memory(e.pd.bias_desc(), eng, const_cast<void*>(bias))});
  }
  for (size_t i = 0; i < post_op_inputs.size(); ++i) {
    args.insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                 memory(post_op_inputs[i].md, eng, const_cast<void*>(post_op_inputs[i].data))});
  }
  e.prim.execute(stream, args);
  if (e.dst_out.prim) {
    memory to(e.dst_out.pd->dst_desc(), eng, dst);
    Run(stream, e.dst_out, dst_mem, to, memory(e.dst_out.pd->scratchpad_desc(), eng, scratch));
  }
  stream.wait();
  return absl::OkStatus();
}

// `user_src` / `user_dst`: the NHWC activations the kernel has, where the primitive wants its own
// layout (a Winograd primitive); by default the primitive's.
std::unique_ptr<ForwardEntry> MakeForwardEntry(const dnnl::convolution_forward::primitive_desc& pd,
                                               const memory::desc& user_filter,
                                               const std::optional<memory::desc>& user_src = {},
                                               const std::optional<memory::desc>& user_dst = {}) {
  Reorder r = Reorder::Make(user_filter, pd.weights_desc());
  Reorder src_in = Reorder::Make(user_src.value_or(pd.src_desc()), pd.src_desc());
  Reorder dst_out = Reorder::Make(pd.dst_desc(), user_dst.value_or(pd.dst_desc()));
  size_t scratch = std::max({pd.scratchpad_desc().get_size(), r.scratch_bytes(),
                             src_in.scratch_bytes(), dst_out.scratch_bytes()});
  return std::unique_ptr<ForwardEntry>(new ForwardEntry{pd, dnnl::convolution_forward(pd),
                                                        std::move(r), scratch, std::move(src_in),
                                                        std::move(dst_out)});
}

void FillZero(Tensor* t) {
  if (t->NumElements() > 0) std::memset(t->raw_data(), 0, t->TotalBytes());
}

// The activation of _Fused* ops as a oneDNN eltwise algorithm.
dnnl::algorithm EltwiseOf(const std::string& activation) {
  return activation == "Relu"   ? dnnl::algorithm::eltwise_relu
         : activation == "Tanh" ? dnnl::algorithm::eltwise_tanh
                                : dnnl::algorithm::eltwise_logistic;
}

float Activate(const std::string& activation, float v) {
  if (activation == "Relu") return v > 0 ? v : 0;
  if (activation == "Tanh") return std::tanh(v);
  if (activation == "Sigmoid") return 1 / (1 + std::exp(-v));
  return v;
}

// Note [Winograd for inference]
// A 3x3 stride-1 fp32 convolution of at least 64 input and output channels in an inference
// kernel (_FusedConv2DBatchNorm, or a _FusedConv2D of a constant filter: a frozen graph) runs
// oneDNN's Winograd primitive (jit_wino_4x3 / jit_fp32_wino_2x3 on AVX-512), which needs its own
// blocked activation layout: the NHWC input is reordered into it and the output back. ResNet-50's
// 3x3 layers at batch 1 (AMD EPYC, 2 threads, 2026-11-29): 0.51-0.97 ms against 1.0-2.2 ms
// direct, about 2x; against the direct primitive's output the max error was 7e-6 on values of
// ~4 (relative rms 1e-6). Training keeps the direct primitives (their gradients are direct).
// Where oneDNN has no Winograd kernel (before AVX-512) the descriptor fails and the direct one is
// used. Only bias and activation post-ops: a residual side input keeps the direct primitive.
std::unique_ptr<ForwardEntry> WinogradEntry(const ConvGeometry& g, bool bias,
                                            const std::string& activation) {
  if (g.product != kF32 || g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 || g.cin < 64 ||
      g.cout < 64) {
    return nullptr;
  }
  const memory::desc any_src({g.n, g.cin, g.h, g.w}, kF32, Tag::any);
  const memory::desc any_dst({g.n, g.cout, g.oh, g.ow}, kF32, Tag::any);
  dnnl::primitive_attr attr = UserScratchpad();
  dnnl::post_ops post;
  if (!activation.empty()) post.append_eltwise(1.0f, EltwiseOf(activation), 0.0f, 0.0f);
  attr.set_post_ops(post);
  try {
    const memory::desc bias_md = bias ? memory::desc({g.cout}, kF32, Tag::a) : memory::desc();
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_winograd, any_src,
        g.product_filter(), bias_md, any_dst, g.strides(), g.pad_l(), g.pad_r());
    dnnl::convolution_forward::primitive_desc pd(d, attr, CpuEngine());
    return MakeForwardEntry(pd, g.filter(Tag::hwio), g.product_src(), g.dst());
  } catch (const dnnl::error&) {
    return nullptr;  // no Winograd kernel here: the caller's direct primitive
  }
}

// ---- Forward convolutions as GEMMs ---------------------------------------------------------
//
// Note [Convolutions as GEMMs]
// On processors without AVX-512, oneDNN's jit:avx2 direct kernel runs spatial (3x3)
// convolutions with many channels over few positions (ResNet's later layers at batch 1) at
// 70-110 GFLOP/s, while the same product as one dnnl_sgemm over the unrolled input runs at
// 115-135: each output position's kh x kw x cin window becomes a row (im2col), and the HWIO
// filter already is the [kh * kw * cin, cout] right-hand side, so it needs no reorder at all.
// Interleaved on an AMD EPYC (AVX2, 2 threads, 2026-11-27), batch 1, direct vs GEMM: 28x28x128
// 3x3 2.57 vs 1.80 ms; 14x14x512 3x3 stride 2 3.18 vs 1.84; 7x7x512 3x3 2.77 vs 1.76; but
// 56x56x64 3x3 1.79 vs 1.98 and every 1x1 convolution is faster direct. So a forward
// convolution with a window larger than 1x1, >= 128 input channels and an unrolled input of at
// most 16 MiB takes this path there (not where AVX-512 gives oneDNN its brgconv kernels).
// SHARDFLOW_CONV_GEMM=on|off|auto (read per call) forces it either way for tests and
// benchmarks; forced on, any size runs in chunks of at most 16 MiB of unrolled rows.

enum class GemmChoice { kAuto, kOn, kOff };

absl::StatusOr<GemmChoice> ForcedGemm() {
  const char* v = std::getenv("SHARDFLOW_CONV_GEMM");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return GemmChoice::kAuto;
  if (std::strcmp(v, "on") == 0) return GemmChoice::kOn;
  if (std::strcmp(v, "off") == 0) return GemmChoice::kOff;
  return absl::InvalidArgumentError(absl::StrCat(
      "SHARDFLOW_CONV_GEMM is '", v, "': set it to on, off or auto (the default), or unset it"));
}

constexpr int64_t kGemmChunkBytes = int64_t{16} << 20;

absl::StatusOr<bool> UseGemm(const ConvGeometry& g) {
  SF_ASSIGN_OR_RETURN(GemmChoice choice, ForcedGemm());
  if (g.product != kF32) return false;  // Note [bfloat16 convolutions]
  switch (choice) {
    case GemmChoice::kOn:
      return true;
    case GemmChoice::kOff:
      return false;
    case GemmChoice::kAuto:
      break;
  }
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 || g.kh * g.kw == 1 || g.cin < 128) return false;
  const int64_t row_bytes = g.kh * g.kw * g.cin * static_cast<int64_t>(sizeof(float));
  return g.n * g.oh * g.ow <= kGemmChunkBytes / row_bytes;
}

// out [n * oh * ow, cout] = im2col(in) · filter, in chunks of rows (Note [Convolutions as
// GEMMs]). The caller has set the OpenMP thread budget.
absl::Status GemmConv(OpKernelContext* ctx, const ConvGeometry& g, const float* in,
                      const float* filter, float* out) {
  const int64_t k = g.kh * g.kw * g.cin;
  const int64_t rows = g.n * g.oh * g.ow;
  const int64_t chunk = std::max<int64_t>(1, kGemmChunkBytes / (k * sizeof(float)));
  CallBuffers buffers(ctx);
  SF_ASSIGN_OR_RETURN(void* buf, buffers.Get(std::min(rows, chunk) * k * sizeof(float)));
  float* col = static_cast<float*>(buf);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t m = std::min(chunk, rows - r0);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m; ++r) {
      const int64_t pos = r0 + r;
      const int64_t b = pos / (g.oh * g.ow), y = pos / g.ow % g.oh, x = pos % g.ow;
      float* row = col + r * k;
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t iy = y * g.sh - g.pad_top + i;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t ix = x * g.sw - g.pad_left + j;
          float* dst = row + (i * g.kw + j) * g.cin;
          if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) {
            std::memset(dst, 0, g.cin * sizeof(float));
          } else {
            std::memcpy(dst, in + ((b * g.h + iy) * g.w + ix) * g.cin, g.cin * sizeof(float));
          }
        }
      }
    }
    const dnnl_status_t st = dnnl_sgemm('N', 'N', m, g.cout, k, 1.0f, col, k, filter, g.cout, 0.0f,
                                        out + r0 * g.cout, g.cout);
    if (st != dnnl_success) {
      return absl::InternalError(absl::StrCat("dnnl_sgemm failed with status ", st));
    }
  }
  return absl::OkStatus();
}

// o[p, c] = act(o[p, c] * scale[c] + shift[c] + side[p, c]) over `positions` rows of
// `channels`; a null `scale` multiplies by 1, a null `side` adds nothing.
void ChannelEpilogue(float* o, int64_t positions, int64_t channels, const float* scale,
                     const float* shift, const std::string& activation,
                     const float* side = nullptr) {
  const bool relu = activation == "Relu", other = !relu && !activation.empty();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < positions; ++p) {
    float* row = o + p * channels;
    const float* side_row = side ? side + p * channels : nullptr;
    for (int64_t c = 0; c < channels; ++c) {
      float v = (scale ? row[c] * scale[c] : row[c]) + shift[c];
      if (side_row) v += side_row[c];
      row[c] = relu ? std::max(v, 0.0f) : other ? Activate(activation, v) : v;
    }
  }
}

// The side input of _FusedConv2DAdd / _FusedConv2DBatchNormAdd (a residual block's shortcut):
// the convolution's output shape, or its batch 1 where the convolution's is not (or the other
// way round: both broadcast, as Add does).
absl::Status CheckSide(const Tensor& side, const ConvGeometry& g) {
  const int64_t sn = side.dims() == 4 ? side.dim_size(0) : -1;
  if (side.dims() == 4 && side.dim_size(1) == g.oh && side.dim_size(2) == g.ow &&
      side.dim_size(3) == g.cout && (sn == g.n || sn == 1 || g.n == 1)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("the side input ", side.shape().DebugString(),
                                                 " does not match the convolution's output ",
                                                 g.output_shape().DebugString()));
}

// A side input whose batch differs from the convolution's (one of the two is 1): the
// convolution into a temporary (as a GEMM), then out[b] = act(conv[b mod n] * scale + shift +
// side[b mod side's n]) (a null `scale` multiplies by 1).
void ConvWithBroadcastSide(OpKernelContext* ctx, const ConvGeometry& g, const Tensor& input,
                           const Tensor& filter, const float* scale, const float* shift,
                           const std::string& activation, const Tensor& side) {
  const int64_t sn = side.dim_size(0), n = g.n == 1 ? sn : g.n;
  Tensor conv;
  OP_REQUIRES_OK(ctx, ctx->allocate_temp(DT_FLOAT, g.output_shape(), &conv));
  Tensor* out;
  OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n, g.oh, g.ow, g.cout}), &out));
  if (out->NumElements() == 0) return;
  const int64_t image = g.oh * g.ow * g.cout;
  if (g.cin == 0) {
    std::fill(conv.data<float>(), conv.data<float>() + conv.NumElements(), 0.0f);
  } else {
    SetOneDnnThreads(ctx);
    OP_REQUIRES_OK(ctx,
                   GemmConv(ctx, g, input.data<float>(), filter.data<float>(), conv.data<float>()));
  }
  for (int64_t b = 0; b < n; ++b) {
    float* o = out->data<float>() + b * image;
    std::memcpy(o, conv.data<float>() + (b % g.n) * image, image * sizeof(float));
    ChannelEpilogue(o, g.oh * g.ow, g.cout, scale, shift, activation,
                    side.data<float>() + (b % sn) * image);
  }
}

class Conv2DOp : public ConvOpBase<ForwardEntry> {
 public:
  using ConvOpBase::ConvOpBase;

 private:
  void ComputeConv(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), filter.shape(), &g));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    if (out->NumElements() == 0) return;
    if (g.cin == 0) return FillZero(out);
    SetOneDnnThreads(ctx);
    auto gemm = UseGemm(g);
    OP_REQUIRES_OK(ctx, gemm.status());
    if (*gemm) {
      OP_REQUIRES_OK(
          ctx, GemmConv(ctx, g, input.data<float>(), filter.data<float>(), out->data<float>()));
      return;
    }
    const ForwardEntry& e = GetEntry(g);
    OP_REQUIRES_OK(ctx, RunForward(ctx, e, g.filter(Tag::hwio), input, filter.raw_data(),
                                   out->raw_data(), nullptr, {}, Cached(filter)));
  }

  std::unique_ptr<ForwardEntry> MakeEntry(const ConvGeometry& g) const override {
    return MakeForwardEntry(ForwardPd(g), g.filter(Tag::hwio));
  }
};

// ---- _FusedConv2D ---------------------------------------------------------------------------

// Conv2D + BiasAdd (+ Relu, Tanh, Sigmoid) as one oneDNN primitive: the bias and the activation
// (a post-op) are applied as the convolution writes its output, saving two passes over it. Made
// by the graph optimizer's remapping pass.
// kSide (_FusedConv2DAdd, a residual block's end in a frozen graph, where the batch norm was
// folded into the filter and the bias): act(conv + bias + side), the side input (input 3) a
// binary post-op over the whole output; a side broadcast over the batch takes a slower path.
template <bool kSide>
class FusedConv2DOp : public ConvOpBase<ForwardEntry> {
 public:
  explicit FusedConv2DOp(OpKernelConstruction* c) : ConvOpBase(c) {
    absl::Status s = c->GetAttr("activation", &activation_);
    if (s.ok()) s = CheckFusedActivation(activation_);
    if (!s.ok()) c->SetStatus(s);
  }

 private:
  void ComputeConv(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), filter.shape(), &g));
    OP_REQUIRES(ctx, bias.dims() == 1 && bias.dim_size(0) == g.cout,
                absl::InvalidArgumentError(absl::StrCat("bias must be a vector of ", g.cout,
                                                        " values (the filter's out channels), got ",
                                                        bias.shape().DebugString())));
    const float* side = nullptr;
    if (kSide) {
      const Tensor& t = ctx->input(3);
      OP_REQUIRES_OK(ctx, CheckSide(t, g));
      if (t.dim_size(0) != g.n) {
        return ConvWithBroadcastSide(ctx, g, input, filter, nullptr, bias.data<float>(),
                                     activation_, t);
      }
      side = t.data<float>();
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, g.output_shape(), &out));
    if (out->NumElements() == 0) return;
    float* o = out->data<float>();
    const int64_t positions = out->NumElements() / g.cout;
    if (g.cin == 0) {  // no input channels: every position is activation(bias (+ side))
      std::fill(o, o + out->NumElements(), 0.0f);
      ChannelEpilogue(o, positions, g.cout, nullptr, bias.data<float>(), activation_, side);
      return;
    }
    SetOneDnnThreads(ctx);
    auto gemm = UseGemm(g);
    OP_REQUIRES_OK(ctx, gemm.status());
    if (*gemm) {
      OP_REQUIRES_OK(ctx, GemmConv(ctx, g, input.data<float>(), filter.data<float>(), o));
      ChannelEpilogue(o, positions, g.cout, nullptr, bias.data<float>(), activation_, side);
      return;
    }
    const ForwardEntry& e = GetEntry(g);
    std::vector<PostOpInput> post;
    if (kSide) post.push_back({g.dst(), side});
    OP_REQUIRES_OK(ctx, RunForward(ctx, e, g.filter(Tag::hwio), input, filter.raw_data(), o,
                                   bias.raw_data(), post, Cached(filter)));
  }

  std::unique_ptr<ForwardEntry> MakeEntry(const ConvGeometry& g) const override {
    if (!kSide && constant_filter()) {
      // A frozen graph: Note [Winograd for inference].
      if (auto winograd = WinogradEntry(g, /*bias=*/true, activation_)) return winograd;
    }
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, g.product_src(),
                                      g.product_filter(), memory::desc({g.cout}, kF32, Tag::a),
                                      g.dst(), g.strides(), g.pad_l(), g.pad_r());
    dnnl::primitive_attr attr = UserScratchpad();
    dnnl::post_ops post;
    if (kSide) post.append_binary(dnnl::algorithm::binary_add, g.dst());
    if (!activation_.empty()) post.append_eltwise(1.0f, EltwiseOf(activation_), 0.0f, 0.0f);
    attr.set_post_ops(post);
    return MakeForwardEntry(dnnl::convolution_forward::primitive_desc(d, attr, CpuEngine()),
                            g.filter(Tag::hwio));
  }

  std::string activation_;
};

// ---- _FusedConv2DBatchNorm and _FusedConv2DBatchNormAdd ----------------------------------------

struct BatchNormConvEntry {
  std::unique_ptr<ForwardEntry> forward;
  // The shift (as the bias), the side input and the activation run in the convolution's own
  // kernel; else (no optimised kernel takes them here) in one pass over its output.
  bool post_ops = false;
};

// Conv2D + inference FusedBatchNorm (+ activation), made by the remapping pass: y =
// act(conv * s + b) per output channel, s = scale / sqrt(variance + epsilon), b = offset - mean *
// s, computed as act(conv(input, filter * s) + b): s is folded into a copy of the filter, kept
// while the filter and the statistics keep their content versions (inference folds once), and b
// is the primitive's bias. Binary post-ops multiplying and adding per channel had cost ResNet-50's
// inference at batch 1 5 ms of 43 in its convolutions (AMD EPYC, 2 threads, 2026-11-29).
// kSide (_FusedConv2DBatchNormAdd, a residual block's end): y = act(conv * s + b + side), the side
// input (input 6, the block's shortcut) a third binary post-op over the whole output. A side whose
// batch is 1 where the convolution's is not (or the other way round) broadcasts, as Add does,
// through a slower path.
template <bool kSide>
class FusedConv2DBatchNormOp : public ConvOpBase<BatchNormConvEntry> {
 public:
  explicit FusedConv2DBatchNormOp(OpKernelConstruction* c) : ConvOpBase(c) {
    absl::Status s = c->GetAttr("activation", &activation_);
    if (s.ok()) s = CheckFusedActivation(activation_);
    if (s.ok()) s = c->GetAttr("epsilon", &epsilon_);
    if (!s.ok()) c->SetStatus(s);
  }

 private:
  void ComputeConv(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    const Tensor& filter = ctx->input(1);
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), filter.shape(), &g));
    static constexpr const char* kNames[] = {"scale", "offset", "mean", "variance"};
    for (int i = 2; i <= 5; ++i) {
      const Tensor& v = ctx->input(i);
      OP_REQUIRES(ctx, v.dims() == 1 && v.dim_size(0) == g.cout,
                  absl::InvalidArgumentError(absl::StrCat(
                      kNames[i - 2], " must be a vector of ", g.cout,
                      " values (the filter's out channels), got ", v.shape().DebugString())));
    }
    std::vector<float> scale(g.cout), shift(g.cout);
    for (int64_t k = 0; k < g.cout; ++k) {
      const double s = ctx->input(2).data<float>()[k] /
                       std::sqrt(static_cast<double>(ctx->input(5).data<float>()[k]) + epsilon_);
      scale[k] = static_cast<float>(s);
      shift[k] =
          static_cast<float>(ctx->input(3).data<float>()[k] - ctx->input(4).data<float>()[k] * s);
    }
    auto folded = FoldedFilter(ctx, scale);
    OP_REQUIRES_OK(ctx, folded.status());
    const Tensor& w = *folded;
    const float* side = nullptr;
    TensorShape out_shape = g.output_shape();
    if (kSide) {
      const Tensor& t = ctx->input(6);
      OP_REQUIRES_OK(ctx, CheckSide(t, g));
      if (t.dim_size(0) != g.n) {
        return ConvWithBroadcastSide(ctx, g, input, w, nullptr, shift.data(), activation_, t);
      }
      side = t.data<float>();
    }
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &out));
    if (out->NumElements() == 0) return;
    float* o = out->data<float>();
    const int64_t positions = out->NumElements() / g.cout;
    if (g.cin == 0) {  // no input channels: every position is act(shift (+ side))
      std::fill(o, o + out->NumElements(), 0.0f);
      ChannelEpilogue(o, positions, g.cout, nullptr, shift.data(), activation_, side);
      return;
    }
    SetOneDnnThreads(ctx);
    auto gemm = UseGemm(g);
    OP_REQUIRES_OK(ctx, gemm.status());
    if (*gemm) {
      OP_REQUIRES_OK(ctx, GemmConv(ctx, g, input.data<float>(), w.data<float>(), o));
      ChannelEpilogue(o, positions, g.cout, nullptr, shift.data(), activation_, side);
      return;
    }
    const BatchNormConvEntry& e = GetEntry(g);
    // The folded copy changes when the statistics do: its own content version keys its reorder.
    const CachedFilter cached = Cached(w, /*constant=*/false);
    if (e.post_ops) {
      std::vector<PostOpInput> post;
      if (kSide) post.push_back({g.dst(), side});
      OP_REQUIRES_OK(ctx, RunForward(ctx, *e.forward, g.filter(Tag::hwio), input, w.raw_data(), o,
                                     shift.data(), post, cached));
      return;
    }
    OP_REQUIRES_OK(ctx, RunForward(ctx, *e.forward, g.filter(Tag::hwio), input, w.raw_data(), o,
                                   nullptr, {}, cached));
    ChannelEpilogue(o, positions, g.cout, nullptr, shift.data(), activation_, side);
  }

  // The filter (input 1) times s per output channel (its last dimension); the copy is kept while
  // the filter and the statistics (inputs 1-5) keep their content versions.
  absl::StatusOr<Tensor> FoldedFilter(OpKernelContext* ctx, const std::vector<float>& s) {
    std::array<uint64_t, 5> versions;
    std::array<const void*, 5> data;
    bool known = true;
    for (int i = 0; i < 5; ++i) {
      versions[i] = ctx->input(1 + i).content_version();
      data[i] = ctx->input(1 + i).raw_data();
      known &= versions[i] != 0;
    }
    {
      absl::MutexLock lock(&fold_mu_);
      if (known && folded_.IsInitialized() && versions == fold_versions_ && data == fold_data_) {
        return folded_;
      }
    }
    const Tensor& filter = ctx->input(1);
    Tensor folded;
    SF_RETURN_IF_ERROR(ctx->allocate_temp(DT_FLOAT, filter.shape(), &folded));
    const int64_t cout = static_cast<int64_t>(s.size());
    const float* from = filter.data<float>();
    float* to = folded.data<float>();
    for (int64_t r = 0, rows = cout == 0 ? 0 : filter.NumElements() / cout; r < rows; ++r) {
      for (int64_t k = 0; k < cout; ++k) to[r * cout + k] = from[r * cout + k] * s[k];
    }
    for (int i = 0; i < 5; ++i) known &= ctx->input(1 + i).content_version() == versions[i];
    if (known) {
      absl::MutexLock lock(&fold_mu_);
      fold_versions_ = versions;
      fold_data_ = data;
      folded_ = folded;
    }
    return folded;
  }

  std::unique_ptr<BatchNormConvEntry> MakeEntry(const ConvGeometry& g) const override {
    auto e = std::make_unique<BatchNormConvEntry>();
    if (!kSide) {
      // Note [Winograd for inference]: the shift as its bias, as below.
      if ((e->forward = WinogradEntry(g, /*bias=*/true, activation_))) {
        e->post_ops = true;
        return e;
      }
    }
    dnnl::post_ops post;
    if (kSide) post.append_binary(dnnl::algorithm::binary_add, g.dst());
    if (!activation_.empty()) post.append_eltwise(1.0f, EltwiseOf(activation_), 0.0f, 0.0f);
    dnnl::primitive_attr attr = UserScratchpad();
    attr.set_post_ops(post);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_direct, g.product_src(),
                                      g.product_filter(), memory::desc({g.cout}, kF32, Tag::a),
                                      g.dst(), g.strides(), g.pad_l(), g.pad_r());
    try {
      dnnl::convolution_forward::primitive_desc pd(d, attr, CpuEngine());
      // Only an optimised kernel: a reference one with post-ops is slower than two passes.
      const std::string impl = pd.impl_info_str();
      if (impl.rfind("jit", 0) == 0 || impl.rfind("brg", 0) == 0) {
        e->forward = MakeForwardEntry(pd, g.filter(Tag::hwio));
        e->post_ops = true;
        return e;
      }
    } catch (const dnnl::error&) {
      // No kernel takes these post-ops: the pass after the convolution does.
    }
    e->forward = MakeForwardEntry(ForwardPd(g), g.filter(Tag::hwio));
    return e;
  }

  std::string activation_;
  float epsilon_ = 0.001f;
  absl::Mutex fold_mu_;
  std::array<uint64_t, 5> fold_versions_ ABSL_GUARDED_BY(fold_mu_) = {};
  std::array<const void*, 5> fold_data_ ABSL_GUARDED_BY(fold_mu_) = {};
  Tensor folded_ ABSL_GUARDED_BY(fold_mu_);
};

// ---- Conv2DBackpropInput --------------------------------------------------------------------

struct BackwardDataEntry {
  // Stride 1: a forward convolution of out_backprop with the flipped filter (Note [Conv layouts]).
  std::unique_ptr<ForwardEntry> flipped;
  memory::desc flipped_filter;  // the flipped filter as stored: [h, w, in, out] read as OIHW
  // A strided 1x1 convolution: one matmul and a scatter (Note [Strided 1x1 input gradients]).
  std::optional<dnnl::matmul::primitive_desc> gemm_pd;
  std::optional<dnnl::matmul> gemm;
  // Larger strides: the backward-data primitive.
  std::optional<dnnl::convolution_backward_data::primitive_desc> pd;
  std::optional<dnnl::convolution_backward_data> prim;
  Reorder filter_in;
  size_t scratch_bytes = 0;
};

class Conv2DBackpropInputOp : public ConvOpBase<BackwardDataEntry> {
 public:
  using ConvOpBase::ConvOpBase;

 private:
  void ComputeConv(OpKernelContext* ctx) override {
    TensorShape in_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(0), "input_sizes", &in_shape));
    const Tensor& filter = ctx->input(1);
    const Tensor& grad = ctx->input(2);
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(in_shape, filter.shape(), &g));
    OP_REQUIRES(ctx, grad.shape() == g.output_shape(),
                absl::InvalidArgumentError(absl::StrCat(
                    "out_backprop has shape ", grad.shape().DebugString(),
                    " but the convolution of ", in_shape.DebugString(), " by ",
                    filter.shape().DebugString(), " gives ", g.output_shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, in_shape, &out));
    if (out->NumElements() == 0) return;
    if (grad.NumElements() == 0) return FillZero(out);
    SetOneDnnThreads(ctx);
    const BackwardDataEntry& e = GetEntry(g);
    if (e.gemm) return StridedPointwise(ctx, g, e, filter, grad, out);
    if (e.flipped != nullptr) {
      // Flip the filter in space; the reorder in RunForward swaps in and out.
      CallBuffers buffers(ctx);
      auto flipped = buffers.Get(filter.TotalBytes());
      OP_REQUIRES_OK(ctx, flipped.status());
      const float* w = filter.data<float>();
      float* f = static_cast<float*>(*flipped);
      const int64_t block = g.cin * g.cout, taps = g.kh * g.kw;
      for (int64_t t = 0; t < taps; ++t) {
        std::memcpy(f + t * block, w + (taps - 1 - t) * block, block * sizeof(float));
      }
      OP_REQUIRES_OK(ctx, RunForward(ctx, *e.flipped, e.flipped_filter, grad, f, out->raw_data()));
      return;
    }
    CallBuffers buffers(ctx);
    auto scratch = buffers.Get(e.scratch_bytes);
    OP_REQUIRES_OK(ctx, scratch.status());
    dnnl::engine& eng = CpuEngine();
    dnnl::stream stream(eng);
    memory scratch_mem(e.pd->scratchpad_desc(), eng, *scratch);
    memory weights(g.filter(Tag::hwio), eng, const_cast<void*>(filter.raw_data()));
    if (e.filter_in.prim) {
      auto w = buffers.Get(e.pd->weights_desc().get_size());
      OP_REQUIRES_OK(ctx, w.status());
      memory blocked(e.pd->weights_desc(), eng, *w);
      Run(stream, e.filter_in, weights, blocked,
          memory(e.filter_in.pd->scratchpad_desc(), eng, *scratch));
      weights = blocked;
    }
    Tensor grad_copy;
    auto product_grad = ProductData(e.pd->diff_dst_desc(), grad, &grad_copy);
    OP_REQUIRES_OK(ctx, product_grad.status());
    e.prim->execute(stream,
                    {{DNNL_ARG_DIFF_DST, memory(e.pd->diff_dst_desc(), eng, *product_grad)},
                     {DNNL_ARG_WEIGHTS, weights},
                     {DNNL_ARG_DIFF_SRC, memory(e.pd->diff_src_desc(), eng, out->raw_data())},
                     {DNNL_ARG_SCRATCHPAD, scratch_mem}});
    stream.wait();
  }

  // Note [Strided 1x1 input gradients]
  // A 1x1 convolution with stride s > 1 (ResNet's downsampling shortcuts) reads only input
  // positions (y * s, x * s) (a 1x1 window needs no padding), so its input gradient is zero
  // except there, where it is out_backprop [n * oh * ow, cout] times the filter, read as [cin,
  // cout], transposed: one matmul into a temporary, scattered into the zeroed gradient. oneDNN's
  // backward-data kernel took 74 ms for ResNet-50's 56x56x256 -> 28x28x512 shortcut at batch 32
  // (bf16, AMD EPYC, 2 threads, 2026-11-29), the product itself ~16 ms.
  void StridedPointwise(OpKernelContext* ctx, const ConvGeometry& g, const BackwardDataEntry& e,
                        const Tensor& filter, const Tensor& grad, Tensor* out) {
    Tensor grad_copy, filter_copy;
    auto a = ProductData(e.gemm_pd->src_desc(), grad, &grad_copy);
    OP_REQUIRES_OK(ctx, a.status());
    auto b = ProductData(e.gemm_pd->weights_desc(), filter, &filter_copy);
    OP_REQUIRES_OK(ctx, b.status());
    CallBuffers buffers(ctx);
    const int64_t rows = g.n * g.oh * g.ow;
    auto product = buffers.Get(rows * g.cin * sizeof(float));
    OP_REQUIRES_OK(ctx, product.status());
    auto scratch = buffers.Get(e.gemm_pd->scratchpad_desc().get_size());
    OP_REQUIRES_OK(ctx, scratch.status());
    dnnl::engine& eng = CpuEngine();
    dnnl::stream stream(eng);
    e.gemm->execute(stream,
                    {{DNNL_ARG_SRC, memory(e.gemm_pd->src_desc(), eng, *a)},
                     {DNNL_ARG_WEIGHTS, memory(e.gemm_pd->weights_desc(), eng, *b)},
                     {DNNL_ARG_DST, memory(e.gemm_pd->dst_desc(), eng, *product)},
                     {DNNL_ARG_SCRATCHPAD, memory(e.gemm_pd->scratchpad_desc(), eng, *scratch)}});
    stream.wait();
    const float* p = static_cast<const float*>(*product);
    float* dx = out->data<float>();
    const int64_t image = g.h * g.w * g.cin;
#pragma omp parallel for schedule(static)
    for (int64_t by = 0; by < g.n * g.h; ++by) {  // one input row of one image
      const int64_t b = by / g.h, y = by % g.h;
      float* row = dx + b * image + y * g.w * g.cin;
      if (y % g.sh != 0 || y / g.sh >= g.oh) {
        std::memset(row, 0, g.w * g.cin * sizeof(float));
        continue;
      }
      const float* src = p + (b * g.oh + y / g.sh) * g.ow * g.cin;
      for (int64_t x = 0; x < g.w; ++x) {
        float* dst = row + x * g.cin;
        if (x % g.sw == 0 && x / g.sw < g.ow) {
          std::memcpy(dst, src + (x / g.sw) * g.cin, g.cin * sizeof(float));
        } else {
          std::memset(dst, 0, g.cin * sizeof(float));
        }
      }
    }
  }

  std::unique_ptr<BackwardDataEntry> MakeEntry(const ConvGeometry& g) const override {
    auto e = std::make_unique<BackwardDataEntry>();
    if (g.kh == 1 && g.kw == 1 && (g.sh > 1 || g.sw > 1) && g.pad_top == 0 && g.pad_left == 0) {
      // out_backprop [rows, cout] x the filter [cin, cout] read transposed: [rows, cin].
      const int64_t rows = g.n * g.oh * g.ow;
      memory::desc a({rows, g.cout}, g.product, memory::dims{g.cout, 1});
      memory::desc b({g.cout, g.cin}, g.product, memory::dims{1, g.cout});
      memory::desc c({rows, g.cin}, kF32, memory::dims{g.cin, 1});
      e->gemm_pd.emplace(dnnl::matmul::desc(a, b, c), UserScratchpad(), CpuEngine());
      e->gemm.emplace(*e->gemm_pd);
      return e;
    }
    if (g.sh == 1 && g.sw == 1) {
      // out_backprop [n, oh, ow, cout] convolved with the flipped filter gives [n, h, w, cin].
      ConvGeometry f = g;
      f.h = g.oh;
      f.w = g.ow;
      f.cin = g.cout;
      f.oh = g.h;
      f.ow = g.w;
      f.cout = g.cin;
      f.pad_top = g.kh - 1 - g.pad_top;
      f.pad_left = g.kw - 1 - g.pad_left;
      f.pad_bottom = g.h - g.oh + g.kh - 1 - f.pad_top;
      f.pad_right = g.w - g.ow + g.kw - 1 - f.pad_left;
      // The flipped filter is stored [kh, kw, cin, cout]: as OIHW with O = cin, I = cout.
      e->flipped_filter =
          memory::desc({g.cin, g.cout, g.kh, g.kw}, kF32,
                       memory::dims{g.cout, 1, g.kw * g.cin * g.cout, g.cin * g.cout});
      e->flipped = MakeForwardEntry(ForwardPd(f), e->flipped_filter);
      return e;
    }
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, g.src(),
                                            g.product_filter(), g.product_dst(), g.strides(),
                                            g.pad_l(), g.pad_r());
    e->pd.emplace(d, UserScratchpad(), CpuEngine(), ForwardPd(g));
    e->prim.emplace(*e->pd);
    e->filter_in = Reorder::Make(g.filter(Tag::hwio), e->pd->weights_desc());
    e->scratch_bytes = std::max(e->pd->scratchpad_desc().get_size(), e->filter_in.scratch_bytes());
    return e;
  }
};

// ---- Conv2DBackpropFilter -------------------------------------------------------------------

struct BackwardFilterEntry {
  dnnl::convolution_backward_weights::primitive_desc pd;
  dnnl::convolution_backward_weights prim;
  Reorder filter_out;  // pd.diff_weights_desc() -> [h, w, in, out]
  size_t scratch_bytes;
};

class Conv2DBackpropFilterOp : public ConvOpBase<BackwardFilterEntry> {
 public:
  using ConvOpBase::ConvOpBase;

 private:
  void ComputeConv(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    TensorShape filter_shape;
    OP_REQUIRES_OK(ctx, ShapeFromSizes(ctx->input(1), "filter_sizes", &filter_shape));
    const Tensor& grad = ctx->input(2);
    ConvGeometry g;
    OP_REQUIRES_OK(ctx, Geometry(input.shape(), filter_shape, &g));
    OP_REQUIRES(ctx, grad.shape() == g.output_shape(),
                absl::InvalidArgumentError(absl::StrCat(
                    "out_backprop has shape ", grad.shape().DebugString(),
                    " but the convolution of ", input.shape().DebugString(), " by ",
                    filter_shape.DebugString(), " gives ", g.output_shape().DebugString())));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, filter_shape, &out));
    if (out->NumElements() == 0) return;
    if (grad.NumElements() == 0) return FillZero(out);
    SetOneDnnThreads(ctx);
    const BackwardFilterEntry& e = GetEntry(g);
    CallBuffers buffers(ctx);
    auto scratch = buffers.Get(e.scratch_bytes);
    OP_REQUIRES_OK(ctx, scratch.status());
    dnnl::engine& eng = CpuEngine();
    dnnl::stream stream(eng);
    memory user_filter(g.filter(Tag::hwio), eng, out->raw_data());
    memory diff_weights = user_filter;
    if (e.filter_out.prim) {
      auto w = buffers.Get(e.pd.diff_weights_desc().get_size());
      OP_REQUIRES_OK(ctx, w.status());
      diff_weights = memory(e.pd.diff_weights_desc(), eng, *w);
    }
    Tensor src_copy, grad_copy;
    auto product_src = ProductData(e.pd.src_desc(), input, &src_copy);
    OP_REQUIRES_OK(ctx, product_src.status());
    auto product_grad = ProductData(e.pd.diff_dst_desc(), grad, &grad_copy);
    OP_REQUIRES_OK(ctx, product_grad.status());
    e.prim.execute(stream, {{DNNL_ARG_SRC, memory(e.pd.src_desc(), eng, *product_src)},
                            {DNNL_ARG_DIFF_DST, memory(e.pd.diff_dst_desc(), eng, *product_grad)},
                            {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                            {DNNL_ARG_SCRATCHPAD, memory(e.pd.scratchpad_desc(), eng, *scratch)}});
    if (e.filter_out.prim) {
      Run(stream, e.filter_out, diff_weights, user_filter,
          memory(e.filter_out.pd->scratchpad_desc(), eng, *scratch));
    }
    stream.wait();
  }

  std::unique_ptr<BackwardFilterEntry> MakeEntry(const ConvGeometry& g) const override {
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, g.product_src(),
                                               g.filter(Tag::any), g.product_dst(), g.strides(),
                                               g.pad_l(), g.pad_r());
    dnnl::convolution_backward_weights::primitive_desc pd(d, UserScratchpad(), CpuEngine(),
                                                          ForwardPd(g));
    Reorder r = Reorder::Make(pd.diff_weights_desc(), g.filter(Tag::hwio));
    size_t scratch = std::max(pd.scratchpad_desc().get_size(), r.scratch_bytes());
    return std::unique_ptr<BackwardFilterEntry>(
        new BackwardFilterEntry{pd, dnnl::convolution_backward_weights(pd), std::move(r), scratch});
  }
};

REGISTER_KERNEL(KernelDef("Conv2D").Device(kDeviceCpu).TypeConstraint<float>("T"), Conv2DOp);
REGISTER_KERNEL(KernelDef("_FusedConv2D").Device(kDeviceCpu).TypeConstraint<float>("T"),
                FusedConv2DOp<false>);
REGISTER_KERNEL(KernelDef("_FusedConv2DAdd").Device(kDeviceCpu).TypeConstraint<float>("T"),
                FusedConv2DOp<true>);
REGISTER_KERNEL(KernelDef("_FusedConv2DBatchNorm").Device(kDeviceCpu).TypeConstraint<float>("T"),
                FusedConv2DBatchNormOp<false>);
REGISTER_KERNEL(KernelDef("_FusedConv2DBatchNormAdd").Device(kDeviceCpu).TypeConstraint<float>("T"),
                FusedConv2DBatchNormOp<true>);
REGISTER_KERNEL(KernelDef("Conv2DBackpropInput")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("input_sizes"),
                Conv2DBackpropInputOp);
REGISTER_KERNEL(KernelDef("Conv2DBackpropFilter")
                    .Device(kDeviceCpu)
                    .TypeConstraint<float>("T")
                    .HostMemory("filter_sizes"),
                Conv2DBackpropFilterOp);

}  // namespace
}  // namespace shardflow
