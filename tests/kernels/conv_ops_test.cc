// Tests for the oneDNN convolution kernels (kernels/cpu/conv_ops.cc): Conv2D,
// Conv2DBackpropInput and Conv2DBackpropFilter against naive loops in double, for SAME and VALID
// padding, strides 1 and 2, several channel counts and odd sizes; one kernel reused across shapes
// and run from several threads at once (its primitive cache and per-call scratchpads); errors.
//
// ConvTiming.DISABLED_CnnLayersBatch128 times forward + both backward passes of the CNN's two
// convolutions at batch 128 (run with --gtest_also_run_disabled_tests).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/node_def_util.h"
#include "core/framework/op_def.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "kernels/cpu/onednn_util.h"
#include "runtime/device.h"
#include "runtime/op_runner.h"
#include "tests/util/test_device.h"

namespace shardflow {
namespace {

using Attrs = std::map<std::string, AttrValue>;

struct ConvCase {
  int64_t n, h, w, cin, kh, kw, cout, stride_h, stride_w;
  std::string padding;

  std::string Describe() const {
    return absl::StrCat("input [", n, ",", h, ",", w, ",", cin, "] filter [", kh, ",", kw, ",", cin,
                        ",", cout, "] strides ", stride_h, "x", stride_w, " ", padding);
  }
  Attrs attrs() const {
    return {{"strides", MakeAttr(std::vector<int64_t>{1, stride_h, stride_w, 1})},
            {"padding", MakeAttr(padding)}};
  }
  // TensorFlow's rule, written out independently of the kernels' helper.
  void Output(int64_t in, int64_t k, int64_t s, int64_t* out, int64_t* pad) const {
    if (padding == "VALID") {
      *out = (in - k) / s + 1;
      *pad = 0;
    } else {
      *out = (in + s - 1) / s;
      *pad = std::max<int64_t>((*out - 1) * s + k - in, 0) / 2;
    }
  }
};

Tensor Random(const TensorShape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

// The three naive convolutions in double; `mag` gets the sum of |terms| per element.
struct Naive {
  const ConvCase& c;
  int64_t oh, ow, pt, pl;
  explicit Naive(const ConvCase& cc) : c(cc) {
    c.Output(c.h, c.kh, c.stride_h, &oh, &pt);
    c.Output(c.w, c.kw, c.stride_w, &ow, &pl);
  }
  // The convolution of `in` and `f` into *want, and each element's sum of |terms| into *mag.
  void Forward(const Tensor& in, const Tensor& f, std::vector<double>* want,
               std::vector<double>* mag) const {
    want->assign(c.n * oh * ow * c.cout, 0.0);
    mag->assign(want->size(), 0.0);
    ForEachTerm([&](int64_t i, int64_t k, int64_t o) {
      const double t = double(in.data<float>()[i]) * f.data<float>()[k];
      (*want)[o] += t;
      (*mag)[o] += std::abs(t);
    });
  }
  // Calls fn(input index, filter index, output index) for every multiply of the convolution.
  template <typename Fn>
  void ForEachTerm(Fn fn) const {
    for (int64_t b = 0; b < c.n; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              const int64_t iy = y * c.stride_h - pt + ky, ix = x * c.stride_w - pl + kx;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
              for (int64_t ci = 0; ci < c.cin; ++ci)
                for (int64_t co = 0; co < c.cout; ++co) {
                  fn(((b * c.h + iy) * c.w + ix) * c.cin + ci,
                     ((ky * c.kw + kx) * c.cin + ci) * c.cout + co,
                     ((b * oh + y) * ow + x) * c.cout + co);
                }
            }
  }
};

void ExpectClose(const Tensor& got, const std::vector<double>& want, const std::vector<double>& mag,
                 const std::string& what) {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 5; ++i) {
    const double g = got.data<float>()[i];
    if (!(std::abs(g - want[i]) <= 1e-5 * std::max(1.0, mag[i]))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << want[i];
      ++failures;
    }
  }
}

std::vector<ConvCase> Cases() {
  return {
      {1, 5, 5, 1, 3, 3, 1, 1, 1, "VALID"},
      {2, 6, 7, 3, 3, 3, 4, 1, 1, "SAME"},
      {2, 7, 6, 3, 2, 2, 5, 2, 2, "SAME"},
      {2, 9, 9, 8, 3, 3, 16, 2, 2, "VALID"},
      {3, 8, 8, 32, 5, 5, 64, 1, 1, "SAME"},
      {2, 11, 10, 17, 5, 5, 9, 1, 1, "VALID"},
      {2, 10, 13, 16, 4, 3, 32, 2, 1, "SAME"},
      {4, 28, 28, 1, 5, 5, 32, 1, 1, "SAME"},
      {1, 4, 4, 2, 1, 1, 3, 1, 1, "VALID"},
      {2, 7, 7, 4, 3, 3, 8, 3, 2, "SAME"},
      // Strided 1x1 (Note [Strided 1x1 input gradients]): uneven sizes, unequal strides.
      {2, 9, 9, 4, 1, 1, 6, 2, 2, "SAME"},
      {2, 8, 7, 16, 1, 1, 8, 2, 3, "VALID"},
      // Strides beyond int32 (one output position): oneDNN refused them ("could not create a
      // descriptor") where TF's output is that one position.
      {1, 5, 6, 2, 3, 3, 2, int64_t{1} << 40, int64_t{1} << 31, "SAME"},
      {1, 5, 6, 2, 3, 2, 2, int64_t{1} << 40, 1, "VALID"},
  };
}

TEST(Conv2DTest, ForwardMatchesNaiveLoops) {
  uint32_t seed = 1;
  for (const ConvCase& c : Cases()) {
    Naive ref(c);
    Tensor in = Random({c.n, c.h, c.w, c.cin}, seed++);
    Tensor f = Random({c.kh, c.kw, c.cin, c.cout}, seed++);
    std::vector<double> want, mag;
    ref.Forward(in, f, &want, &mag);
    auto out = RunOp("Conv2D", {in, f}, c.attrs());
    ASSERT_TRUE(out.ok()) << c.Describe() << ": " << out.status();
    EXPECT_EQ((*out)[0].shape(), TensorShape({c.n, ref.oh, ref.ow, c.cout})) << c.Describe();
    ExpectClose((*out)[0], want, mag, "Conv2D " + c.Describe());
  }
}

// Sets SHARDFLOW_CONV_GEMM for one scope (Note [Convolutions as GEMMs] in conv_ops.cc).
class ScopedConvGemm {
 public:
  explicit ScopedConvGemm(const char* value) { setenv("SHARDFLOW_CONV_GEMM", value, 1); }
  ~ScopedConvGemm() { unsetenv("SHARDFLOW_CONV_GEMM"); }
};

// What the fused forward kernels should give for a convolution whose naive result is `want`
// (magnitudes `mag`): relu(conv + bias) (_FusedConv2D) and relu((conv - mean) * scale /
// sqrt(var + 0.001) + offset) (_FusedConv2DBatchNorm), with fixed per-channel vectors.
struct FusedReference {
  std::vector<float> bias, scale, offset, mean, var;
  std::vector<double> fused, fused_mag, bn, bn_mag;

  FusedReference(int64_t cout, const std::vector<double>& want, const std::vector<double>& mag)
      : bias(cout),
        scale(cout),
        offset(cout),
        mean(cout),
        var(cout),
        fused(want.size()),
        fused_mag(want.size()),
        bn(want.size()),
        bn_mag(want.size()) {
    for (int64_t k = 0; k < cout; ++k) {
      bias[k] = 0.25f * (k % 5) - 0.5f;
      scale[k] = 0.5f + 0.1f * (k % 3);
      offset[k] = 0.2f * (k % 4) - 0.3f;
      mean[k] = 0.1f * (k % 7) - 0.3f;
      var[k] = 0.5f + 0.2f * (k % 2);
    }
    for (size_t o = 0; o < want.size(); ++o) {
      const int64_t k = static_cast<int64_t>(o) % cout;
      fused[o] = std::max(0.0, want[o] + bias[k]);
      fused_mag[o] = mag[o] + std::abs(bias[k]);
      const double s = scale[k] / std::sqrt(double(var[k]) + 0.001);
      bn[o] = std::max(0.0, (want[o] - mean[k]) * s + offset[k]);
      bn_mag[o] = (mag[o] + std::abs(mean[k])) * s + std::abs(offset[k]);
    }
  }
  // Runs _FusedConv2D (attrs `conv_attrs`) and _FusedConv2DBatchNorm (`bn_attrs`) of `in` and
  // `f` and checks both against the references.
  void Check(const Tensor& in, const Tensor& f, const Attrs& conv_attrs, const Attrs& bn_attrs,
             const std::string& what) const {
    auto out = RunOp("_FusedConv2D", {in, f, Tensor::FromVector<float>(bias)}, conv_attrs);
    ASSERT_TRUE(out.ok()) << what << ": " << out.status();
    ExpectClose((*out)[0], fused, fused_mag, "_FusedConv2D " + what);
    out = RunOp("_FusedConv2DBatchNorm",
                {in, f, Tensor::FromVector<float>(scale), Tensor::FromVector<float>(offset),
                 Tensor::FromVector<float>(mean), Tensor::FromVector<float>(var)},
                bn_attrs);
    ASSERT_TRUE(out.ok()) << what << ": " << out.status();
    ExpectClose((*out)[0], bn, bn_mag, "_FusedConv2DBatchNorm " + what);
  }
};

// Forward convolutions as im2col + sgemm give the naive loops' results: every case above forced
// onto that path, one whose unrolled input (about 25 MiB) takes two chunks, and a 3x3 layer
// with 128 channels, which takes it by default where there is no AVX-512. The fused kernels
// apply their bias / batch norm and activation after it as the direct path does.
TEST(Conv2DTest, GemmPathMatchesNaiveLoops) {
  std::vector<ConvCase> cases = Cases();
  cases.push_back({1, 110, 100, 64, 3, 3, 4, 1, 1, "SAME"});  // 11000 rows of 2304 bytes
  cases.push_back({2, 9, 9, 128, 3, 3, 16, 2, 2, "SAME"});
  uint32_t seed = 500;
  for (const char* mode : {"on", "auto"}) {
    ScopedConvGemm gemm(mode);
    for (const ConvCase& c : cases) {
      if (std::string(mode) == "auto" && c.cin < 128) continue;
      Naive ref(c);
      Tensor in = Random({c.n, c.h, c.w, c.cin}, seed++);
      Tensor f = Random({c.kh, c.kw, c.cin, c.cout}, seed++);
      std::vector<double> want, mag;
      ref.Forward(in, f, &want, &mag);
      const std::string what = c.Describe() + " SHARDFLOW_CONV_GEMM=" + mode;
      auto out = RunOp("Conv2D", {in, f}, c.attrs());
      ASSERT_TRUE(out.ok()) << what << ": " << out.status();
      ExpectClose((*out)[0], want, mag, "Conv2D " + what);

      Attrs attrs = c.attrs();
      attrs["activation"] = MakeAttr(std::string("Relu"));
      FusedReference(c.cout, want, mag).Check(in, f, attrs, attrs, what);
    }
  }
  ScopedConvGemm bad("fast");
  auto out = RunOp("Conv2D", {Random({1, 3, 3, 2}, 1), Random({1, 1, 2, 2}, 2)},
                   ConvCase{1, 3, 3, 2, 1, 1, 2, 1, 1, "SAME"}.attrs());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("SHARDFLOW_CONV_GEMM is 'fast'"), std::string::npos)
      << out.status();
}

// Inference kernels of 3x3 stride-1 layers of >= 64 channels run oneDNN's Winograd primitive
// where it has one (Note [Winograd for inference]: AVX-512), in its own activation layout:
// _FusedConv2D of a constant filter (a frozen graph) and _FusedConv2DBatchNorm give the naive
// loops' results, twice in a row (the second call reuses the transformed filter).
TEST(Conv2DTest, InferenceWinogradMatchesNaiveLoops) {
  const std::vector<ConvCase> cases = {{1, 14, 14, 64, 3, 3, 64, 1, 1, "SAME"},
                                       {2, 9, 11, 64, 3, 3, 80, 1, 1, "VALID"},
                                       {1, 7, 7, 128, 3, 3, 96, 1, 1, "SAME"}};
  uint32_t seed = 700;
  for (const ConvCase& c : cases) {
    Naive ref(c);
    Tensor in = Random({c.n, c.h, c.w, c.cin}, seed++);
    Tensor f = Random({c.kh, c.kw, c.cin, c.cout}, seed++);
    std::vector<double> want, mag;
    ref.Forward(in, f, &want, &mag);
    const FusedReference r(c.cout, want, mag);
    Attrs attrs = c.attrs();
    attrs["activation"] = MakeAttr(std::string("Relu"));
    Attrs constant = attrs;
    constant["_filter_is_constant"] = MakeAttr(true);
    for (int call = 0; call < 2; ++call) {
      r.Check(in, f, constant, attrs, c.Describe() + (call == 0 ? "" : " again"));
    }
  }
}

TEST(Conv2DTest, BackpropInputMatchesNaiveLoops) {
  uint32_t seed = 100;
  for (const ConvCase& c : Cases()) {
    Naive ref(c);
    Tensor f = Random({c.kh, c.kw, c.cin, c.cout}, seed++);
    Tensor dy = Random({c.n, ref.oh, ref.ow, c.cout}, seed++);
    std::vector<double> want(c.n * c.h * c.w * c.cin, 0.0), mag(want.size(), 0.0);
    ref.ForEachTerm([&](int64_t i, int64_t k, int64_t o) {
      const double t = double(dy.data<float>()[o]) * f.data<float>()[k];
      want[i] += t;
      mag[i] += std::abs(t);
    });
    Tensor sizes =
        Tensor::FromVector<int32_t>({int32_t(c.n), int32_t(c.h), int32_t(c.w), int32_t(c.cin)});
    auto out = RunOp("Conv2DBackpropInput", {sizes, f, dy}, c.attrs());
    ASSERT_TRUE(out.ok()) << c.Describe() << ": " << out.status();
    EXPECT_EQ((*out)[0].shape(), TensorShape({c.n, c.h, c.w, c.cin}));
    ExpectClose((*out)[0], want, mag, "Conv2DBackpropInput " + c.Describe());
  }
}

TEST(Conv2DTest, BackpropFilterMatchesNaiveLoops) {
  uint32_t seed = 200;
  for (const ConvCase& c : Cases()) {
    Naive ref(c);
    Tensor in = Random({c.n, c.h, c.w, c.cin}, seed++);
    Tensor dy = Random({c.n, ref.oh, ref.ow, c.cout}, seed++);
    std::vector<double> want(c.kh * c.kw * c.cin * c.cout, 0.0), mag(want.size(), 0.0);
    ref.ForEachTerm([&](int64_t i, int64_t k, int64_t o) {
      const double t = double(dy.data<float>()[o]) * in.data<float>()[i];
      want[k] += t;
      mag[k] += std::abs(t);
    });
    Tensor sizes = Tensor::FromVector<int32_t>(
        {int32_t(c.kh), int32_t(c.kw), int32_t(c.cin), int32_t(c.cout)});
    auto out = RunOp("Conv2DBackpropFilter", {in, sizes, dy}, c.attrs());
    ASSERT_TRUE(out.ok()) << c.Describe() << ": " << out.status();
    EXPECT_EQ((*out)[0].shape(), TensorShape({c.kh, c.kw, c.cin, c.cout}));
    ExpectClose((*out)[0], want, mag, "Conv2DBackpropFilter " + c.Describe());
  }
}

// Marked for bfloat16 products (the mixed-precision pass's _bf16_products, Note [bfloat16
// convolutions] in conv_ops.cc), the three kernels compute in fp32 on inputs rounded to bfloat16
// - but a convolution whose dot products (kh * kw * cin) are shorter than 64, which stays fp32, as
// does every one where
// oneDNN has no bf16 kernels (before AVX-512); strides 1 (the input
// gradient as a flipped forward convolution) and 2 (the backward-data primitive).
TEST(Conv2DTest, MarkedForBf16MatchNaiveLoopsOnRoundedInputs) {
  std::vector<ConvCase> cases = Cases();
  cases.push_back({8, 14, 14, 32, 5, 5, 64, 1, 1, "SAME"});  // the CNN's second layer, batch 8
  cases.push_back({2, 8, 7, 64, 1, 1, 8, 2, 3, "VALID"});    // strided 1x1 long enough for bf16
  cases.push_back({2, 12, 12, 3, 7, 7, 8, 2, 2, "SAME"});    // ResNet's first layer: 147
  uint32_t seed = 300;
  for (const ConvCase& c : cases) {
    Naive ref(c);
    // Plain fp32 where oneDNN has no bf16 kernels (before AVX-512).
    const bool rounded = c.kh * c.kw * c.cin >= 64 && OneDnnHasBf16();
    auto round = [&](const Tensor& t) {
      if (!rounded) return t;
      return *CastTensor(*CastTensor(t, DT_BFLOAT16), DT_FLOAT);
    };
    Tensor in = Random({c.n, c.h, c.w, c.cin}, seed++);
    Tensor f = Random({c.kh, c.kw, c.cin, c.cout}, seed++);
    Tensor dy = Random({c.n, ref.oh, ref.ow, c.cout}, seed++);
    const Tensor rin = round(in), rf = round(f), rdy = round(dy);
    Attrs attrs = c.attrs();
    attrs["_bf16_products"] = MakeAttr(true);
    const std::string what = c.Describe() + (rounded ? " bf16" : " (stays fp32)");

    std::vector<double> want, mag;
    ref.Forward(rin, rf, &want, &mag);
    auto out = RunOp("Conv2D", {in, f}, attrs);
    ASSERT_TRUE(out.ok()) << what << ": " << out.status();
    ExpectClose((*out)[0], want, mag, "Conv2D " + what);

    std::vector<double> dx(c.n * c.h * c.w * c.cin, 0.0), dx_mag(dx.size(), 0.0);
    std::vector<double> dw(c.kh * c.kw * c.cin * c.cout, 0.0), dw_mag(dw.size(), 0.0);
    ref.ForEachTerm([&](int64_t i, int64_t k, int64_t o) {
      const double a = double(rdy.data<float>()[o]) * rf.data<float>()[k];
      const double b = double(rdy.data<float>()[o]) * rin.data<float>()[i];
      dx[i] += a;
      dx_mag[i] += std::abs(a);
      dw[k] += b;
      dw_mag[k] += std::abs(b);
    });
    Tensor in_sizes =
        Tensor::FromVector<int32_t>({int32_t(c.n), int32_t(c.h), int32_t(c.w), int32_t(c.cin)});
    out = RunOp("Conv2DBackpropInput", {in_sizes, f, dy}, attrs);
    ASSERT_TRUE(out.ok()) << what << ": " << out.status();
    ExpectClose((*out)[0], dx, dx_mag, "Conv2DBackpropInput " + what);
    Tensor filter_sizes = Tensor::FromVector<int32_t>(
        {int32_t(c.kh), int32_t(c.kw), int32_t(c.cin), int32_t(c.cout)});
    out = RunOp("Conv2DBackpropFilter", {in, filter_sizes, dy}, attrs);
    ASSERT_TRUE(out.ok()) << what << ": " << out.status();
    ExpectClose((*out)[0], dw, dw_mag, "Conv2DBackpropFilter " + what);
  }
}

// One kernel instance, computed many times (as in a graph).
class OneKernel {
 public:
  OneKernel(const std::string& op, const Attrs& attrs, int intra_op_threads = 2)
      : device_(NewTestCpuDevice(1, intra_op_threads)) {
    const OpDef* op_def = OpRegistry::Global()->LookUp(op);
    NodeDef def;
    def.set_name("node");
    def.set_op(op);
    for (const auto& [k, v] : attrs) (*def.mutable_attr())[k] = v;
    (*def.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    absl::Status s = AddDefaultsAndValidate(*op_def, &def);
    EXPECT_TRUE(s.ok()) << s;
    DataTypeVector in_types, out_types;
    s = ComputeArgTypes(*op_def, def, &in_types, &out_types);
    EXPECT_TRUE(s.ok()) << s;
    auto kernel = KernelRegistry::Global()->CreateKernel(device_.get(), def, in_types, out_types);
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    if (kernel.ok()) kernel_ = *std::move(kernel);
  }

  // Thread-safe, as the executor's use is.
  absl::StatusOr<Tensor> Compute(std::vector<Tensor> in) {
    if (kernel_ == nullptr) return absl::InternalError("no kernel");
    OpKernelContext::Params params;
    params.device = device_.get();
    params.kernel = kernel_.get();
    params.inputs = in.data();
    params.num_inputs = static_cast<int>(in.size());
    OpKernelContext ctx(&params);
    kernel_->Compute(&ctx);
    if (!ctx.status().ok()) return ctx.status();
    return ctx.release_output(0);
  }

 private:
  std::unique_ptr<Device> device_;
  std::unique_ptr<OpKernel> kernel_;
};

TEST(Conv2DTest, OneKernelReusedAcrossShapesAndThreads) {
  // Shapes alternate, and four threads share the kernels: cached primitives must not keep a
  // call's buffers, and scratchpads must be per call.
  const std::vector<ConvCase> cases = {{2, 8, 8, 4, 3, 3, 8, 1, 1, "SAME"},
                                       {3, 6, 5, 4, 3, 3, 8, 1, 1, "SAME"},
                                       {1, 12, 12, 4, 3, 3, 8, 1, 1, "SAME"}};
  OneKernel fwd("Conv2D", cases[0].attrs());
  OneKernel bwd_in("Conv2DBackpropInput", cases[0].attrs());
  OneKernel bwd_f("Conv2DBackpropFilter", cases[0].attrs());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 6; ++iter) {
        const ConvCase& c = cases[(t + iter) % cases.size()];
        Naive ref(c);
        Tensor in = Random({c.n, c.h, c.w, c.cin}, 1000 + t * 10 + iter);
        Tensor f = Random({c.kh, c.kw, c.cin, c.cout}, 2000 + t * 10 + iter);
        Tensor dy = Random({c.n, ref.oh, ref.ow, c.cout}, 3000 + t * 10 + iter);
        std::vector<double> y(c.n * ref.oh * ref.ow * c.cout, 0.0), y_mag(y.size(), 0.0);
        std::vector<double> dx(in.NumElements(), 0.0), dx_mag(dx.size(), 0.0);
        std::vector<double> df(f.NumElements(), 0.0), df_mag(df.size(), 0.0);
        ref.ForEachTerm([&](int64_t i, int64_t k, int64_t o) {
          const double a = double(in.data<float>()[i]) * f.data<float>()[k];
          const double b = double(dy.data<float>()[o]) * f.data<float>()[k];
          const double d = double(dy.data<float>()[o]) * in.data<float>()[i];
          y[o] += a, y_mag[o] += std::abs(a);
          dx[i] += b, dx_mag[i] += std::abs(b);
          df[k] += d, df_mag[k] += std::abs(d);
        });
        auto to32 = [](std::vector<int64_t> v) {
          return Tensor::FromVector<int32_t>(std::vector<int32_t>(v.begin(), v.end()));
        };
        const std::string what = c.Describe() + " thread " + std::to_string(t);
        auto out = fwd.Compute({in, f});
        ASSERT_TRUE(out.ok()) << what << ": " << out.status();
        ExpectClose(*out, y, y_mag, "Conv2D " + what);
        out = bwd_in.Compute({to32({c.n, c.h, c.w, c.cin}), f, dy});
        ASSERT_TRUE(out.ok()) << what << ": " << out.status();
        ExpectClose(*out, dx, dx_mag, "Conv2DBackpropInput " + what);
        out = bwd_f.Compute({in, to32({c.kh, c.kw, c.cin, c.cout}), dy});
        ASSERT_TRUE(out.ok()) << what << ": " << out.status();
        ExpectClose(*out, df, df_mag, "Conv2DBackpropFilter " + what);
      }
    });
  }
  for (auto& th : threads) th.join();
}

TEST(Conv2DTest, EmptyBatchAndZeroChannels) {
  ConvCase c{0, 5, 5, 3, 3, 3, 4, 1, 1, "SAME"};
  auto out = RunOp("Conv2D", {Tensor(DT_FLOAT, {0, 5, 5, 3}), Random({3, 3, 3, 4}, 1)}, c.attrs());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({0, 5, 5, 4}));
  // No input channels: every output is an empty sum.
  out =
      RunOp("Conv2D", {Tensor(DT_FLOAT, {1, 4, 4, 0}), Tensor(DT_FLOAT, {3, 3, 0, 2})}, c.attrs());
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t i = 0; i < (*out)[0].NumElements(); ++i) EXPECT_EQ((*out)[0].data<float>()[i], 0);
  // Filter gradient of an empty batch: zeros.
  out = RunOp("Conv2DBackpropFilter",
              {Tensor(DT_FLOAT, {0, 5, 5, 3}), Tensor::FromVector<int32_t>({3, 3, 3, 4}),
               Tensor(DT_FLOAT, {0, 5, 5, 4})},
              c.attrs());
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t i = 0; i < (*out)[0].NumElements(); ++i) EXPECT_EQ((*out)[0].data<float>()[i], 0);
}

TEST(Conv2DErrorTest, BadShapesAndAttrs) {
  const Attrs same = ConvCase{1, 1, 1, 1, 1, 1, 1, 1, 1, "SAME"}.attrs();
  // Channel mismatch.
  auto out =
      RunOp("Conv2D", {Tensor(DT_FLOAT, {1, 5, 5, 3}), Tensor(DT_FLOAT, {3, 3, 2, 4})}, same);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("channels"), std::string::npos) << out.status();
  // Padding must be SAME or VALID.
  Attrs bad = same;
  bad["padding"] = MakeAttr("FULL");
  out = RunOp("Conv2D", {Tensor(DT_FLOAT, {1, 5, 5, 3}), Tensor(DT_FLOAT, {3, 3, 3, 4})}, bad);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("\"SAME\" or \"VALID\""), std::string::npos)
      << out.status();
  // Strides over the batch.
  bad = same;
  bad["strides"] = MakeAttr(std::vector<int64_t>{2, 1, 1, 1});
  out = RunOp("Conv2D", {Tensor(DT_FLOAT, {1, 5, 5, 3}), Tensor(DT_FLOAT, {3, 3, 3, 4})}, bad);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("strides"), std::string::npos) << out.status();
  // VALID with a window larger than the input.
  bad = same;
  bad["padding"] = MakeAttr("VALID");
  out = RunOp("Conv2D", {Tensor(DT_FLOAT, {1, 2, 2, 3}), Tensor(DT_FLOAT, {3, 3, 3, 4})}, bad);
  ASSERT_FALSE(out.ok());
  // A wrong out_backprop shape is caught by the kernel.
  out = RunOp("Conv2DBackpropInput",
              {Tensor::FromVector<int32_t>({1, 5, 5, 3}), Tensor(DT_FLOAT, {3, 3, 3, 4}),
               Tensor(DT_FLOAT, {1, 4, 5, 4})},
              same);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("out_backprop"), std::string::npos) << out.status();
}

// ---- timing ---------------------------------------------------------------------------------

double MedianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(ConvTiming, DISABLED_CnnLayersBatch128) {
  struct Layer {
    const char* name;
    ConvCase c;
    bool input_grad;  // the first layer's input is the image: no input gradient
  };
  const std::vector<Layer> layers = {
      {"conv1 28x28x1 -> 32", {128, 28, 28, 1, 5, 5, 32, 1, 1, "SAME"}, false},
      {"conv2 14x14x32 -> 64", {128, 14, 14, 32, 5, 5, 64, 1, 1, "SAME"}, true}};
  for (int threads : {1, 2}) {
    double total = 0;
    for (const Layer& l : layers) {
      const ConvCase& c = l.c;
      OneKernel fwd("Conv2D", c.attrs(), threads),
          bwd_in("Conv2DBackpropInput", c.attrs(), threads),
          bwd_f("Conv2DBackpropFilter", c.attrs(), threads);
      Tensor in = Random({c.n, c.h, c.w, c.cin}, 1), f = Random({c.kh, c.kw, c.cin, c.cout}, 2);
      Tensor dy = Random({c.n, c.h, c.w, c.cout}, 3);
      Tensor in_sizes =
          Tensor::FromVector<int32_t>({int32_t(c.n), int32_t(c.h), int32_t(c.w), int32_t(c.cin)});
      Tensor f_sizes = Tensor::FromVector<int32_t>(
          {int32_t(c.kh), int32_t(c.kw), int32_t(c.cin), int32_t(c.cout)});
      std::vector<double> tf, tbi, tbf;
      for (int rep = 0; rep < 23; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_TRUE(fwd.Compute({in, f}).ok());
        auto t1 = std::chrono::steady_clock::now();
        if (l.input_grad) ASSERT_TRUE(bwd_in.Compute({in_sizes, f, dy}).ok());
        auto t2 = std::chrono::steady_clock::now();
        ASSERT_TRUE(bwd_f.Compute({in, f_sizes, dy}).ok());
        auto t3 = std::chrono::steady_clock::now();
        if (rep < 3) continue;  // primitive creation and warm-up
        tf.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        tbi.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
        tbf.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
      }
      const double step = MedianMs(tf) + MedianMs(tbi) + MedianMs(tbf);
      total += step;
      std::cout << "[timing] " << l.name << " batch 128, " << threads
                << " threads, median ms: forward " << MedianMs(tf) << ", input grad "
                << (l.input_grad ? MedianMs(tbi) : 0.0) << ", filter grad " << MedianMs(tbf)
                << ", step " << step << "\n";
    }
    std::cout << "[timing] both layers, " << threads << " threads, forward + backward: " << total
              << " ms per step\n";
  }
}

}  // namespace
}  // namespace shardflow
