// The op conformance table: one small case per op (inputs and a reference in double), shared by
// the CPU conformance test (tests/kernels/op_conformance_test.cc: every op, every CPU kernel, every
// dtype against the reference) and the GPU one (tests/gpu/gpu_conformance_test.cc: every op with a
// GPU kernel, run on the GPU against the same case on the CPU).
//
//   const ConformanceCase& c = conformance::ConformanceTable().at("MatMul");
//   Tensor want = c.reference(inputs_as_double);
//
// A case gives its inputs in double (cast to the dtype under test, except index inputs such as
// shapes and axes) and a reference function; or, for ops that compute nothing or hold state,
// `custom`, a check by hand. A new op is not done until it has an entry here.
//
// Header-only (inline functions) so that each test binary links on its own; the table is built
// once per process, on first use. Uses gtest's EXPECT_* inside the custom checks.
#ifndef SHARDFLOW_TESTS_KERNELS_CONFORMANCE_TABLE_H_
#define SHARDFLOW_TESTS_KERNELS_CONFORMANCE_TABLE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/framework/attr_value.h"
#include "core/framework/device_name.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/op_def.h"
#include "core/framework/tensor.h"
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/op_runner.h"
#include "runtime/session.h"

namespace shardflow {
namespace conformance {

using Attrs = std::map<std::string, AttrValue>;

// ---- the table ------------------------------------------------------------------------------

struct ConformanceCase {
  // Inputs in argument order. Inputs of a fixed-type argument or of one typed by the swept attr
  // are cast to that type (so give them in double, with values valid for every dtype the op's
  // kernels take: small non-negative integers unless only signed or floating kernels exist).
  // Other inputs (shapes, axes, perms) are passed as given.
  std::vector<Tensor> inputs;
  // The expected first output, in double, from the inputs as the kernel sees them (cast inputs
  // cast back to double). Integer and bool outputs are compared exactly, so the reference must
  // be integral for them.
  std::function<Tensor(const std::vector<Tensor>&)> reference;
  // Extra attrs for a dtype, e.g. Cast's DstT; may be empty.
  std::function<Attrs(DataType)> attrs;
  // The type attr whose kernel constraints give the dtypes to check.
  std::string type_attr = "T";
  // When set, replaces the generic run: checks the op by hand and returns the summary.
  std::function<std::string()> custom;
};

using RefFn = std::function<double(double, double)>;

// Every value of `t` in [lo, hi], and its mean and standard deviation within 0.03 of those
// given (the random ops' checks).
inline void ExpectMoments(const std::string& op, const Tensor& t, double lo, double hi, double mean,
                          double stddev) {
  auto x = CastTensor(t, DT_DOUBLE);
  ASSERT_TRUE(x.ok()) << op << ": " << x.status();
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < x->NumElements(); ++i) {
    double v = x->data<double>()[i];
    EXPECT_TRUE(v >= lo && v <= hi) << op << " value " << v;
    sum += v;
    sum_sq += v * v;
  }
  double n = static_cast<double>(x->NumElements()), m = sum / n;
  EXPECT_NEAR(m, mean, 0.03) << op;
  EXPECT_NEAR(std::sqrt(sum_sq / n - m * m), stddev, 0.03) << op;
}

inline Tensor D(const std::vector<double>& v, const TensorShape& shape) {
  return Tensor::FromVector<double>(v, shape);
}
inline Tensor I32(const std::vector<int32_t>& v) { return Tensor::FromVector<int32_t>(v); }

inline std::vector<double> Values(const Tensor& t) {
  auto d = CastTensor(t, DT_DOUBLE);
  if (!d.ok()) {
    ADD_FAILURE() << "cannot read " << t.DebugString() << " as double: " << d.status();
    return {};
  }
  return std::vector<double>(d->data<double>(), d->data<double>() + d->NumElements());
}

// x: [2,3] -> f(x) element-wise.
inline ConformanceCase Unary(const std::vector<double>& x, const std::function<double(double)>& f) {
  ConformanceCase c;
  c.inputs = {D(x, {2, 3})};
  c.reference = [f](const std::vector<Tensor>& in) {
    std::vector<double> v = Values(in[0]);
    for (double& e : v) e = f(e);
    return D(v, in[0].shape());
  };
  return c;
}

// x: [2,3], y: [3] (broadcast along rows) -> f(x[i,j], y[j]).
inline ConformanceCase Binary(const std::vector<double>& x, const std::vector<double>& y,
                              const RefFn& f) {
  ConformanceCase c;
  c.inputs = {D(x, {2, 3}), D(y, {3})};
  c.reference = [f](const std::vector<Tensor>& in) {
    const std::vector<double> a = Values(in[0]), b = Values(in[1]);
    std::vector<double> z(6);
    for (int i = 0; i < 6; ++i) z[i] = f(a[i], b[i % 3]);
    return D(z, {2, 3});
  };
  return c;
}

// [[1,2,3],[4,5,6]] reduced over axis 1 -> [2].
inline ConformanceCase Reduction(const std::function<double(const std::vector<double>&)>& f) {
  ConformanceCase c;
  c.inputs = {D({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor::Scalar<int32_t>(1)};
  c.reference = [f](const std::vector<Tensor>& in) {
    const std::vector<double> v = Values(in[0]);
    return D({f({v[0], v[1], v[2]}), f({v[3], v[4], v[5]})}, {2});
  };
  return c;
}

// A fixed expectation (for data movement, where the values pass through exactly).
inline ConformanceCase Fixed(std::vector<Tensor> inputs, const Tensor& expected) {
  ConformanceCase c;
  c.inputs = std::move(inputs);
  c.reference = [expected](const std::vector<Tensor>&) { return expected; };
  return c;
}

inline ConformanceCase PassThrough() {
  ConformanceCase c;
  c.inputs = {D({1, 2, 3, 4, 5, 6}, {2, 3})};
  c.reference = [](const std::vector<Tensor>& in) { return in[0]; };
  return c;
}

inline double Sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}

// Dtypes to check for `op` on CPU: each constrained kernel's type for `type_attr`, and float and
// int32 (as far as the op allows them) for a kernel without one, which sets *any_unconstrained.
// DT_INVALID stands for one run of an op without `type_attr` (its inputs have fixed types).
// Sorted, without duplicates.
inline std::vector<DataType> DtypesToCheck(const OpDef& def, const std::string& type_attr,
                                           bool* any_unconstrained) {
  std::set<DataType> out;
  const AttrDef* attr = def.FindAttr(type_attr);
  *any_unconstrained = false;
  for (const KernelDef* k : KernelRegistry::Global()->KernelsForOp(def.name)) {
    if (k->device_type() != kDeviceCpu) continue;
    bool constrained = false;
    for (const auto& [name, type] : k->constraints()) {
      if (name == type_attr) {
        out.insert(type);
        constrained = true;
      }
    }
    if (constrained) continue;
    if (attr == nullptr) {
      out.insert(DT_INVALID);
      continue;
    }
    *any_unconstrained = true;
    const std::vector<DataType>& allowed = attr->allowed_types;
    bool added = false;
    for (DataType dt : {DT_FLOAT, DT_INT32}) {
      if (allowed.empty() || std::count(allowed.begin(), allowed.end(), dt) > 0) {
        out.insert(dt);
        added = true;
      }
    }
    if (!added) out.insert(allowed.front());
  }
  return std::vector<DataType>(out.begin(), out.end());
}

// pred ? x * y : x - y, both ways, for each float dtype, in a session.
inline std::string CheckIf() {
  std::string summary;
  for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
    GraphFunction branches[2];
    for (int b = 0; b < 2; ++b) {
      Scope r = Scope::NewRootScope();
      auto x = ops::Placeholder(r.WithOpName("x"), dt, TensorShape({2}));
      auto y = ops::Placeholder(r.WithOpName("y"), dt, TensorShape({2}));
      auto f = ops::MakeFunction(r, {x, y}, {b == 0 ? ops::Mul(r, x, y) : ops::Sub(r, x, y)});
      EXPECT_TRUE(f.ok()) << f.status();
      if (!f.ok()) return "cannot build the branches";
      branches[b] = *f;
    }
    Scope s = Scope::NewRootScope();
    auto pred = ops::Placeholder(s.WithOpName("pred"), DT_BOOL, TensorShape({}));
    auto x = ops::Const(s, *CastTensor(D({1.5, -2}, {2}), dt));
    auto y = ops::Const(s, *CastTensor(D({2, 4}, {2}), dt));
    auto out = ops::If(s, pred, {x, y}, branches[0], branches[1], {dt});
    ops::Identity(s.WithOpName("out"), out[0]);
    GraphDef def;
    EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
    auto session = NewSession(SessionOptions());
    EXPECT_TRUE(session.ok() && (*session)->Create(def).ok());
    for (bool p : {true, false}) {
      std::vector<Tensor> got;
      absl::Status st = (*session)->Run({{"pred", Tensor::Scalar<bool>(p)}}, {"out"}, {}, &got);
      EXPECT_TRUE(st.ok()) << st;
      if (!st.ok()) return "failed";
      EXPECT_EQ(Values(got[0]), p ? (std::vector<double>{3, -8}) : (std::vector<double>{-0.5, -6}))
          << DataTypeString(dt);
    }
    summary += (summary.empty() ? "" : " ") + DataTypeString(dt);
  }
  return summary + " (a session runs each branch)";
}

// sum = 0; for i in 0..4: sum += x (x of each float dtype), in a session.
inline std::string CheckWhile() {
  std::string summary;
  for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
    Scope rc = Scope::NewRootScope();
    auto i = ops::Placeholder(rc.WithOpName("i"), DT_INT32, TensorShape({}));
    auto acc = ops::Placeholder(rc.WithOpName("acc"), dt, TensorShape({2}));
    auto x = ops::Placeholder(rc.WithOpName("x"), dt, TensorShape({2}));
    auto cond = ops::MakeFunction(rc, {i, acc, x}, {ops::Less(rc, i, 4)});
    Scope rb = Scope::NewRootScope();
    auto bi = ops::Placeholder(rb.WithOpName("i"), DT_INT32, TensorShape({}));
    auto bacc = ops::Placeholder(rb.WithOpName("acc"), dt, TensorShape({2}));
    auto bx = ops::Placeholder(rb.WithOpName("x"), dt, TensorShape({2}));
    auto body =
        ops::MakeFunction(rb, {bi, bacc, bx}, {ops::Add(rb, bi, 1), ops::Add(rb, bacc, bx)});
    EXPECT_TRUE(cond.ok() && body.ok());
    if (!cond.ok() || !body.ok()) return "cannot build the functions";
    Scope s = Scope::NewRootScope();
    auto xv = ops::Const(s, *CastTensor(D({1.5, -2}, {2}), dt));
    auto out = ops::While(s, {0, ops::ZerosLike(s, xv)}, {xv}, *cond, *body);
    ops::Identity(s.WithOpName("sum"), out[1]);
    GraphDef def;
    EXPECT_TRUE(s.ToGraphDef(&def).ok()) << s.status();
    auto session = NewSession(SessionOptions());
    EXPECT_TRUE(session.ok() && (*session)->Create(def).ok());
    std::vector<Tensor> got;
    absl::Status st = (*session)->Run({}, {"sum"}, {}, &got);
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) return "failed";
    EXPECT_EQ(Values(got[0]), (std::vector<double>{6, -8})) << DataTypeString(dt);
    summary += (summary.empty() ? "" : " ") + DataTypeString(dt);
  }
  return summary + " (a session runs the loop; more in tests/runtime/while_test.cc)";
}

// Collectives: every member of a 3-device group in one local session, each dtype the CPU
// kernels take, against a reference in double (tests/runtime/collective_ops_test.cc has the rest).
inline std::string CheckCollective(const std::string& op) {
  constexpr int kMembers = 3;
  const OpDef* def = OpRegistry::Global()->LookUp(op);
  bool any = false;
  std::string summary;
  for (DataType dt : DtypesToCheck(*def, "T", &any)) {
    Scope s = Scope::NewRootScope();
    std::vector<std::string> fetches;
    std::vector<std::vector<double>> inputs;
    for (int m = 0; m < kMembers; ++m) {
      const std::string device = "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(m);
      std::vector<double> v = {double(m), 1, double(m % 2), 0};
      auto value = CastTensor(D(v, {2, 2}), dt);
      EXPECT_TRUE(value.ok()) << value.status();
      if (!value.ok()) return "cast failed";
      inputs.push_back(v);
      Scope d = s.WithDevice(device);
      auto x = ops::Const(d, *value);
      Output y;
      if (op == "CollectiveReduce") y = ops::CollectiveReduce(d, x, kMembers, 1, 1);
      if (op == "CollectiveGather") y = ops::CollectiveGather(d, x, kMembers, 1, 1);
      if (op == "CollectiveBcastSend" || op == "CollectiveBcastRecv") {
        y = m == 1 ? ops::CollectiveBcastSend(d, x, kMembers, 1, 1, {2, 2})
                   : ops::CollectiveBcastRecv(d, dt, {2, 2}, kMembers, 1, 1);
      }
      fetches.push_back(y.name());
    }
    SessionOptions options;
    options.config.set_cpu_device_count(kMembers);
    GraphDef graph;
    EXPECT_TRUE(s.ToGraphDef(&graph).ok()) << s.status();
    auto session = NewSession(options);
    std::vector<Tensor> out;
    absl::Status st = (*session)->Create(graph);
    if (st.ok()) st = (*session)->Run({}, fetches, {}, &out);
    EXPECT_TRUE(st.ok()) << op << " " << DataTypeString(dt) << ": " << st;
    if (!st.ok()) return st.ToString();
    std::vector<double> want;
    if (op == "CollectiveReduce") {
      for (int j = 0; j < 4; ++j) want.push_back(inputs[0][j] + inputs[1][j] + inputs[2][j]);
    } else if (op == "CollectiveGather") {
      for (const auto& v : inputs) want.insert(want.end(), v.begin(), v.end());
    } else {
      want = inputs[1];
    }
    for (int m = 0; m < kMembers; ++m) {
      std::vector<double> got = Values(out[m]);
      EXPECT_EQ(got, want) << op << " " << DataTypeString(dt) << " member " << m;
    }
    summary += (summary.empty() ? "" : " ") + DataTypeString(dt);
  }
  return summary + " (3 devices, one session)";
}

inline const std::map<std::string, ConformanceCase>& ConformanceTable() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, ConformanceCase>;
    auto& m = *t;
    const Tensor x23 = D({1, 2, 3, 4, 5, 6}, {2, 3});

    // Element-wise unary. Signed ops see negatives; floating ones positive values.
    const std::vector<double> signed_x = {-3, -1, 0, 1, 2, 4};
    const std::vector<double> positive_x = {1, 2, 3, 4, 0.5, 8};
    const std::vector<double> small_x = {-2, -1, 0, 0.5, 1, 3};
    m["Neg"] = Unary(signed_x, [](double a) { return -a; });
    m["Abs"] = Unary(signed_x, [](double a) { return std::abs(a); });
    m["Square"] = Unary(signed_x, [](double a) { return a * a; });
    m["Sign"] = Unary(signed_x, [](double a) { return double((a > 0) - (a < 0)); });
    m["Relu"] = Unary(signed_x, [](double a) { return std::max(a, 0.0); });
    m["Sqrt"] = Unary(positive_x, [](double a) { return std::sqrt(a); });
    m["Rsqrt"] = Unary(positive_x, [](double a) { return 1 / std::sqrt(a); });
    m["Log"] = Unary(positive_x, [](double a) { return std::log(a); });
    m["Reciprocal"] = Unary(positive_x, [](double a) { return 1 / a; });
    m["Exp"] = Unary(small_x, [](double a) { return std::exp(a); });
    m["Tanh"] = Unary(small_x, [](double a) { return std::tanh(a); });
    m["Sigmoid"] = Unary(small_x, [](double a) { return 1 / (1 + std::exp(-a)); });
    m["Floor"] = Unary({-2.5, -1, 0, 0.5, 1.5, 3.25}, [](double a) { return std::floor(a); });
    m["Ceil"] = Unary({-2.5, -1, 0, 0.5, 1.5, 3.25}, [](double a) { return std::ceil(a); });
    // Halves round to even: -2.5 -> -2, 0.5 -> 0, 1.5 -> 2.
    m["Round"] =
        Unary({-2.5, -1.25, 0, 0.5, 1.5, 3.75}, [](double a) { return std::nearbyint(a); });
    m["Sin"] = Unary(small_x, [](double a) { return std::sin(a); });
    m["Cos"] = Unary(small_x, [](double a) { return std::cos(a); });
    m["Log1p"] = Unary(positive_x, [](double a) { return std::log1p(a); });
    m["Expm1"] = Unary(small_x, [](double a) { return std::expm1(a); });
    m["Erf"] = Unary(small_x, [](double a) { return std::erf(a); });
    // Lgamma at positive points and between the poles; Digamma against a finite difference of
    // lgamma, Polygamma against its defining series summed directly (an independent reference).
    const std::vector<double> gamma_x = {0.5, 1, 2.5, 7, -0.5, -2.5};
    m["Lgamma"] = Unary(gamma_x, [](double a) { return std::lgamma(a); });
    m["Digamma"] = Unary(gamma_x, [](double a) {  // five-point stencil: error ~h^4
      const double h = 1e-3;
      return (-std::lgamma(a + 2 * h) + 8 * std::lgamma(a + h) - 8 * std::lgamma(a - h) +
              std::lgamma(a - 2 * h)) /
             (12 * h);
    });
    m["Polygamma"] = Binary({1, 2, 3, 1, 2, 1}, {0.5, 1.5, 4}, [](double n, double x) {
      // (-1)^(n+1) n! sum_k (x + k)^-(n+1), the tail past K by its first two Euler-Maclaurin
      // terms.
      const int K = 20000;
      double sum = 0;
      for (int k = K - 1; k >= 0; --k) sum += std::pow(x + k, -(n + 1));
      sum += std::pow(x + K, -n) / n + 0.5 * std::pow(x + K, -(n + 1));
      return (static_cast<int>(n) % 2 == 0 ? -1 : 1) * std::tgamma(n + 1) * sum;
    });
    const std::vector<double> unit_x = {-0.9, -0.5, 0, 0.25, 0.5, 0.75};
    const std::vector<double> above_one = {1, 1.5, 2, 3, 4, 10};
    m["Tan"] = Unary(unit_x, [](double a) { return std::tan(a); });
    m["Asin"] = Unary(unit_x, [](double a) { return std::asin(a); });
    m["Acos"] = Unary(unit_x, [](double a) { return std::acos(a); });
    m["Atan"] = Unary(small_x, [](double a) { return std::atan(a); });
    m["Sinh"] = Unary(small_x, [](double a) { return std::sinh(a); });
    m["Cosh"] = Unary(small_x, [](double a) { return std::cosh(a); });
    m["Asinh"] = Unary(small_x, [](double a) { return std::asinh(a); });
    m["Acosh"] = Unary(above_one, [](double a) { return std::acosh(a); });
    m["Atanh"] = Unary(unit_x, [](double a) { return std::atanh(a); });
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> special = {1, -inf, nan, 0, inf, -2};
    m["IsNan"] = Unary(special, [](double a) { return double(std::isnan(a)); });
    m["IsInf"] = Unary(special, [](double a) { return double(std::isinf(a)); });
    m["IsFinite"] = Unary(special, [](double a) { return double(std::isfinite(a)); });
    m["LogicalNot"] = Unary({0, 1, 1, 0, 2, 0}, [](double a) { return double(a == 0); });

    // Element-wise binary, [2,3] with [3]. Values fit int8 and uint8 (no negative results).
    m["Add"] = Binary({1, 2, 3, 4, 5, 6}, {10, 20, 30}, [](double a, double b) { return a + b; });
    m["Sub"] = Binary({5, 6, 7, 8, 9, 10}, {1, 2, 3}, [](double a, double b) { return a - b; });
    m["Mul"] = Binary({1, 2, 3, 4, 5, 6}, {2, 3, 4}, [](double a, double b) { return a * b; });
    // Exact quotients, so integer division agrees with real division.
    m["Div"] = Binary({2, 4, 6, 5, 8, 9}, {1, 2, 3}, [](double a, double b) { return a / b; });
    m["FloorDiv"] = Binary({7, 8, 9, 5, 4, 10}, {2, 3, 4},
                           [](double a, double b) { return std::floor(a / b); });
    m["FloorMod"] = Binary({7, 8, 9, 5, 4, 10}, {2, 3, 4},
                           [](double a, double b) { return a - std::floor(a / b) * b; });
    m["Maximum"] =
        Binary({1, 5, 2, 7, 3, 0}, {2, 2, 4}, [](double a, double b) { return std::max(a, b); });
    m["Minimum"] =
        Binary({1, 5, 2, 7, 3, 0}, {2, 2, 4}, [](double a, double b) { return std::min(a, b); });
    // Integral values and non-negative exponents: Pow has int32 and int64 kernels too (negative
    // exponents and wrapping: tests/kernels/cwise_ops_test.cc).
    m["Pow"] =
        Binary({1, 2, 3, 0, 4, 5}, {2, 0, 3}, [](double a, double b) { return std::pow(a, b); });
    m["BitwiseAnd"] = Binary({1, 2, 3, 4, 5, 6}, {3, 5, 6}, [](double a, double b) {
      return double(static_cast<int>(a) & static_cast<int>(b));
    });
    m["BitwiseOr"] = Binary({1, 2, 3, 4, 5, 6}, {3, 5, 6}, [](double a, double b) {
      return double(static_cast<int>(a) | static_cast<int>(b));
    });
    m["BitwiseXor"] = Binary({1, 2, 3, 4, 5, 6}, {3, 5, 6}, [](double a, double b) {
      return double(static_cast<int>(a) ^ static_cast<int>(b));
    });
    m["LeftShift"] = Binary({1, 2, 3, 4, 5, 6}, {0, 1, 2}, [](double a, double b) {
      return double(static_cast<int>(a) << static_cast<int>(b));
    });
    m["RightShift"] = Binary({8, 9, 10, 12, 5, 6}, {0, 1, 2}, [](double a, double b) {
      return double(static_cast<int>(a) >> static_cast<int>(b));
    });
    m["PopulationCount"] = Unary({0, 1, 3, 7, 8, 127}, [](double a) {
      return double(__builtin_popcount(static_cast<unsigned>(a)));
    });
    // Strings (the generic run casts through double): RE2 syntax, as TensorFlow's.
    m["RegexReplace"].custom = [] {
      const Tensor in = Tensor::FromVector<std::string>({"a1b22", "xyz"}, TensorShape({2}));
      auto out = RunOp("RegexReplace", {in, Tensor::Scalar<std::string>("([0-9]+)"),
                                        Tensor::Scalar<std::string>("<\\1>")});
      if (!out.ok()) {
        ADD_FAILURE() << "RegexReplace: " << out.status();
        return std::string("failed");
      }
      EXPECT_EQ((*out)[0].data<std::string>()[0], "a<1>b<22>");
      EXPECT_EQ((*out)[0].data<std::string>()[1], "xyz");
      return std::string("string, every match");
    };
    // TensorFlow's documented examples (tf.strings.to_hash_bucket*): the same buckets.
    auto hash_case = [](const char* op, Attrs attrs, std::vector<std::string> words,
                        std::vector<int64_t> want) {
      Tensor in(DT_STRING, TensorShape({static_cast<int64_t>(words.size())}));
      for (size_t i = 0; i < words.size(); ++i) in.data<std::string>()[i] = words[i];
      attrs["num_buckets"] = MakeAttr(3);
      auto out = RunOp(op, {in}, attrs);
      if (!out.ok()) {
        ADD_FAILURE() << op << ": " << out.status();
        return std::string("failed");
      }
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ((*out)[0].data<int64_t>()[i], want[i]) << op << " of '" << words[i] << "'";
      }
      return std::string("string (TensorFlow's documented buckets)");
    };
    m["StringToHashBucketFast"].custom = [=] {
      return hash_case("StringToHashBucketFast", {}, {"Hello", "TensorFlow", "2.x"}, {0, 2, 2});
    };
    m["StringToHashBucket"].custom = [=] {
      return hash_case("StringToHashBucket", {}, {"Hello", "TensorFlow", "2.x"}, {2, 0, 1});
    };
    m["StringToHashBucketStrong"].custom = [=] {
      Attrs key = {{"key", MakeAttr(std::vector<int64_t>{1, 2})}};
      return hash_case("StringToHashBucketStrong", key, {"Hello", "TF"}, {2, 0});
    };
    m["RegexFullMatch"].custom = [] {
      const Tensor in = Tensor::FromVector<std::string>({"ab12", "ab", "12"}, TensorShape({3}));
      auto out = RunOp("RegexFullMatch", {in, Tensor::Scalar<std::string>("[a-z]+[0-9]+")});
      if (!out.ok()) {
        ADD_FAILURE() << "RegexFullMatch: " << out.status();
        return std::string("failed");
      }
      EXPECT_EQ(Values((*out)[0]), (std::vector<double>{1, 0, 0}));
      return std::string("string");
    };
    // ~x depends on the width and signedness: every integer dtype by hand.
    m["Invert"].custom = [] {
      std::string summary;
      const Tensor x = D({0, 1, 5, 127}, {4});
      for (DataType dt : {DT_INT8, DT_UINT8, DT_INT32, DT_INT64}) {
        auto out = RunOp("Invert", {*CastTensor(x, dt)}, {{"T", MakeAttr(dt)}});
        if (!out.ok() || out->size() != 1) {
          ADD_FAILURE() << "Invert " << DataTypeString(dt) << ": " << out.status();
          continue;
        }
        const bool u = dt == DT_UINT8;
        const std::vector<double> want =
            u ? std::vector<double>{255, 254, 250, 128} : std::vector<double>{-1, -2, -6, -128};
        EXPECT_EQ((*out)[0].dtype(), dt);
        EXPECT_EQ(Values((*out)[0]), want) << DataTypeString(dt);
        summary += (summary.empty() ? "" : " ") + DataTypeString(dt);
      }
      return summary;
    };
    m["Atan2"] = Binary({1, -1, 0.5, -2, 3, 0}, {2, -0.5, 1},
                        [](double a, double b) { return std::atan2(a, b); });
    m["SquaredDifference"] =
        Binary({1, 5, 2, 7, 3, 0}, {2, 2, 4}, [](double a, double b) { return (a - b) * (a - b); });
    // Comparisons: less, equal and greater pairs; as bools {F,T,T,T,T,F} vs {F,T,T}.
    const std::vector<double> cx = {0, 1, 2, 3, 2, 0}, cy = {0, 2, 1};
    m["Equal"] = Binary(cx, cy, [](double a, double b) { return double(a == b); });
    m["NotEqual"] = Binary(cx, cy, [](double a, double b) { return double(a != b); });
    m["Less"] = Binary(cx, cy, [](double a, double b) { return double(a < b); });
    m["LessEqual"] = Binary(cx, cy, [](double a, double b) { return double(a <= b); });
    m["Greater"] = Binary(cx, cy, [](double a, double b) { return double(a > b); });
    m["GreaterEqual"] = Binary(cx, cy, [](double a, double b) { return double(a >= b); });
    m["LogicalAnd"] = Binary(cx, cy, [](double a, double b) { return double(a != 0 && b != 0); });
    m["LogicalOr"] = Binary(cx, cy, [](double a, double b) { return double(a != 0 || b != 0); });

    // Select: condition [2,3] (Select also [2], a row each); SelectV2: condition [2,1] with t
    // [2,3] and e [3].
    const auto select_ref = [](const TensorShape& cond_shape, bool v2) {
      return [cond_shape, v2](const std::vector<Tensor>& in) {
        const std::vector<double> c = Values(in[0]), t = Values(in[1]), e = Values(in[2]);
        std::vector<double> z(6);
        for (int i = 0; i < 6; ++i) {
          const int row = i / 3, col = i % 3;
          const double pick = cond_shape.num_elements() == 6 ? c[i] : c[row];
          z[i] = pick != 0 ? t[i] : e[v2 ? col : i];
        }
        return D(z, {2, 3});
      };
    };
    ConformanceCase select;
    select.inputs = {D({1, 0, 0, 1, 1, 0}, {2, 3}), x23, D({7, 8, 9, 10, 11, 12}, {2, 3})};
    select.reference = select_ref({2, 3}, false);
    m["Select"] = select;
    ConformanceCase select_v2;
    select_v2.inputs = {D({0, 1}, {2, 1}), x23, D({7, 8, 9}, {3})};
    select_v2.reference = select_ref({2, 1}, true);
    m["SelectV2"] = select_v2;

    ConformanceCase addn;
    addn.inputs = {x23, D({10, 20, 30, 40, 50, 60}, {2, 3}), D({0, 1, 0, 1, 0, 1}, {2, 3})};
    addn.reference = [](const std::vector<Tensor>& in) {
      std::vector<double> z(6, 0.0);
      for (const Tensor& t : in) {
        const std::vector<double> v = Values(t);
        for (int i = 0; i < 6; ++i) z[i] += v[i];
      }
      return D(z, {2, 3});
    };
    m["AddN"] = addn;

    // Reductions over axis 1 of [[1,2,3],[4,5,6]]; the means are whole numbers.
    m["Sum"] = Reduction(Sum);
    m["Mean"] = Reduction([](const std::vector<double>& v) { return Sum(v) / v.size(); });
    m["Max"] = Reduction(
        [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
    m["Min"] = Reduction(
        [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
    m["Prod"] = Reduction([](const std::vector<double>& v) {
      double p = 1;
      for (double e : v) p *= e;
      return p;
    });
    m["ArgMax"] =
        Fixed({D({1, 5, 3, 6, 2, 4}, {2, 3}), Tensor::Scalar<int32_t>(1)}, D({1, 0}, {2}));

    ConformanceCase matmul;
    matmul.inputs = {x23, D({1, 0, 0, 1, 2, -1}, {3, 2})};
    matmul.reference = [](const std::vector<Tensor>& in) {
      const std::vector<double> a = Values(in[0]), b = Values(in[1]);
      std::vector<double> z(4, 0.0);
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          for (int k = 0; k < 3; ++k) z[i * 2 + j] += a[i * 3 + k] * b[k * 2 + j];
        }
      }
      return D(z, {2, 2});
    };
    m["MatMul"] = matmul;
    // Two items of x against one y (broadcast): [2, 2, 3] x [3, 2], y^T given with adj_y.
    m["BatchMatMulV2"] = Fixed(
        {D({1, 2, 3, 4, 5, 6, 0, 1, 0, -1, 0, 2}, {2, 2, 3}), D({1, 0, 2, 0, 1, -1}, {1, 2, 3})},
        D({7, -1, 16, -1, 0, 1, 3, -2}, {2, 2, 2}));
    m["BatchMatMulV2"].attrs = [](DataType) { return Attrs{{"adj_y", MakeAttr(true)}}; };
    // The graph optimizer's MatMul + BiasAdd + Relu: relu([[7, -1], [16, -1]] + [0.5, -0.5]).
    m["_FusedMatMul"] = Fixed({x23, D({1, 0, 0, 1, 2, -1}, {3, 2}), D({0.5, -0.5}, {2})},
                              D({7.5, 0, 16.5, 0}, {2, 2}));
    m["_FusedMatMul"].attrs = [](DataType) {
      return Attrs{{"activation", MakeAttr(std::string("Relu"))}};
    };

    // Array ops: small fixed expectations.
    m["Identity"] = PassThrough();
    // A partial shape the [2, 3] input fits passes it through (a misfit: python/unit's test).
    m["EnsureShape"] = PassThrough();
    m["EnsureShape"].attrs = [](DataType) {
      return Attrs{{"shape", MakeAttr(TensorShape({-1, 3}))}};
    };
    // No outputs: passes when the condition holds, else fails with TF1's message (each data
    // tensor summarized in brackets, matrices row by row, "..." past `summarize` values).
    m["Assert"].custom = [] {
      const Tensor text = Tensor::Scalar<std::string>("x:0 =");
      const Tensor x = Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape({2, 2}));
      const Attrs attrs = {{"T", MakeAttr(std::vector<DataType>{DT_STRING, DT_INT32})},
                           {"summarize", MakeAttr(int64_t{3})}};
      auto ok = RunOp("Assert", {Tensor::Scalar<bool>(true), text, x}, attrs);
      EXPECT_TRUE(ok.ok()) << ok.status();
      auto failed = RunOp("Assert", {Tensor::Scalar<bool>(false), text, x}, attrs);
      EXPECT_FALSE(failed.ok());
      EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(failed.status().message().find("assertion failed: [x:0 =] [[1 2][3...]...]"),
                std::string::npos)
          << failed.status();
      return std::string("passes and fails");
    };
    // A list of two dtypes passes through unchanged.
    m["IdentityN"].custom = [] {
      const Tensor a = D({1.5, -2, 3}, {3});
      const Tensor b = Tensor::FromVector<int32_t>({7, 8}, TensorShape({2, 1}));
      auto out =
          RunOp("IdentityN", {a, b}, {{"T", MakeAttr(std::vector<DataType>{DT_DOUBLE, DT_INT32})}});
      if (!out.ok() || out->size() != 2) {
        ADD_FAILURE() << "IdentityN: " << out.status();
        return std::string("failed");
      }
      EXPECT_EQ(Values((*out)[0]), Values(a));
      EXPECT_EQ((*out)[1].dtype(), DT_INT32);
      EXPECT_EQ((*out)[1].shape(), TensorShape({2, 1}));
      EXPECT_EQ(Values((*out)[1]), Values(b));
      return std::string("double and int32 in one list");
    };
    m["StopGradient"] = PassThrough();
    m["Reshape"] = Fixed({x23, I32({3, -1})}, D({1, 2, 3, 4, 5, 6}, {3, 2}));
    m["ExpandDims"] = Fixed({x23, Tensor::Scalar<int32_t>(-1)}, D({1, 2, 3, 4, 5, 6}, {2, 3, 1}));
    m["Squeeze"] = Fixed({D({1, 2, 3, 4, 5, 6}, {1, 2, 1, 3})}, x23);
    m["Shape"] = Fixed({D({1, 2, 3, 4, 5, 6}, {3, 1, 2})}, D({3, 1, 2}, {3}));
    m["Transpose"] = Fixed({x23, I32({1, 0})}, D({1, 4, 2, 5, 3, 6}, {3, 2}));
    m["Concat"] = Fixed({D({1, 2, 3, 4}, {2, 2}), D({5, 6}, {2, 1}), Tensor::Scalar<int32_t>(1)},
                        D({1, 2, 5, 3, 4, 6}, {2, 3}));
    m["Slice"] = Fixed({x23, I32({0, 1}), I32({2, -1})}, D({2, 3, 5, 6}, {2, 2}));
    // Columns 2, 0, 2 of x23; the gradient adds rows back where they came from.
    m["GatherV2"] =
        Fixed({x23, I32({2, 0, 2}), Tensor::Scalar<int32_t>(1)}, D({3, 1, 3, 6, 4, 6}, {2, 3}));
    m["GatherV2"].type_attr = "Tparams";
    m["GatherV2Grad"] = Fixed({x23, I32({2, 0, 2}), Tensor::Scalar<int32_t>(1), I32({2, 4})},
                              D({2, 0, 4, 0, 5, 0, 10, 0}, {2, 4}));
    m["While"].custom = [] { return CheckWhile(); };
    m["If"].custom = [] { return CheckIf(); };
    m["Fill"] =
        Fixed({I32({2, 3}), Tensor::Scalar<double>(7)}, D(std::vector<double>(6, 7), {2, 3}));
    m["ZerosLike"] = Fixed({x23}, D(std::vector<double>(6, 0), {2, 3}));
    m["OnesLike"] = Fixed({x23}, D(std::vector<double>(6, 1), {2, 3}));

    // Cast from the swept type to int32: truncation toward zero.
    ConformanceCase cast =
        Unary({-2.75, -1, 0, 1.5, 2.25, 3.75}, [](double a) { return std::trunc(a); });
    cast.type_attr = "SrcT";
    cast.attrs = [](DataType) { return Attrs{{"DstT", MakeAttr(DT_INT32)}}; };
    m["Cast"] = cast;

    // Const: no inputs; the value attr is built in the swept dtype.
    ConformanceCase constant = Fixed({}, x23);
    constant.type_attr = "dtype";
    constant.attrs = [x23](DataType dt) {
      auto value = CastTensor(x23, dt);
      EXPECT_TRUE(value.ok()) << value.status();
      return Attrs{{"value", MakeAttr(value.ok() ? *value : Tensor())}};
    };
    m["Const"] = constant;

    // ---- state and training ops: checked by hand, float and double ----
    m["SumToShape"] = Fixed({x23, I32({3})}, D({5, 7, 9}, {3}));
    m["CheckNumerics"] = Fixed({x23}, x23);
    {
      // LRN of a [1,1,2,3] image, radius 1, bias 1, alpha 0.5, beta 0.5.
      ConformanceCase lrn;
      lrn.inputs = {D({1, 2, 3, -1, 0, 2}, {1, 1, 2, 3})};
      lrn.attrs = [](DataType) {
        return Attrs{{"depth_radius", MakeAttr(int64_t{1})},
                     {"bias", MakeAttr(1.0f)},
                     {"alpha", MakeAttr(0.5f)},
                     {"beta", MakeAttr(0.5f)}};
      };
      lrn.reference = [](const std::vector<Tensor>& in) {
        const std::vector<double> x = Values(in[0]);
        std::vector<double> y(6);
        for (int p = 0; p < 2; ++p) {
          for (int c = 0; c < 3; ++c) {
            double sum = 0;
            for (int j = std::max(0, c - 1); j <= std::min(2, c + 1); ++j) {
              sum += x[p * 3 + j] * x[p * 3 + j];
            }
            y[p * 3 + c] = x[p * 3 + c] / std::sqrt(1 + 0.5 * sum);
          }
        }
        return D(y, {1, 1, 2, 3});
      };
      m["LRN"] = lrn;
      // LRNGrad is checked against finite differences in tests/ops/nn_grad_test.cc; here its
      // gradient of a radius-0 LRN with beta 0.5, bias 1, alpha 1 at x: dy * (1 + x^2)^-1.5.
      ConformanceCase lrn_grad;
      lrn_grad.inputs = {D({1, 1, 1, 1, 1, 1}, {1, 1, 2, 3}),
                         D({0, 1, 2, -1, 0.5, 3}, {1, 1, 2, 3}),
                         D({0, 0, 0, 0, 0, 0}, {1, 1, 2, 3})};
      lrn_grad.attrs = [](DataType) {
        return Attrs{{"depth_radius", MakeAttr(int64_t{0})},
                     {"bias", MakeAttr(1.0f)},
                     {"alpha", MakeAttr(1.0f)},
                     {"beta", MakeAttr(0.5f)}};
      };
      lrn_grad.reference = [](const std::vector<Tensor>& in) {
        std::vector<double> x = Values(in[1]);
        for (double& v : x) v = std::pow(1 + v * v, -1.5);
        return D(x, {1, 1, 2, 3});
      };
      m["LRNGrad"] = lrn_grad;
    }
    m["ReverseV2"] = Fixed({x23, I32({1})}, D({3, 2, 1, 6, 5, 4}, {2, 3}));
    m["Cumsum"] = Fixed({x23, I32({1})}, D({1, 3, 6, 4, 9, 15}, {2, 3}));
    m["Cumprod"] = Fixed({x23, I32({1})}, D({1, 2, 6, 4, 20, 120}, {2, 3}));
    // Rows 0 and 2 into segment 0, row 1 into segment 1.
    const Tensor rows32 = D({1, 2, 3, 4, 5, 6}, {3, 2});
    const std::vector<Tensor> segment_args = {rows32, I32({0, 1, 0}), Tensor::Scalar<int32_t>(2)};
    m["UnsortedSegmentSum"] = Fixed(segment_args, D({6, 8, 3, 4}, {2, 2}));
    m["UnsortedSegmentMax"] = Fixed(segment_args, D({5, 6, 3, 4}, {2, 2}));
    m["UnsortedSegmentMin"] = Fixed(segment_args, D({1, 2, 3, 4}, {2, 2}));
    m["UnsortedSegmentProd"] = Fixed(segment_args, D({5, 12, 3, 4}, {2, 2}));
    // The 2 largest of each row, largest first (ties: the lower index): [5, 3] and [6, 5].
    m["TopKV2"] =
        Fixed({D({1, 5, 3, 6, 2, 5}, {2, 3}), Tensor::Scalar<int32_t>(2)}, D({5, 3, 6, 5}, {2, 2}));
    // grad [[7, 8], [9, 10]] to the positions [[1, 2], [0, 2]] of each row.
    m["TopKV2Grad"] = Fixed({x23, Tensor::FromVector<int32_t>({1, 2, 0, 2}, TensorShape({2, 2})),
                             D({7, 8, 9, 10}, {2, 2})},
                            D({0, 7, 8, 9, 0, 10}, {2, 3}));
    // True (non-zero) at [0,1], [1,0] and [1,2].
    m["Where"] = Fixed({D({0, 1, 0, 1, 0, 1}, {2, 3})},
                       Tensor::FromVector<int64_t>({0, 1, 1, 0, 1, 2}, TensorShape({3, 2})));
    // Every dtype by hand (strings too, which the generic run cannot cast to): y = first
    // appearances in order, idx = where each element's value sits in y.
    m["Unique"].custom = [] {
      std::string summary;
      auto check = [&](Tensor x, const std::vector<int64_t>& want_y_at, DataType idx_type,
                       const std::vector<int64_t>& want_idx) {
        const std::string what =
            DataTypeString(x.dtype()) + " -> " + DataTypeString(idx_type) + " indices";
        auto out =
            RunOp("Unique", {x}, {{"T", MakeAttr(x.dtype())}, {"out_idx", MakeAttr(idx_type)}});
        if (!out.ok() || out->size() != 2) {
          ADD_FAILURE() << "Unique " << what << ": " << out.status();
          return;
        }
        const Tensor& y = (*out)[0];
        auto idx = CastTensor((*out)[1], DT_INT64);
        EXPECT_EQ(y.dtype(), x.dtype()) << what;
        EXPECT_EQ((*out)[1].dtype(), idx_type) << what;
        ASSERT_EQ(y.NumElements(), static_cast<int64_t>(want_y_at.size())) << what;
        for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(idx->data<int64_t>()[i], want_idx[i]) << what;
        if (x.dtype() == DT_STRING) {
          for (size_t k = 0; k < want_y_at.size(); ++k) {
            EXPECT_EQ(y.data<std::string>()[k], x.data<std::string>()[want_y_at[k]]) << what;
          }
        } else {
          const std::vector<double> xs = Values(x), ys = Values(y);
          for (size_t k = 0; k < want_y_at.size(); ++k) EXPECT_EQ(ys[k], xs[want_y_at[k]]) << what;
        }
        summary += (summary.empty() ? "" : " ") + DataTypeString(x.dtype());
      };
      const Tensor x = D({3, 1, 3, 2, 1, 3}, {6});
      for (DataType dt : {DT_FLOAT, DT_DOUBLE, DT_INT8, DT_UINT8, DT_INT32, DT_INT64}) {
        check(*CastTensor(x, dt), {0, 1, 3}, dt == DT_INT32 ? DT_INT64 : DT_INT32,
              {0, 1, 0, 2, 1, 0});
      }
      check(Tensor::FromVector<bool>({true, false, true, true, false, true}), {0, 1}, DT_INT32,
            {0, 1, 0, 0, 1, 0});
      Tensor words(DT_STRING, TensorShape({6}));
      const char* w[] = {"the", "cat", "the", "sat", "cat", "the"};
      for (int i = 0; i < 6; ++i) words.data<std::string>()[i] = w[i];
      check(words, {0, 1, 3}, DT_INT64, {0, 1, 0, 2, 1, 0});
      return summary + " (and both index types)";
    };
    m["Print"] = Fixed({x23, D({7, 8}, {2})}, x23);  // prints "[7 8]" to stderr
    m["Print"].attrs = [](DataType) {
      return Attrs{{"U", MakeAttr(std::vector<DataType>{DT_DOUBLE})}};
    };
    auto make_var = [](const std::string& name, DataType dt, const Tensor& value) {
      auto h = RunOp("VarHandleOp", {},
                     {{"dtype", MakeAttr(dt)},
                      {"shape", MakeAttr(value.shape())},
                      {"shared_name", MakeAttr(name)}});
      EXPECT_TRUE(h.ok()) << h.status();
      if (!h.ok()) return Tensor();
      auto v = CastTensor(value, dt);
      auto a = RunOp("AssignVariableOp", {(*h)[0], *v});
      EXPECT_TRUE(a.ok()) << a.status();
      return (*h)[0];
    };
    auto read_var = [](const Tensor& handle, DataType dt) {
      auto r = RunOp("ReadVariableOp", {handle}, {{"dtype", MakeAttr(dt)}});
      EXPECT_TRUE(r.ok()) << r.status();
      auto d = r.ok() ? CastTensor((*r)[0], DT_DOUBLE) : absl::StatusOr<Tensor>(Tensor());
      return d.ok() ? *d : Tensor();
    };
    auto expect_near = [](const Tensor& got, const std::vector<double>& want, const char* what) {
      ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << what;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(got.data<double>()[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i])))
            << what << " element " << i;
      }
    };
    auto scalar = [](double v, DataType dt) { return *CastTensor(Tensor::Scalar(v), dt); };
    m["VarHandleOp"].custom = [=] {
      for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
        Tensor h = make_var("conformance/var_" + DataTypeString(dt), dt, D({1, 2}, {2}));
        expect_near(read_var(h, dt), {1, 2}, "VarHandleOp + AssignVariableOp + ReadVariableOp");
      }
      return std::string("float double (with AssignVariableOp and ReadVariableOp)");
    };
    m["ReadVariableOp"].custom = m["VarHandleOp"].custom;
    m["AssignVariableOp"].custom = m["VarHandleOp"].custom;
    m["AssignAddVariableOp"].custom = [=] {
      for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
        Tensor h = make_var("conformance/add_" + DataTypeString(dt), dt, D({1, 2}, {2}));
        EXPECT_TRUE(RunOp("AssignAddVariableOp", {h, *CastTensor(D({10, 20}, {2}), dt)}).ok());
        expect_near(read_var(h, dt), {11, 22}, "AssignAddVariableOp");
      }
      return std::string("float double");
    };
    m["VarIsInitializedOp"].custom = [=] {
      Tensor h = make_var("conformance/init_check", DT_FLOAT, D({1}, {1}));
      auto r = RunOp("VarIsInitializedOp", {h});
      EXPECT_TRUE(r.ok() && (*r)[0].scalar<bool>());
      Tensor missing(DT_STRING, TensorShape());
      missing.data<std::string>()[0] = "conformance/no_such_variable";
      auto r2 = RunOp("VarIsInitializedOp", {missing});
      EXPECT_TRUE(r2.ok() && !(*r2)[0].scalar<bool>());
      return std::string("string handle (true and false cases)");
    };
    m["ResourceCountUpTo"].custom = [=] {
      for (DataType dt : {DT_INT32, DT_INT64}) {
        Tensor h = make_var("conformance/count_" + DataTypeString(dt), dt, D({1}, {}));
        Attrs attrs = {{"limit", MakeAttr(2)}, {"T", MakeAttr(dt)}};
        auto first = RunOp("ResourceCountUpTo", {h}, attrs);
        EXPECT_TRUE(first.ok()) << first.status();
        if (first.ok()) expect_near(*CastTensor((*first)[0], DT_DOUBLE), {1}, "count_up_to");
        auto limit = RunOp("ResourceCountUpTo", {h}, attrs);
        EXPECT_EQ(limit.status().code(), absl::StatusCode::kOutOfRange) << limit.status();
        expect_near(read_var(h, dt), {2}, "count_up_to at its limit");
      }
      return std::string("int32 int64 (increments, then OutOfRange at the limit)");
    };
    m["ResourceApplyGradientDescent"].custom = [=] {
      for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
        Tensor h = make_var("conformance/sgd_" + DataTypeString(dt), dt, D({1, 2}, {2}));
        EXPECT_TRUE(RunOp("ResourceApplyGradientDescent",
                          {h, scalar(0.5, dt), *CastTensor(D({2, 4}, {2}), dt)})
                        .ok());
        expect_near(read_var(h, dt), {0, 0}, "ResourceApplyGradientDescent");
      }
      return std::string("float double");
    };
    m["ResourceApplyMomentum"].custom = [=] {
      for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
        Tensor v = make_var("conformance/mom_v_" + DataTypeString(dt), dt, D({1, 2}, {2}));
        Tensor a = make_var("conformance/mom_a_" + DataTypeString(dt), dt, D({1, 1}, {2}));
        EXPECT_TRUE(RunOp("ResourceApplyMomentum",
                          {v, a, scalar(0.1, dt), *CastTensor(D({2, 4}, {2}), dt), scalar(0.9, dt)})
                        .ok());
        // accum = 0.9 * 1 + g; var -= 0.1 * accum
        expect_near(read_var(a, dt), {2.9, 4.9}, "ResourceApplyMomentum accum");
        expect_near(read_var(v, dt), {1 - 0.29, 2 - 0.49}, "ResourceApplyMomentum var");
        auto same =
            RunOp("ResourceApplyMomentum",
                  {v, v, scalar(0.1, dt), *CastTensor(D({2, 4}, {2}), dt), scalar(0.9, dt)});
        EXPECT_FALSE(same.ok());
        EXPECT_NE(same.status().message().find("same variable"), std::string::npos)
            << same.status();
      }
      return std::string("float double (aliased accumulator refused)");
    };
    m["ResourceApplyAdam"].custom = [=] {
      for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
        Tensor v = make_var("conformance/adam_v_" + DataTypeString(dt), dt, D({1}, {1}));
        Tensor mm = make_var("conformance/adam_m_" + DataTypeString(dt), dt, D({0}, {1}));
        Tensor vv = make_var("conformance/adam_vv_" + DataTypeString(dt), dt, D({0}, {1}));
        EXPECT_TRUE(RunOp("ResourceApplyAdam", {v, mm, vv, scalar(0.9, dt), scalar(0.999, dt),
                                                scalar(0.1, dt), scalar(0.9, dt), scalar(0.999, dt),
                                                scalar(1e-8, dt), *CastTensor(D({2}, {1}), dt)})
                        .ok());
        // t = 1: m = 0.2, v = 0.004, lr_t = 0.1 * sqrt(0.001) / 0.1; var -= lr_t * m / sqrt(v)
        double lr_t = 0.1 * std::sqrt(1 - 0.999) / (1 - 0.9);
        expect_near(read_var(v, dt), {1 - lr_t * 0.2 / (std::sqrt(0.004) + 1e-8)},
                    "ResourceApplyAdam");
      }
      // 1003 elements (the vectorised loop and its remainder) against a reference.
      constexpr int kN = 1003;
      std::vector<double> w0(kN), m0(kN), v0(kN), g(kN), want(kN);
      for (int i = 0; i < kN; ++i) {
        w0[i] = std::sin(i) * 2;
        m0[i] = std::cos(i) * 0.1;
        v0[i] = 0.01 + 0.001 * (i % 7);
        g[i] = std::sin(3.0 * i);
        const double mi = 0.9 * m0[i] + 0.1 * g[i], vi = 0.999 * v0[i] + 0.001 * g[i] * g[i];
        const double lr_t = 0.01 * std::sqrt(1 - 0.998) / (1 - 0.81);
        want[i] = w0[i] - lr_t * mi / (std::sqrt(vi) + 1e-8);
      }
      Tensor w = make_var("conformance/adam_big_w", DT_FLOAT, D(w0, {kN}));
      Tensor mm = make_var("conformance/adam_big_m", DT_FLOAT, D(m0, {kN}));
      Tensor vv = make_var("conformance/adam_big_v", DT_FLOAT, D(v0, {kN}));
      const DataType f = DT_FLOAT;
      EXPECT_TRUE(RunOp("ResourceApplyAdam", {w, mm, vv, scalar(0.81, f), scalar(0.998, f),
                                              scalar(0.01, f), scalar(0.9, f), scalar(0.999, f),
                                              scalar(1e-8, f), *CastTensor(D(g, {kN}), f)})
                      .ok());
      expect_near(read_var(w, f), want, "ResourceApplyAdam, 1003 elements");
      // The same variable as the value and a slot: an error naming it (two locks of one
      // variable would deadlock), and the variable unchanged.
      auto same = RunOp("ResourceApplyAdam", {w, w, vv, scalar(0.81, f), scalar(0.998, f),
                                              scalar(0.01, f), scalar(0.9, f), scalar(0.999, f),
                                              scalar(1e-8, f), *CastTensor(D(g, {kN}), f)});
      EXPECT_FALSE(same.ok());
      EXPECT_NE(same.status().message().find("same variable 'conformance/adam_big_w'"),
                std::string::npos)
          << same.status();
      expect_near(read_var(w, f), want, "ResourceApplyAdam after the refused update");
      return std::string("float double (and 1003 elements; aliased slots refused)");
    };
    auto random_check = [](const char* op, double lo, double hi, double mean, double stddev) {
      return [=] {
        for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
          Attrs attrs{{"dtype", MakeAttr(dt)}, {"seed", MakeAttr(int64_t{5})}};
          auto a = RunOp(op, {Tensor::FromVector<int32_t>({100, 100})}, attrs);
          auto b = RunOp(op, {Tensor::FromVector<int32_t>({100, 100})}, attrs);
          EXPECT_TRUE(a.ok() && b.ok());
          if (!a.ok() || !b.ok()) continue;
          EXPECT_TRUE(TensorsEqual((*a)[0], (*b)[0])) << op << ": same seed, same values";
          ExpectMoments(op, (*a)[0], lo, hi, mean, stddev);
        }
        return std::string("float double (range, mean, stddev, seeded repeatability)");
      };
    };
    m["RandomUniform"].custom = random_check("RandomUniform", 0, 1, 0.5, std::sqrt(1.0 / 12));
    m["RandomStandardNormal"].custom = random_check("RandomStandardNormal", -10, 10, 0, 1);
    // Gamma(alpha) has mean alpha and variance alpha; Poisson(rate) mean and variance rate.
    // 20000 samples per parameter, shape [20000] + the parameters' [2].
    auto parameterized_check = [](const char* op, const char* param_attr,
                                  std::vector<DataType> param_types,
                                  std::vector<DataType> out_types) {
      return [=] {
        std::string summary;
        for (DataType pt : param_types) {
          // RandomGamma's output has its parameter's type; RandomPoissonV2's is `dtype`.
          for (DataType ot : out_types.empty() ? std::vector<DataType>{pt} : out_types) {
            Attrs attrs{{param_attr, MakeAttr(pt)}, {"seed", MakeAttr(int64_t{7})}};
            if (!out_types.empty()) attrs["dtype"] = MakeAttr(ot);
            auto params = CastTensor(Tensor::FromVector<double>({2.0, 6.0}), pt);
            auto a = RunOp(op, {Tensor::FromVector<int32_t>({20000}), *params}, attrs);
            auto b = RunOp(op, {Tensor::FromVector<int32_t>({20000}), *params}, attrs);
            EXPECT_TRUE(a.ok() && b.ok()) << op << ": " << a.status();
            if (!a.ok() || !b.ok()) continue;
            EXPECT_EQ((*a)[0].dtype(), ot) << op;
            EXPECT_EQ((*a)[0].shape(), TensorShape({20000, 2})) << op;
            EXPECT_TRUE(TensorsEqual((*a)[0], (*b)[0])) << op << ": same seed, same values";
            Tensor x = *CastTensor((*a)[0], DT_DOUBLE);
            for (int j = 0; j < 2; ++j) {
              const double want = j == 0 ? 2.0 : 6.0;
              double sum = 0, sum_sq = 0;
              for (int64_t i = 0; i < 20000; ++i) {
                const double v = x.data<double>()[i * 2 + j];
                EXPECT_GE(v, 0) << op;
                sum += v;
                sum_sq += v * v;
              }
              const double m = sum / 20000, var = sum_sq / 20000 - m * m;
              EXPECT_NEAR(m, want, 0.05 * want + 0.02) << op << " mean of " << want;
              EXPECT_NEAR(var, want, 0.1 * want + 0.02) << op << " variance of " << want;
            }
            summary +=
                (summary.empty() ? "" : " ") + DataTypeString(pt) + "->" + DataTypeString(ot);
          }
        }
        // A bad parameter fails the step naming it.
        Attrs bad_attrs{{param_attr, MakeAttr(DT_FLOAT)}};
        if (!out_types.empty()) bad_attrs["dtype"] = MakeAttr(DT_INT64);
        auto bad = RunOp(op, {Tensor::FromVector<int32_t>({2}), Tensor::FromVector<float>({-1})},
                         bad_attrs);
        EXPECT_FALSE(bad.ok()) << op << " with a negative parameter";
        if (!bad.ok()) {
          EXPECT_NE(std::string(bad.status().message()).find("got -1"), std::string::npos)
              << bad.status();
        }
        return summary + " (mean, variance, seeded repeatability, a negative parameter refused)";
      };
    };
    m["RandomGamma"].custom = parameterized_check("RandomGamma", "T", {DT_FLOAT, DT_DOUBLE}, {});
    m["RandomPoissonV2"].custom =
        parameterized_check("RandomPoissonV2", "R", {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64},
                            {DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64});
    m["TruncatedNormal"].custom = random_check("TruncatedNormal", -2, 2, 0, 0.87962566103423978);
    // The stateless ones: a function of the seed input (the same seed twice, the same values;
    // another seed, others), with the moments of their stateful twins.
    auto stateless_check = [](const char* op, double lo, double hi, double mean, double stddev) {
      return [=] {
        for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
          for (DataType st : {DT_INT32, DT_INT64}) {
            Attrs attrs{{"dtype", MakeAttr(dt)}, {"Tseed", MakeAttr(st)}};
            auto seed = [&](double a, double b) { return *CastTensor(D({a, b}, {2}), st); };
            const Tensor shape = Tensor::FromVector<int32_t>({100, 100});
            auto a = RunOp(op, {shape, seed(3, 4)}, attrs);
            auto b = RunOp(op, {shape, seed(3, 4)}, attrs);
            auto c = RunOp(op, {shape, seed(3, 5)}, attrs);
            EXPECT_TRUE(a.ok() && b.ok() && c.ok()) << op << ": " << a.status();
            if (!a.ok() || !b.ok() || !c.ok()) continue;
            EXPECT_TRUE(TensorsEqual((*a)[0], (*b)[0])) << op << ": same seed, same values";
            EXPECT_FALSE(TensorsEqual((*a)[0], (*c)[0])) << op << ": another seed, others";
            ExpectMoments(op, (*a)[0], lo, hi, mean, stddev);
          }
        }
        // A seed that is not two integers is an error naming it.
        auto bad = RunOp(op, {Tensor::FromVector<int32_t>({2}), Tensor::FromVector<int64_t>({1})},
                         {{"dtype", MakeAttr(DT_FLOAT)}});
        EXPECT_FALSE(bad.ok()) << op << " with a 1-element seed";
        if (!bad.ok()) {
          EXPECT_NE(std::string(bad.status().message()).find("seed must be a vector of 2"),
                    std::string::npos)
              << bad.status();
        }
        return std::string(
            "float double x int32 int64 seeds (range, mean, stddev, a function "
            "of the seed; a bad seed refused)");
      };
    };
    m["StatelessRandomUniform"].custom =
        stateless_check("StatelessRandomUniform", 0, 1, 0.5, std::sqrt(1.0 / 12));
    m["StatelessRandomNormal"].custom = stateless_check("StatelessRandomNormal", -10, 10, 0, 1);
    m["StatelessTruncatedNormal"].custom =
        stateless_check("StatelessTruncatedNormal", -2, 2, 0, 0.87962566103423978);

    // NN ops (ops/nn_ops.cc). Windows are tiny, so the references are written out.
    {
      auto window = [](std::vector<int64_t> ksize, std::vector<int64_t> strides,
                       const std::string& padding) {
        return [=](DataType) {
          Attrs a{{"strides", MakeAttr(strides)}, {"padding", MakeAttr(padding)}};
          if (!ksize.empty()) a["ksize"] = MakeAttr(ksize);
          return a;
        };
      };
      const auto conv = window({}, {1, 1, 1, 1}, "VALID");
      const auto pool = window({1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
      const Tensor img = D({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
      const Tensor diag = D({1, 0, 0, 1}, {2, 2, 1, 1});
      // out[i,j] = x[i,j] + x[i+1,j+1].
      m["Conv2D"] = Fixed({img, diag}, D({6, 8, 12, 14}, {1, 2, 2, 1}));
      m["Conv2D"].attrs = conv;
      // Conv2D + BiasAdd + Relu: relu([6, 8, 12, 14] - 7).
      m["_FusedConv2D"] = Fixed({img, diag, D({-7}, {1})}, D({0, 1, 5, 7}, {1, 2, 2, 1}));
      m["_FusedConv2D"].attrs = [conv](DataType dt) {
        Attrs a = conv(dt);
        a["activation"] = MakeAttr(std::string("Relu"));
        return a;
      };
      // Conv2D, then (v - mean) * scale / sqrt(variance + eps) + offset, then Relu: with mean 1,
      // variance 4 - eps, scale 2, offset -7: relu([6, 8, 12, 14] - 1 - 7).
      m["_FusedConv2DBatchNorm"] =
          Fixed({img, diag, D({2}, {1}), D({-7}, {1}), D({1}, {1}), D({4 - 0.001}, {1})},
                D({0, 0, 4, 6}, {1, 2, 2, 1}));
      m["_FusedConv2DBatchNorm"].attrs = [conv](DataType dt) {
        Attrs a = conv(dt);
        a["activation"] = MakeAttr(std::string("Relu"));
        return a;
      };
      // The same, plus a side input [1, -2, 3, 0] before the Relu: relu([-2, 0, 4, 6] + side).
      m["_FusedConv2DBatchNormAdd"] = Fixed({img, diag, D({2}, {1}), D({-7}, {1}), D({1}, {1}),
                                             D({4 - 0.001}, {1}), D({1, -2, 3, 0}, {1, 2, 2, 1})},
                                            D({0, 0, 7, 6}, {1, 2, 2, 1}));
      m["_FusedConv2DBatchNormAdd"].attrs = m["_FusedConv2DBatchNorm"].attrs;
      // Conv2D + BiasAdd + a side input [1, -2, 3, 0] + Relu: relu([6, 8, 12, 14] - 7 + side).
      m["_FusedConv2DAdd"] = Fixed({img, diag, D({-7}, {1}), D({1, -2, 3, 0}, {1, 2, 2, 1})},
                                   D({0, 0, 8, 7}, {1, 2, 2, 1}));
      m["_FusedConv2DAdd"].attrs = m["_FusedConv2D"].attrs;
      m["Conv2DBackpropInput"] = Fixed({I32({1, 3, 3, 1}), diag, D({1, 2, 3, 4}, {1, 2, 2, 1})},
                                       D({1, 2, 0, 3, 5, 2, 0, 3, 4}, {1, 3, 3, 1}));
      m["Conv2DBackpropInput"].attrs = conv;
      m["Conv2DBackpropFilter"] = Fixed({img, I32({2, 2, 1, 1}), D({1, 0, 0, 1}, {1, 2, 2, 1})},
                                        D({6, 8, 12, 14}, {2, 2, 1, 1}));
      m["Conv2DBackpropFilter"].attrs = conv;
      // One channel, multiplier 1: depthwise is Conv2D (multi-channel cases: nn_grad_test and
      // tests/python/test_tf1_nn_surface.py against NumPy).
      m["DepthwiseConv2dNative"] = Fixed({img, diag}, D({6, 8, 12, 14}, {1, 2, 2, 1}));
      m["DepthwiseConv2dNative"].attrs = conv;
      m["DepthwiseConv2dNativeBackpropInput"] =
          Fixed({I32({1, 3, 3, 1}), diag, D({1, 2, 3, 4}, {1, 2, 2, 1})},
                D({1, 2, 0, 3, 5, 2, 0, 3, 4}, {1, 3, 3, 1}));
      m["DepthwiseConv2dNativeBackpropInput"].attrs = conv;
      m["DepthwiseConv2dNativeBackpropFilter"] = Fixed(
          {img, I32({2, 2, 1, 1}), D({1, 0, 0, 1}, {1, 2, 2, 1})}, D({6, 8, 12, 14}, {2, 2, 1, 1}));
      m["DepthwiseConv2dNativeBackpropFilter"].attrs = conv;
      const Tensor px = D({1, 5, 3, 2, 4, 0, 7, 8}, {1, 2, 4, 1});
      m["MaxPool"] = Fixed({px}, D({5, 8}, {1, 1, 2, 1}));
      m["MaxPool"].attrs = pool;
      m["MaxPoolGrad"] = Fixed({px, D({5, 8}, {1, 1, 2, 1}), D({10, 20}, {1, 1, 2, 1})},
                               D({0, 10, 0, 0, 0, 0, 0, 20}, {1, 2, 4, 1}));
      m["MaxPoolGrad"].attrs = pool;
      // Output 0; the argmax (1 and 7: flat indices of 5 and 8) is checked in nn_ops_test.
      m["MaxPoolWithArgmax"] = Fixed({px}, D({5, 8}, {1, 1, 2, 1}));
      m["MaxPoolWithArgmax"].attrs = pool;
      m["MaxPoolGradWithArgmax"] =
          Fixed({px, D({10, 20}, {1, 1, 2, 1}), Tensor::FromVector<int64_t>({1, 7}, {1, 1, 2, 1})},
                D({0, 10, 0, 0, 0, 0, 0, 20}, {1, 2, 4, 1}));
      m["MaxPoolGradWithArgmax"].attrs = [pool](DataType dt) {
        Attrs a = pool(dt);
        a["Targmax"] = MakeAttr(DT_INT64);
        return a;
      };
      m["AvgPool"] = Fixed({px}, D({2.5, 5}, {1, 1, 2, 1}));
      m["AvgPool"].attrs = pool;
      m["AvgPoolGrad"] = Fixed({I32({1, 2, 4, 1}), D({4, 8}, {1, 1, 2, 1})},
                               D({1, 1, 2, 2, 1, 1, 2, 2}, {1, 2, 4, 1}));
      m["AvgPoolGrad"].attrs = pool;
      // 3-D (ops/nn3d_ops.cc): a [1, 2, 2, 3, 1] volume holding 1..12 (flat index d*6 + h*3 + w)
      // and a 2x2x2 filter that is 1 at its first and last taps: out = x[d,h,w] + x[d+1,h+1,w+1].
      const auto conv3 = window({}, {1, 1, 1, 1, 1}, "VALID");
      const Tensor vol = D({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {1, 2, 2, 3, 1});
      const Tensor diag3 = D({1, 0, 0, 0, 0, 0, 0, 1}, {2, 2, 2, 1, 1});
      m["Conv3D"] = Fixed({vol, diag3}, D({12, 14}, {1, 1, 1, 2, 1}));
      m["Conv3D"].attrs = conv3;
      m["Conv3DBackpropInputV2"] = Fixed({I32({1, 2, 2, 3, 1}), diag3, D({1, 2}, {1, 1, 1, 2, 1})},
                                         D({1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2}, {1, 2, 2, 3, 1}));
      m["Conv3DBackpropInputV2"].attrs = conv3;
      m["Conv3DBackpropFilterV2"] = Fixed({vol, I32({2, 2, 2, 1, 1}), D({1, 0}, {1, 1, 1, 2, 1})},
                                          D({1, 2, 4, 5, 7, 8, 10, 11}, {2, 2, 2, 1, 1}));
      m["Conv3DBackpropFilterV2"].attrs = conv3;
      // Windows of 2 (depth) x 2 (height) x 1 (width) over a [1, 2, 2, 2, 1] volume.
      const auto pool3 = window({1, 2, 2, 1, 1}, {1, 2, 2, 1, 1}, "VALID");
      const Tensor px3 = D({1, 5, 3, 2, 4, 0, 7, 8}, {1, 2, 2, 2, 1});
      m["MaxPool3D"] = Fixed({px3}, D({7, 8}, {1, 1, 1, 2, 1}));
      m["MaxPool3D"].attrs = pool3;
      // orig_input and orig_output are TInput (float; only grad follows T).
      m["MaxPool3DGrad"] =
          Fixed({Tensor::FromVector<float>({1, 5, 3, 2, 4, 0, 7, 8}, {1, 2, 2, 2, 1}),
                 Tensor::FromVector<float>({7, 8}, {1, 1, 1, 2, 1}), D({10, 20}, {1, 1, 1, 2, 1})},
                D({0, 0, 0, 0, 0, 0, 10, 20}, {1, 2, 2, 2, 1}));
      m["MaxPool3DGrad"].attrs = pool3;
      m["AvgPool3D"] = Fixed({px3}, D({3.75, 3.75}, {1, 1, 1, 2, 1}));
      m["AvgPool3D"].attrs = pool3;
      m["AvgPool3DGrad"] = Fixed({I32({1, 2, 2, 2, 1}), D({4, 8}, {1, 1, 1, 2, 1})},
                                 D({1, 2, 1, 2, 1, 2, 1, 2}, {1, 2, 2, 2, 1}));
      m["AvgPool3DGrad"].attrs = pool3;

      m["BiasAdd"] = Fixed({x23, D({10, 20, 30}, {3})}, D({11, 22, 33, 14, 25, 36}, {2, 3}));
      m["BiasAddGrad"] = Fixed({x23}, D({5, 7, 9}, {3}));
      m["ReluGrad"] = Fixed({x23, D({-1, 2, 0, 3, -2, 1}, {2, 3})}, D({0, 2, 0, 4, 0, 6}, {2, 3}));

      // Row-wise softmax of [2,3] logits in double.
      auto softmax_rows = [](const std::vector<double>& x, bool log) {
        std::vector<double> y(6);
        for (int r = 0; r < 2; ++r) {
          const double mx = std::max({x[r * 3], x[r * 3 + 1], x[r * 3 + 2]});
          double s = 0;
          for (int k = 0; k < 3; ++k) s += std::exp(x[r * 3 + k] - mx);
          for (int k = 0; k < 3; ++k) {
            y[r * 3 + k] = log ? x[r * 3 + k] - mx - std::log(s) : std::exp(x[r * 3 + k] - mx) / s;
          }
        }
        return y;
      };
      const Tensor logits = D({1, 2, 3, -1, 0, 4}, {2, 3});
      for (bool log : {false, true}) {
        ConformanceCase sm;
        sm.inputs = {logits};
        sm.reference = [=](const std::vector<Tensor>& in) {
          return D(softmax_rows(Values(in[0]), log), {2, 3});
        };
        m[log ? "LogSoftmax" : "Softmax"] = sm;
      }
      ConformanceCase xent;
      xent.inputs = {logits, D({0, 0, 1, 0.5, 0.5, 0}, {2, 3})};
      xent.reference = [=](const std::vector<Tensor>& in) {
        const std::vector<double> logp = softmax_rows(Values(in[0]), true), l = Values(in[1]);
        std::vector<double> loss(2, 0.0);
        for (int i = 0; i < 6; ++i) loss[i / 3] -= l[i] * logp[i];
        return D(loss, {2});
      };
      m["SoftmaxCrossEntropyWithLogits"] = xent;
      ConformanceCase sparse;
      sparse.inputs = {logits, I32({2, 0})};
      sparse.reference = [=](const std::vector<Tensor>& in) {
        const std::vector<double> logp = softmax_rows(Values(in[0]), true);
        return D({-logp[2], -logp[3]}, {2});
      };
      m["SparseSoftmaxCrossEntropyWithLogits"] = sparse;

      // Batch norm over 3 rows of 2 channels, epsilon 0.001 (the default).
      ConformanceCase bn;
      bn.inputs = {D({1, 2, 3, 6, 5, 1}, {3, 2}), D({1, 2}, {2}), D({0, 1}, {2}), D({}, {0}),
                   D({}, {0})};
      bn.reference = [](const std::vector<Tensor>& in) {
        const std::vector<double> x = Values(in[0]), scale = Values(in[1]), offset = Values(in[2]);
        std::vector<double> y(6);
        for (int k = 0; k < 2; ++k) {
          const double mean = (x[k] + x[2 + k] + x[4 + k]) / 3;
          double var = 0;
          for (int r = 0; r < 3; ++r) var += (x[r * 2 + k] - mean) * (x[r * 2 + k] - mean) / 3;
          for (int r = 0; r < 3; ++r) {
            y[r * 2 + k] = (x[r * 2 + k] - mean) / std::sqrt(var + 0.001) * scale[k] + offset[k];
          }
        }
        return D(y, {3, 2});
      };
      m["FusedBatchNorm"] = bn;
      // Gradient with reserve spaces mean = (3, 3) and inv_std = (0.5, 0.25).
      ConformanceCase bn_grad;
      bn_grad.inputs = {D({1, 0, -1, 2, 0.5, 1}, {3, 2}), D({1, 2, 3, 6, 5, 1}, {3, 2}),
                        D({1, 2}, {2}), D({3, 3}, {2}), D({0.5, 0.25}, {2})};
      bn_grad.reference = [](const std::vector<Tensor>& in) {
        const std::vector<double> g = Values(in[0]), x = Values(in[1]), scale = Values(in[2]),
                                  mean = Values(in[3]), inv = Values(in[4]);
        std::vector<double> dx(6);
        for (int k = 0; k < 2; ++k) {
          double g_mean = 0, gx_mean = 0;
          for (int r = 0; r < 3; ++r) {
            g_mean += g[r * 2 + k] / 3;
            gx_mean += g[r * 2 + k] * (x[r * 2 + k] - mean[k]) * inv[k] / 3;
          }
          for (int r = 0; r < 3; ++r) {
            const double xhat = (x[r * 2 + k] - mean[k]) * inv[k];
            dx[r * 2 + k] = scale[k] * inv[k] * (g[r * 2 + k] - g_mean - xhat * gx_mean);
          }
        }
        return D(dx, {3, 2});
      };
      m["FusedBatchNormGrad"] = bn_grad;
      // Rate 0: the mask is all ones.
      m["Dropout"] = PassThrough();
      m["Dropout"].attrs = [](DataType) { return Attrs{{"rate", MakeAttr(0.0f)}}; };
      // StatelessDropout at rate 0.5: x * mask with mask in {0, 2}, the same for one seed.
      m["StatelessDropout"].custom = [] {
        for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
          std::vector<double> xs(1000);
          for (int i = 0; i < 1000; ++i) xs[i] = 1 + i % 7;
          const Tensor x = *CastTensor(D(xs, {10, 100}), dt);
          const Tensor seed = Tensor::FromVector<int64_t>({21, 22});
          Attrs attrs{{"T", MakeAttr(dt)}, {"rate", MakeAttr(0.5f)}};
          auto a = RunOp("StatelessDropout", {x, seed}, attrs);
          auto b = RunOp("StatelessDropout", {x, seed}, attrs);
          EXPECT_TRUE(a.ok() && b.ok()) << a.status();
          if (!a.ok() || !b.ok()) continue;
          EXPECT_TRUE(TensorsEqual((*a)[1], (*b)[1])) << "same seed, same mask";
          const std::vector<double> out = Values((*a)[0]), mask = Values((*a)[1]);
          int kept = 0;
          for (int i = 0; i < 1000; ++i) {
            EXPECT_TRUE(mask[i] == 0 || mask[i] == 2) << mask[i];
            EXPECT_EQ(out[i], xs[i] * mask[i]);
            kept += mask[i] != 0;
          }
          EXPECT_GT(kept, 400);
          EXPECT_LT(kept, 600);
        }
        return std::string("float double (mask in {0, 1/(1-rate)}, a function of the seed)");
      };
    }

    // Accumulators and queues (ops/data_flow_ops.cc), run eagerly: takes and dequeues that do
    // not have to wait. tests/runtime/data_flow_ops_test.cc covers waiting, deadlines, close.
    // Each op of a family runs the family's check: fresh resource names each time.
    auto fresh = std::make_shared<int>(0);
    auto accumulator = [=] {
      for (DataType dt : {DT_FLOAT, DT_DOUBLE}) {
        const std::string name = "conformance/acc_" + std::to_string((*fresh)++);
        auto h = RunOp("ResourceConditionalAccumulator", {},
                       {{"dtype", MakeAttr(dt)},
                        {"shape", MakeAttr(TensorShape({2}))},
                        {"shared_name", MakeAttr(name)}});
        EXPECT_TRUE(h.ok()) << h.status();
        if (!h.ok()) continue;
        const Tensor handle = (*h)[0];
        auto apply = [&](int64_t step, std::vector<double> g) {
          return RunOp("ResourceAccumulatorApplyGradient",
                       {handle, Tensor::Scalar<int64_t>(step), *CastTensor(D(g, {2}), dt)},
                       {{"dtype", MakeAttr(dt)}});
        };
        EXPECT_TRUE(apply(0, {1, 2}).ok());
        EXPECT_TRUE(apply(0, {3, 4}).ok());
        auto n = RunOp("ResourceAccumulatorNumAccumulated", {handle});
        EXPECT_TRUE(n.ok() && (*n)[0].scalar<int32_t>() == 2);
        auto mean = RunOp("ResourceAccumulatorTakeGradient", {handle, Tensor::Scalar<int32_t>(2)},
                          {{"dtype", MakeAttr(dt)}});
        EXPECT_TRUE(mean.ok()) << mean.status();
        if (mean.ok()) expect_near(*CastTensor((*mean)[0], DT_DOUBLE), {2, 3}, "take (mean)");
        EXPECT_TRUE(apply(0, {9, 9}).ok());  // stale after the take
        auto dropped = RunOp("ResourceAccumulatorNumDropped", {handle});
        EXPECT_TRUE(dropped.ok() && (*dropped)[0].scalar<int64_t>() == 1);
        EXPECT_TRUE(
            RunOp("ResourceAccumulatorSetGlobalStep", {handle, Tensor::Scalar<int64_t>(5)}).ok());
        EXPECT_TRUE(RunOp("ResourceAccumulatorClose", {handle}).ok());
        auto closed = RunOp("ResourceAccumulatorTakeGradient", {handle, Tensor::Scalar<int32_t>(1)},
                            {{"dtype", MakeAttr(dt)}});
        EXPECT_EQ(closed.status().code(), absl::StatusCode::kCancelled) << closed.status();
      }
      return std::string("float double (apply, take the mean, stale drop, set step, close)");
    };
    for (const char* op : {"ResourceConditionalAccumulator", "ResourceAccumulatorApplyGradient",
                           "ResourceAccumulatorTakeGradient", "ResourceAccumulatorSetGlobalStep",
                           "ResourceAccumulatorNumAccumulated", "ResourceAccumulatorNumDropped",
                           "ResourceAccumulatorClose"}) {
      m[op].custom = accumulator;
    }
    auto queue = [=] {
      for (DataType dt : {DT_FLOAT, DT_INT64}) {
        auto h =
            RunOp("FIFOQueueV2", {},
                  {{"dtype", MakeAttr(dt)},
                   {"shape", MakeAttr(TensorShape())},
                   {"shared_name", MakeAttr("conformance/queue_" + std::to_string((*fresh)++))}});
        EXPECT_TRUE(h.ok()) << h.status();
        if (!h.ok()) continue;
        const Tensor handle = (*h)[0];
        EXPECT_TRUE(RunOp("QueueEnqueueManyV2", {handle, *CastTensor(D({1, 2}, {2}), dt)}).ok());
        EXPECT_TRUE(RunOp("QueueEnqueueV2", {handle, *CastTensor(Tensor::Scalar(3.0), dt)}).ok());
        auto size = RunOp("QueueSizeV2", {handle});
        EXPECT_TRUE(size.ok() && (*size)[0].scalar<int32_t>() == 3);
        for (double want : {1.0, 2.0, 3.0}) {
          auto got = RunOp("QueueDequeueV2", {handle}, {{"T", MakeAttr(dt)}});
          EXPECT_TRUE(got.ok()) << got.status();
          if (got.ok()) {
            EXPECT_EQ(CastTensor((*got)[0], DT_DOUBLE)->scalar<double>(), want);
          }
        }
        EXPECT_TRUE(RunOp("QueueCloseV2", {handle}).ok());
        auto empty = RunOp("QueueDequeueV2", {handle}, {{"T", MakeAttr(dt)}});
        EXPECT_EQ(empty.status().code(), absl::StatusCode::kOutOfRange) << empty.status();
      }
      return std::string("float int64 (enqueue, enqueue many, size, FIFO dequeue, close)");
    };
    for (const char* op : {"FIFOQueueV2", "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                           "QueueSizeV2", "QueueCloseV2"}) {
      m[op].custom = queue;
    }

    for (const char* op :
         {"CollectiveReduce", "CollectiveBcastSend", "CollectiveBcastRecv", "CollectiveGather"}) {
      m[op].custom = [op] { return CheckCollective(op); };
    }

    // Compute nothing: checked by hand.
    m["Placeholder"].custom = [] {
      auto out = RunOp("Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
      EXPECT_FALSE(out.ok()) << "an unfed Placeholder must fail";
      if (!out.ok()) {
        EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
        EXPECT_NE(out.status().message().find("must be fed"), std::string::npos) << out.status();
      }
      return std::string("float (unfed: the documented error)");
    };
    m["NoOp"].custom = [] {
      auto out = RunOp("NoOp", {});
      EXPECT_TRUE(out.ok()) << out.status();
      if (out.ok()) {
        EXPECT_TRUE(out->empty());
      }
      return std::string("no inputs or outputs (runs, returns nothing)");
    };
    return t;
  }();
  return *table;
}

}  // namespace conformance
}  // namespace shardflow

#endif  // SHARDFLOW_TESTS_KERNELS_CONFORMANCE_TABLE_H_
