// Tests for the CPU nn kernels other than convolution: pooling (kernels/cpu/pooling_ops.cc),
// BiasAdd, ReluGrad, Softmax, LogSoftmax, the cross-entropies and Dropout
// (kernels/cpu/nn_ops.cc), and batch normalisation (kernels/cpu/batch_norm_ops.cc). Values are
// checked against naive loops in double; large logits must stay finite; dropout must be
// deterministic per seed and step and drop about `rate` of its input.
#include "ops/nn_ops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/op_runner.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

using Attrs = std::map<std::string, AttrValue>;

template <typename T = float>
Tensor Random(const TensorShape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(DataTypeToEnum<T>::value, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<T>()[i] = static_cast<T>(dist(gen));
  return t;
}

std::vector<double> Values(const Tensor& t) {
  auto d = CastTensor(t, DT_DOUBLE);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return {};
  return std::vector<double>(d->data<double>(), d->data<double>() + d->NumElements());
}

void ExpectNear(const Tensor& got, const std::vector<double>& want, double tol,
                const std::string& what) {
  const std::vector<double> g = Values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    if (!(std::abs(g[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << want[i];
      ++failures;
    }
  }
}

// ---- pooling --------------------------------------------------------------------------------

struct PoolCase {
  int64_t n, h, w, c, kh, kw, sh, sw;
  std::string padding;
  Attrs attrs() const {
    return {{"ksize", MakeAttr(std::vector<int64_t>{1, kh, kw, 1})},
            {"strides", MakeAttr(std::vector<int64_t>{1, sh, sw, 1})},
            {"padding", MakeAttr(padding)}};
  }
  std::string Describe() const {
    return absl::StrCat("[", n, ",", h, ",", w, ",", c, "] window ", kh, "x", kw, " stride ", sh,
                        "x", sw, " ", padding);
  }
  void Out(int64_t in, int64_t k, int64_t s, int64_t* out, int64_t* pad) const {
    if (padding == "VALID") {
      *out = (in - k) / s + 1;
      *pad = 0;
    } else {
      *out = (in + s - 1) / s;
      *pad = std::max<int64_t>((*out - 1) * s + k - in, 0) / 2;
    }
  }
  // Calls fn(output index, list of input indices in the window, row-major) per output element.
  template <typename Fn>
  void ForEachWindow(Fn fn) const {
    int64_t oh, ow, pt, pl;
    Out(h, kh, sh, &oh, &pt);
    Out(w, kw, sw, &ow, &pl);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t ch = 0; ch < c; ++ch) {
            std::vector<int64_t> idx;
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                const int64_t iy = y * sh - pt + ky, ix = x * sw - pl + kx;
                if (iy >= 0 && iy < h && ix >= 0 && ix < w) {
                  idx.push_back(((b * h + iy) * w + ix) * c + ch);
                }
              }
            fn(((b * oh + y) * ow + x) * c + ch, idx);
          }
  }
};

std::vector<PoolCase> PoolCases() {
  return {{2, 28, 28, 32, 2, 2, 2, 2, "SAME"}, {2, 14, 14, 64, 2, 2, 2, 2, "VALID"},
          {1, 7, 7, 3, 2, 2, 2, 2, "SAME"},    {1, 7, 7, 3, 2, 2, 2, 2, "VALID"},
          {2, 9, 8, 5, 3, 3, 2, 2, "SAME"},    {2, 9, 8, 5, 3, 3, 1, 1, "VALID"},
          {1, 6, 9, 17, 3, 2, 3, 1, "SAME"},   {1, 5, 5, 1, 1, 1, 3, 3, "VALID"}};
}

TEST(PoolingTest, MaxAndAvgMatchNaiveLoops) {
  uint32_t seed = 1;
  for (const PoolCase& p : PoolCases()) {
    Tensor x = Random({p.n, p.h, p.w, p.c}, seed++);
    const float* xv = x.data<float>();
    std::vector<double> want_max, want_avg;
    p.ForEachWindow([&](int64_t o, const std::vector<int64_t>& idx) {
      double m = -1e300, s = 0;
      for (int64_t i : idx) m = std::max<double>(m, xv[i]), s += xv[i];
      want_max.push_back(m);
      want_avg.push_back(s / idx.size());
    });
    auto mx = RunOp("MaxPool", {x}, p.attrs());
    ASSERT_TRUE(mx.ok()) << p.Describe() << ": " << mx.status();
    ExpectNear((*mx)[0], want_max, 0, "MaxPool " + p.Describe());
    auto avg = RunOp("AvgPool", {x}, p.attrs());
    ASSERT_TRUE(avg.ok()) << p.Describe() << ": " << avg.status();
    ExpectNear((*avg)[0], want_avg, 1e-6, "AvgPool " + p.Describe());
  }
}

TEST(PoolingTest, GradientsMatchNaiveLoops) {
  uint32_t seed = 50;
  for (const PoolCase& p : PoolCases()) {
    // Few distinct values, so that windows often hold ties: the first maximum takes the gradient.
    Tensor x(DT_FLOAT, TensorShape({p.n, p.h, p.w, p.c}));
    std::mt19937 gen(seed++);
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = float(gen() % 4);
    auto y = RunOp("MaxPool", {x}, p.attrs());
    ASSERT_TRUE(y.ok()) << y.status();
    Tensor dy = Random((*y)[0].shape(), seed++);
    const float* xv = x.data<float>();
    std::vector<double> want_max(x.NumElements(), 0.0), want_avg(x.NumElements(), 0.0);
    p.ForEachWindow([&](int64_t o, const std::vector<int64_t>& idx) {
      int64_t arg = idx[0];
      for (int64_t i : idx) {
        if (xv[i] > xv[arg]) arg = i;
      }
      want_max[arg] += dy.data<float>()[o];
      for (int64_t i : idx) want_avg[i] += double(dy.data<float>()[o]) / idx.size();
    });
    auto dmax = RunOp("MaxPoolGrad", {x, (*y)[0], dy}, p.attrs());
    ASSERT_TRUE(dmax.ok()) << p.Describe() << ": " << dmax.status();
    ExpectNear((*dmax)[0], want_max, 1e-6, "MaxPoolGrad " + p.Describe());
    Tensor shape =
        Tensor::FromVector<int32_t>({int32_t(p.n), int32_t(p.h), int32_t(p.w), int32_t(p.c)});
    auto davg = RunOp("AvgPoolGrad", {shape, dy}, p.attrs());
    ASSERT_TRUE(davg.ok()) << p.Describe() << ": " << davg.status();
    ExpectNear((*davg)[0], want_avg, 1e-6, "AvgPoolGrad " + p.Describe());
  }
}

// MaxPoolWithArgmax's argmax is the first maximum of each window (ties are common below), as
// a flat index within the image or, with include_batch_in_index, within the batch; its gradient
// kernel puts dy there, and refuses an index outside the input.
TEST(PoolingTest, ArgmaxAndItsGradientMatchNaiveLoops) {
  uint32_t seed = 90;
  for (const PoolCase& p : PoolCases()) {
    Tensor x(DT_FLOAT, TensorShape({p.n, p.h, p.w, p.c}));
    std::mt19937 gen(seed++);
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = float(gen() % 4);
    const float* xv = x.data<float>();
    const int64_t image = p.h * p.w * p.c;
    for (bool with_batch : {false, true}) {
      Attrs attrs = p.attrs();
      attrs["include_batch_in_index"] = MakeAttr(with_batch);
      auto out = RunOp("MaxPoolWithArgmax", {x}, attrs);
      ASSERT_TRUE(out.ok()) << p.Describe() << ": " << out.status();
      const Tensor& argmax = (*out)[1];
      ASSERT_EQ(argmax.dtype(), DT_INT64);
      Tensor dy = Random(argmax.shape(), seed++);
      std::vector<double> want_dx(x.NumElements(), 0.0);
      p.ForEachWindow([&](int64_t o, const std::vector<int64_t>& idx) {
        int64_t arg = idx[0];
        for (int64_t i : idx) {
          if (xv[i] > xv[arg]) arg = i;
        }
        const int64_t want = with_batch ? arg : arg % image;
        EXPECT_EQ(argmax.data<int64_t>()[o], want) << p.Describe() << " output " << o;
        want_dx[arg] += dy.data<float>()[o];
      });
      auto dx = RunOp("MaxPoolGradWithArgmax", {x, dy, argmax}, attrs);
      ASSERT_TRUE(dx.ok()) << p.Describe() << ": " << dx.status();
      ExpectNear((*dx)[0], want_dx, 1e-6, "MaxPoolGradWithArgmax " + p.Describe());
      Tensor bad = argmax;
      bad.data<int64_t>()[0] = with_batch ? p.n * image : image;
      auto refused = RunOp("MaxPoolGradWithArgmax", {x, dy, bad}, attrs);
      ASSERT_FALSE(refused.ok());
      EXPECT_NE(refused.status().message().find("outside the input"), std::string::npos)
          << refused.status();
    }
  }
}

// Windows from an untrusted graph: a ksize or dilation near INT64_MAX gives a clear error or a
// window clipped to the image, never an overflow (core/framework/windowed_output.h).
TEST(PoolingTest, HugeWindowsAreRefusedOrClipped) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Tensor x = Random({1, 4, 4, 2}, 7);
  Attrs pool{{"ksize", MakeAttr(std::vector<int64_t>{1, kMax, 2, 1})},
             {"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
             {"padding", MakeAttr(std::string("SAME"))}};
  auto out = RunOp("MaxPool", {x}, pool);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({1, 4, 4, 2}));
  pool["padding"] = MakeAttr(std::string("VALID"));
  EXPECT_FALSE(RunOp("MaxPool", {x}, pool).ok());
  Attrs depthwise{{"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
                  {"dilations", MakeAttr(std::vector<int64_t>{1, kMax, 1, 1})},
                  {"padding", MakeAttr(std::string("SAME"))}};
  auto dw = RunOp("DepthwiseConv2dNative", {x, Random({2, 2, 2, 1}, 8)}, depthwise);
  ASSERT_FALSE(dw.ok());
  EXPECT_NE(dw.status().message().find("too large a window"), std::string::npos) << dw.status();
}

TEST(PoolingTest, Errors) {
  PoolCase p{1, 4, 4, 1, 2, 2, 2, 2, "SAME"};
  Attrs bad = p.attrs();
  bad["ksize"] = MakeAttr(std::vector<int64_t>{2, 2, 2, 1});
  auto out = RunOp("MaxPool", {Tensor(DT_FLOAT, {1, 4, 4, 1})}, bad);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("ksize"), std::string::npos) << out.status();
  out = RunOp("MaxPool", {Tensor(DT_FLOAT, {4, 4, 1})}, p.attrs());
  EXPECT_FALSE(out.ok());
  out = RunOp("MaxPoolGrad",
              {Tensor(DT_FLOAT, {1, 4, 4, 1}), Tensor(DT_FLOAT, {1, 2, 2, 1}),
               Tensor(DT_FLOAT, {1, 3, 2, 1})},
              p.attrs());
  EXPECT_FALSE(out.ok());
}

// ---- BiasAdd, ReluGrad ----------------------------------------------------------------------

TEST(BiasAddTest, ValuesAndGradientSums) {
  // Rank 4 (a conv output) and rank 2 (a dense layer), float and double.
  for (const TensorShape& shape : {TensorShape({2, 3, 4, 5}), TensorShape({7, 3})}) {
    const int64_t c = shape.dim(shape.rank() - 1);
    Tensor v = Random(shape, 1), b = Random({c}, 2);
    std::vector<double> want(v.NumElements());
    for (int64_t i = 0; i < v.NumElements(); ++i) {
      want[i] = double(v.data<float>()[i]) + b.data<float>()[i % c];
    }
    auto out = RunOp("BiasAdd", {v, b});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], want, 1e-6, "BiasAdd " + shape.DebugString());
    auto dd = RunOp("BiasAdd", {Random<double>(shape, 1), Random<double>({c}, 2)});
    ASSERT_TRUE(dd.ok()) << dd.status();
    ExpectNear((*dd)[0], want, 1e-6, "BiasAdd double " + shape.DebugString());
  }
  // BiasAddGrad over 10^5 rows: float keeps ~6 digits thanks to blocked sums.
  Tensor g = Random({100000, 3}, 3, 0, 1);
  std::vector<double> sums(3, 0.0);
  for (int64_t i = 0; i < g.NumElements(); ++i) sums[i % 3] += g.data<float>()[i];
  auto out = RunOp("BiasAddGrad", {g});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], sums, 1e-6, "BiasAddGrad 100000 rows");
  EXPECT_FALSE(RunOp("BiasAdd", {Tensor(DT_FLOAT, {2, 3}), Tensor(DT_FLOAT, {2})}).ok());
  EXPECT_FALSE(RunOp("BiasAdd", {Tensor(DT_FLOAT, {3}), Tensor(DT_FLOAT, {3})}).ok());
}

TEST(ReluGradTest, PassesWherePositive) {
  auto out = RunOp("ReluGrad", {Tensor::FromVector<float>({1, 2, 3, 4, 5}),
                                Tensor::FromVector<float>({-1, 0, 0.5, 2, -3})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {0, 0, 3, 4, 0}, 0, "ReluGrad");
  auto d =
      RunOp("ReluGrad", {Tensor::FromVector<double>({1, 2}), Tensor::FromVector<double>({1, -1})});
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectNear((*d)[0], {1, 0}, 0, "ReluGrad double");
}

// In a graph, BiasAdd and ReluGrad may take over their first input's buffer (when nothing else
// holds it); the results must not change. Regression test: the kernels once read the input
// after it had been forwarded (and so emptied).
TEST(BiasAddTest, InPlaceInAGraph) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT, TensorShape({2, 3}));
  auto b = ops::Const(s, Tensor::FromVector<float>({10, 20, 30}));
  // Mul's output has one consumer, so it can be forwarded.
  auto y = ops::BiasAdd(s, ops::Mul(s, x, 2.0f), b);
  auto g = ops::ReluGrad(s, ops::Mul(s, x, 3.0f),
                         ops::Const(s, Tensor::FromVector<float>({1, -1, 1, -1, 1, -1}, {2, 3})));
  auto out = test::RunScope(s, {{x.name(), Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}},
                            {y, g});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {12, 24, 36, 18, 30, 42}, 0, "BiasAdd in place");
  ExpectNear((*out)[1], {3, 0, 9, 0, 15, 0}, 0, "ReluGrad in place");
}

// ---- softmax and cross-entropy --------------------------------------------------------------

std::vector<double> RefSoftmax(const std::vector<double>& x, int64_t c, bool log) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / c; ++r) {
    double m = -1e300, s = 0;
    for (int64_t k = 0; k < c; ++k) m = std::max(m, x[r * c + k]);
    for (int64_t k = 0; k < c; ++k) s += std::exp(x[r * c + k] - m);
    for (int64_t k = 0; k < c; ++k) {
      out[r * c + k] = log ? x[r * c + k] - m - std::log(s) : std::exp(x[r * c + k] - m) / s;
    }
  }
  return out;
}

TEST(SoftmaxTest, MatchesReferenceAndStaysFiniteForLargeLogits) {
  for (double scale : {1.0, 1e4}) {
    Tensor x = Random({3, 4, 10}, 7, -scale, scale);
    const std::vector<double> xv = Values(x);
    auto sm = RunOp("Softmax", {x});
    ASSERT_TRUE(sm.ok()) << sm.status();
    ExpectNear((*sm)[0], RefSoftmax(xv, 10, false), 1e-6, "Softmax scale " + std::to_string(scale));
    auto lsm = RunOp("LogSoftmax", {x});
    ASSERT_TRUE(lsm.ok()) << lsm.status();
    ExpectNear((*lsm)[0], RefSoftmax(xv, 10, true), 1e-5,
               "LogSoftmax scale " + std::to_string(scale));
    for (double v : Values((*lsm)[0])) ASSERT_TRUE(std::isfinite(v)) << "LogSoftmax " << v;
  }
  auto d = RunOp("Softmax", {Tensor::FromVector<double>({0, std::log(3.0)})});
  ASSERT_TRUE(d.ok()) << d.status();
  ExpectNear((*d)[0], {0.25, 0.75}, 1e-12, "Softmax double");
  EXPECT_FALSE(RunOp("Softmax", {Tensor::Scalar<float>(1)}).ok());
}

TEST(SoftmaxCrossEntropyTest, DenseLabels) {
  for (double scale : {1.0, 1e4}) {
    const int64_t n = 5, c = 7;
    Tensor x = Random({n, c}, 11, -scale, scale);
    // Each label row a distribution (one row one-hot).
    Tensor labels = Random({n, c}, 12, 0, 1);
    for (int64_t r = 0; r < n; ++r) {
      float* row = labels.data<float>() + r * c;
      double s = 0;
      for (int64_t k = 0; k < c; ++k) s += row[k];
      for (int64_t k = 0; k < c; ++k) row[k] = r == 0 ? (k == 3) : float(row[k] / s);
    }
    const std::vector<double> xv = Values(x), lv = Values(labels);
    const std::vector<double> logp = RefSoftmax(xv, c, true), p = RefSoftmax(xv, c, false);
    std::vector<double> loss(n, 0.0), backprop(n * c);
    for (int64_t i = 0; i < n * c; ++i) {
      loss[i / c] -= lv[i] * logp[i];
      backprop[i] = p[i] - lv[i];
    }
    auto out = RunOp("SoftmaxCrossEntropyWithLogits", {x, labels});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectNear((*out)[0], loss, 1e-5, "loss scale " + std::to_string(scale));
    ExpectNear((*out)[1], backprop, 1e-6, "backprop scale " + std::to_string(scale));
    for (double v : Values((*out)[0])) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST(SoftmaxCrossEntropyTest, SparseLabelsBothIndexTypes) {
  const int64_t n = 6, c = 10;
  for (double scale : {1.0, 1e4}) {
    Tensor x = Random<double>({n, c}, 21, -scale, scale);
    std::vector<int32_t> lab = {0, 9, 3, 3, 5, 1};
    const std::vector<double> xv = Values(x);
    const std::vector<double> logp = RefSoftmax(xv, c, true), p = RefSoftmax(xv, c, false);
    std::vector<double> loss(n), backprop = p;
    for (int64_t r = 0; r < n; ++r) {
      loss[r] = -logp[r * c + lab[r]];
      backprop[r * c + lab[r]] -= 1;
    }
    for (bool wide : {false, true}) {
      Tensor labels =
          wide ? Tensor::FromVector<int64_t>(std::vector<int64_t>(lab.begin(), lab.end()))
               : Tensor::FromVector<int32_t>(lab);
      auto out = RunOp("SparseSoftmaxCrossEntropyWithLogits", {x, labels});
      ASSERT_TRUE(out.ok()) << out.status();
      ExpectNear((*out)[0], loss, 1e-9, "sparse loss");
      ExpectNear((*out)[1], backprop, 1e-12, "sparse backprop");
      auto f = RunOp("SparseSoftmaxCrossEntropyWithLogits", {*CastTensor(x, DT_FLOAT), labels});
      ASSERT_TRUE(f.ok()) << f.status();
      ExpectNear((*f)[0], loss, 1e-5, "sparse loss float");
    }
  }
  // An out-of-range label names its row and value.
  auto bad = RunOp("SparseSoftmaxCrossEntropyWithLogits",
                   {Tensor(DT_FLOAT, {3, 4}), Tensor::FromVector<int32_t>({0, 4, 1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("label 4 at row 1"), std::string::npos) << bad.status();
  bad = RunOp("SparseSoftmaxCrossEntropyWithLogits",
              {Tensor(DT_FLOAT, {2, 4}), Tensor::FromVector<int64_t>({-1, 0})});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("label -1 at row 0"), std::string::npos) << bad.status();
}

// ---- batch normalisation --------------------------------------------------------------------

TEST(FusedBatchNormTest, TrainingAndInference) {
  const int64_t rows = 2 * 5 * 6, c = 4;
  Tensor x = Random({2, 5, 6, c}, 31, -2, 3);
  Tensor scale = Tensor::FromVector<float>({1, 2, 0.5, -1});
  Tensor offset = Tensor::FromVector<float>({0, 1, -1, 0.25});
  const std::vector<double> xv = Values(x), sv = Values(scale), ov = Values(offset);
  std::vector<double> mean(c, 0.0), var(c, 0.0);
  for (int64_t i = 0; i < rows * c; ++i) mean[i % c] += xv[i] / rows;
  for (int64_t i = 0; i < rows * c; ++i) var[i % c] += std::pow(xv[i] - mean[i % c], 2) / rows;
  const float eps = 0.001f;
  auto norm = [&](const std::vector<double>& m, const std::vector<double>& v) {
    std::vector<double> y(rows * c);
    for (int64_t i = 0; i < rows * c; ++i) {
      const int64_t k = i % c;
      y[i] = (xv[i] - m[k]) / std::sqrt(v[k] + eps) * sv[k] + ov[k];
    }
    return y;
  };
  Tensor empty(DT_FLOAT, {0});
  auto out = RunOp("FusedBatchNorm", {x, scale, offset, empty, empty},
                   {{"epsilon", MakeAttr(eps)}, {"is_training", MakeAttr(true)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], norm(mean, var), 1e-5, "training y");
  ExpectNear((*out)[1], mean, 1e-6, "batch_mean");
  std::vector<double> unbiased = var, inv_std(c);
  for (int64_t k = 0; k < c; ++k) {
    unbiased[k] *= double(rows) / (rows - 1);
    inv_std[k] = 1 / std::sqrt(var[k] + eps);
  }
  ExpectNear((*out)[2], unbiased, 1e-5, "batch_variance (Bessel-corrected)");
  ExpectNear((*out)[3], mean, 1e-6, "reserve_space_1");
  ExpectNear((*out)[4], inv_std, 1e-5, "reserve_space_2");

  // Inference uses the given statistics.
  std::vector<double> m2 = {0.5, -0.5, 1, 0}, v2 = {1, 4, 0.25, 2};
  auto f32 = [](const std::vector<double>& v) {
    return Tensor::FromVector<float>(std::vector<float>(v.begin(), v.end()));
  };
  auto inf = RunOp("FusedBatchNorm", {x, scale, offset, f32(m2), f32(v2)},
                   {{"epsilon", MakeAttr(eps)}, {"is_training", MakeAttr(false)}});
  ASSERT_TRUE(inf.ok()) << inf.status();
  ExpectNear((*inf)[0], norm(m2, v2), 1e-5, "inference y");
  ExpectNear((*inf)[1], m2, 0, "inference batch_mean");
  EXPECT_FALSE(
      RunOp("FusedBatchNorm", {x, scale, offset, empty, empty}, {{"is_training", MakeAttr(false)}})
          .ok())
      << "inference needs a mean and variance";
}

// _FusedConv2DBatchNorm may come in a client's graph: statistics of the wrong length and an
// unknown activation are errors naming them.
TEST(FusedConv2DBatchNormTest, BadInputsAreErrors) {
  const Tensor x = Random({1, 3, 3, 2}, 61), f = Random({1, 1, 2, 4}, 62);
  const Tensor four = Tensor::FromVector<float>({1, 1, 1, 1});
  const Tensor three = Tensor::FromVector<float>({1, 1, 1});
  const Attrs attrs = {{"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
                       {"padding", MakeAttr(std::string("SAME"))}};
  auto ok = RunOp("_FusedConv2DBatchNorm", {x, f, four, four, four, four}, attrs);
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto short_scale = RunOp("_FusedConv2DBatchNorm", {x, f, three, four, four, four}, attrs);
  ASSERT_FALSE(short_scale.ok());
  EXPECT_NE(short_scale.status().message().find("channels"), std::string::npos)
      << short_scale.status();
  Attrs bad = attrs;
  bad["activation"] = MakeAttr(std::string("Swish"));
  auto swish = RunOp("_FusedConv2DBatchNorm", {x, f, four, four, four, four}, bad);
  ASSERT_FALSE(swish.ok());
  EXPECT_NE(swish.status().message().find("activation \"Swish\""), std::string::npos)
      << swish.status();
}

// The side input of _FusedConv2DBatchNormAdd broadcasts over the batch as Add would (either
// way round), through the direct, GEMM and broadcasting paths alike; another shape is an error.
TEST(FusedConv2DBatchNormTest, SideInputAddsAndBroadcastsOverTheBatch) {
  const Attrs attrs = {{"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})},
                       {"padding", MakeAttr(std::string("SAME"))},
                       {"activation", MakeAttr(std::string("Relu"))}};
  const Tensor ones = Tensor::FromVector<float>(std::vector<float>(4, 1.0f));
  const Tensor zeros = Tensor::FromVector<float>(std::vector<float>(4, 0.0f));
  const Tensor var = Tensor::FromVector<float>(std::vector<float>(4, 1.0f - 0.001f));
  for (const int64_t n : {1, 3}) {
    for (const int64_t side_n : {1, 3}) {
      const Tensor x = Random({n, 3, 3, 2}, 70), f = Random({1, 1, 2, 4}, 71);
      const Tensor side = Random({side_n, 3, 3, 4}, 72);
      // relu(conv + side) from both residual ops: scale 1, offset 0, mean 0, variance 1 - eps,
      // and bias 0.
      auto conv = RunOp("Conv2D", {x, f},
                        {{"strides", attrs.at("strides")}, {"padding", attrs.at("padding")}});
      ASSERT_TRUE(conv.ok()) << conv.status();
      for (const char* op : {"_FusedConv2DBatchNormAdd", "_FusedConv2DAdd"}) {
        auto out = std::string(op) == "_FusedConv2DAdd"
                       ? RunOp(op, {x, f, zeros, side}, attrs)
                       : RunOp(op, {x, f, ones, zeros, zeros, var, side}, attrs);
        ASSERT_TRUE(out.ok()) << op << ": " << out.status();
        const int64_t batch = std::max(n, side_n), image = 3 * 3 * 4;
        ASSERT_EQ((*out)[0].shape(), TensorShape({batch, 3, 3, 4})) << op;
        for (int64_t b = 0; b < batch; ++b) {
          for (int64_t i = 0; i < image; ++i) {
            const float want = std::max(0.0f, (*conv)[0].data<float>()[(b % n) * image + i] +
                                                  side.data<float>()[(b % side_n) * image + i]);
            EXPECT_NEAR((*out)[0].data<float>()[b * image + i], want, 1e-5)
                << op << ", batch " << n << ", side batch " << side_n << ", element "
                << b * image + i;
          }
        }
      }
    }
  }
  auto bad = RunOp("_FusedConv2DBatchNormAdd",
                   {Random({2, 3, 3, 2}, 70), Random({1, 1, 2, 4}, 71), ones, zeros, zeros, var,
                    Random({3, 3, 3, 4}, 72)},
                   attrs);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not match the convolution's output"),
            std::string::npos)
      << bad.status();
  bad = RunOp("_FusedConv2DAdd",
              {Random({2, 3, 3, 2}, 70), Random({1, 1, 2, 4}, 71), zeros, Random({2, 3, 3, 5}, 72)},
              attrs);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not match the convolution's output"),
            std::string::npos)
      << bad.status();
}

// The statistics take one pass over x (sums of x - shift and its square): a large mean with a
// small deviation, whose first rows (the shift) differ from the rest, keeps the variance exact.
TEST(FusedBatchNormTest, VarianceKeepsPrecisionWithALargeMean) {
  const int64_t rows = 4096, c = 3;
  Tensor x(DT_FLOAT, {rows, c});
  std::mt19937 gen(5);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < c; ++k) {
      // Channel k's mean is 1000 * (k + 1); after row 100 it moves up by 2.
      x.data<float>()[r * c + k] = 1000.0f * (k + 1) + (r >= 100 ? 2.0f : 0.0f) + noise(gen);
    }
  }
  const std::vector<double> xv = Values(x);
  std::vector<double> mean(c, 0.0), var(c, 0.0);
  for (int64_t i = 0; i < rows * c; ++i) mean[i % c] += xv[i] / rows;
  for (int64_t i = 0; i < rows * c; ++i) var[i % c] += std::pow(xv[i] - mean[i % c], 2) / rows;
  for (double& v : var) v *= double(rows) / (rows - 1);
  Tensor empty(DT_FLOAT, {0});
  auto out = RunOp(
      "FusedBatchNorm",
      {x, Tensor::FromVector<float>({1, 1, 1}), Tensor::FromVector<float>({0, 0, 0}), empty, empty},
      {{"epsilon", MakeAttr(0.001f)}, {"is_training", MakeAttr(true)}});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t k = 0; k < c; ++k) {
    EXPECT_NEAR((*out)[1].data<float>()[k], mean[k], 1e-3 * (k + 1)) << "mean " << k;
    EXPECT_NEAR((*out)[2].data<float>()[k], var[k], 1e-3 * var[k]) << "variance " << k;
  }
}

TEST(FusedBatchNormTest, GradientMatchesClosedForm) {
  const int64_t rows = 3 * 4, c = 3;
  Tensor x = Random({3, 4, c}, 41), dy = Random({3, 4, c}, 42);
  Tensor scale = Tensor::FromVector<float>({1.5, -0.5, 2});
  Tensor empty(DT_FLOAT, {0});
  auto fwd = RunOp("FusedBatchNorm", {x, scale, Random({c}, 43), empty, empty});
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  auto out = RunOp("FusedBatchNormGrad", {dy, x, scale, (*fwd)[3], (*fwd)[4]});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> xv = Values(x), g = Values(dy), sv = Values(scale);
  const std::vector<double> mean = Values((*fwd)[3]), inv = Values((*fwd)[4]);
  std::vector<double> dbeta(c, 0.0), dgamma(c, 0.0), dx(rows * c);
  for (int64_t i = 0; i < rows * c; ++i) {
    dbeta[i % c] += g[i];
    dgamma[i % c] += g[i] * (xv[i] - mean[i % c]) * inv[i % c];
  }
  for (int64_t i = 0; i < rows * c; ++i) {
    const int64_t k = i % c;
    const double xhat = (xv[i] - mean[k]) * inv[k];
    dx[i] = sv[k] * inv[k] * (g[i] - dbeta[k] / rows - xhat * dgamma[k] / rows);
  }
  ExpectNear((*out)[0], dx, 1e-5, "x_backprop");
  ExpectNear((*out)[1], dgamma, 1e-5, "scale_backprop");
  ExpectNear((*out)[2], dbeta, 1e-5, "offset_backprop");
  EXPECT_EQ((*out)[3].NumElements(), 0);
}

// ---- dropout --------------------------------------------------------------------------------

// Runs a graph with one Dropout node `steps` times in one session; returns the masks.
std::vector<std::vector<double>> DropoutMasks(const Tensor& x, float rate, int64_t seed,
                                              int steps) {
  Scope s = Scope::NewRootScope();
  auto d = ops::DropoutWithMask(s, ops::Const(s, x), rate, seed);
  auto session = NewSession(SessionOptions());
  EXPECT_TRUE(session.ok());
  GraphDef def;
  EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
  EXPECT_TRUE((*session)->Create(def).ok());
  std::vector<std::vector<double>> masks;
  for (int k = 0; k < steps; ++k) {
    std::vector<Tensor> out;
    absl::Status st = (*session)->Run({}, {d.output.name(), d.mask.name()}, {}, &out);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return masks;
    const std::vector<double> o = Values(out[0]), m = Values(out[1]), xv = Values(x);
    for (size_t i = 0; i < o.size(); ++i) EXPECT_NEAR(o[i], xv[i] * m[i], 1e-6);
    masks.push_back(m);
  }
  return masks;
}

TEST(DropoutTest, DeterministicPerSeedAndStep) {
  Tensor x = Random({64, 100}, 51);
  const float rate = 0.3f;
  auto a = DropoutMasks(x, rate, 1234, 3);
  auto b = DropoutMasks(x, rate, 1234, 3);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(a[k], b[k]) << "step " << k << " differs between runs";
  EXPECT_NE(a[0], a[1]) << "the mask must change from step to step";
  auto other = DropoutMasks(x, rate, 99, 1);
  EXPECT_NE(a[0], other[0]) << "another seed must give another mask";
  // About `rate` of the entries dropped; kept ones scaled by 1 / (1 - rate).
  int64_t dropped = 0;
  for (double m : a[0]) {
    if (m == 0) {
      ++dropped;
    } else {
      EXPECT_NEAR(m, 1 / (1 - rate), 1e-6);
    }
  }
  EXPECT_NEAR(double(dropped) / a[0].size(), rate, 0.03);
}

TEST(DropoutTest, RateZeroAndBadRates) {
  auto out = RunOp("Dropout", {Tensor::FromVector<double>({1, 2, 3})}, {{"rate", MakeAttr(0.0f)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0], {1, 2, 3}, 0, "rate 0 output");
  ExpectNear((*out)[1], {1, 1, 1}, 0, "rate 0 mask");
  for (float bad : {1.0f, -0.1f, 1.5f}) {
    auto r = RunOp("Dropout", {Tensor::FromVector<float>({1})}, {{"rate", MakeAttr(bad)}});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("[0, 1)"), std::string::npos) << r.status();
  }
}

// ---- timing ---------------------------------------------------------------------------------

// Median milliseconds of RunOp(op, inputs, attrs) over 15 runs after 2 warm-ups.
double TimeOp(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  std::vector<double> ms;
  for (int rep = 0; rep < 17; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    auto out = RunOp(op, inputs, attrs);
    auto t1 = std::chrono::steady_clock::now();
    EXPECT_TRUE(out.ok()) << op << ": " << out.status();
    if (rep >= 2) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The memory-bound kernels at the CNN's sizes, batch 128 (--gtest_also_run_disabled_tests).
TEST(NnTiming, DISABLED_CnnSizesBatch128) {
  const PoolCase pool{128, 28, 28, 32, 2, 2, 2, 2, "SAME"};
  for (const TensorShape& shape :
       {TensorShape({128, 28, 28, 32}), TensorShape({128, 14, 14, 64})}) {
    const int64_t c = shape.dim(3);
    Tensor x = Random(shape, 1), g = Random(shape, 2), b = Random({c}, 3);
    auto y = RunOp("MaxPool", {x}, pool.attrs());
    ASSERT_TRUE(y.ok());
    Tensor dy = Random((*y)[0].shape(), 4);
    std::cout << "[timing] " << shape.DebugString() << " ms: MaxPool "
              << TimeOp("MaxPool", {x}, pool.attrs()) << ", MaxPoolGrad "
              << TimeOp("MaxPoolGrad", {x, (*y)[0], dy}, pool.attrs()) << ", BiasAdd "
              << TimeOp("BiasAdd", {x, b}) << ", BiasAddGrad " << TimeOp("BiasAddGrad", {g})
              << ", ReluGrad " << TimeOp("ReluGrad", {g, x}) << ", Relu " << TimeOp("Relu", {x})
              << ", FusedBatchNorm "
              << TimeOp("FusedBatchNorm", {x, b, b, Tensor(DT_FLOAT, {0}), Tensor(DT_FLOAT, {0})})
              << "\n";
  }
  Tensor logits = Random({128, 10}, 5);
  Tensor labels(DT_INT32, {128});
  for (int i = 0; i < 128; ++i) labels.data<int32_t>()[i] = i % 10;
  std::cout << "[timing] [128,10] SparseSoftmaxCrossEntropyWithLogits ms: "
            << TimeOp("SparseSoftmaxCrossEntropyWithLogits", {logits, labels})
            << "; [128,1024] Dropout: "
            << TimeOp("Dropout", {Random({128, 1024}, 6)}, {{"rate", MakeAttr(0.5f)}}) << "\n";
}

}  // namespace
}  // namespace shardflow
