// Tests for the CPU element-wise kernels (kernels/cpu/cwise_*_ops.cc) and AddN: values against
// hand-computed results or a naive broadcasting reference, every registered dtype, errors, the
// sharded path on large tensors and in-place reuse of input buffers.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/framework/attr_value.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/node_def_util.h"
#include "core/framework/op_def.h"
#include "core/framework/tensor.h"
#include "gtest/gtest.h"
#include "runtime/device.h"
#include "runtime/op_runner.h"

namespace shardflow {
namespace {

using Attrs = std::map<std::string, AttrValue>;
using RefFn = std::function<double(double, double)>;

// ---- helpers --------------------------------------------------------------------------------

Tensor RunOne(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  auto out = RunOp(op, inputs, attrs);
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  if (!out.ok() || out->empty()) return Tensor();
  return (*out)[0];
}

// Runs the kernel without RunOp: no shape inference (so the kernel's own checks are reached),
// inputs handed over so that the kernel may reuse their buffers, and `intra_threads` threads.
absl::StatusOr<Tensor> RunKernelDirect(const std::string& op, std::vector<Tensor> inputs,
                                       int intra_threads) {
  RunOpOptions options;
  options.infer_shapes = false;
  options.intra_op_threads = intra_threads;
  auto out = RunOp(op, std::move(inputs), {}, options);
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// Moves tensors into a vector (a braced list would copy them and keep a second reference).
template <typename... Ts>
std::vector<Tensor> MoveAll(Ts&&... ts) {
  std::vector<Tensor> v;
  (v.push_back(std::move(ts)), ...);
  return v;
}

double ValueAt(const Tensor& t, int64_t i) {
  SF_SWITCH_NUMERIC(
      t.dtype(), T, { return static_cast<double>(t.data<T>()[i]); },
      ADD_FAILURE() << "unexpected dtype " << DataTypeString(t.dtype()));
  return 0;
}

// Deterministic values in [lo, hi]; integers are whole numbers, optionally never zero.
template <typename T>
Tensor RandomTensor(const TensorShape& shape, double lo, double hi, uint32_t seed,
                    bool nonzero = false) {
  std::mt19937 gen(seed);
  std::vector<T> v(shape.num_elements());
  for (auto& e : v) {
    if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      int64_t x = d(gen);
      if (nonzero && x == 0) x = 1;
      e = static_cast<T>(x);
    } else {
      std::uniform_real_distribution<double> d(lo, hi);
      e = static_cast<T>(d(gen));
    }
  }
  return Tensor::FromVector<T>(v, shape);
}

// Relative tolerance for results stored in `dtype` (computed in float for half/bfloat16).
double Tolerance(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return 2e-6;
    case DT_DOUBLE:
      return 1e-12;
    case DT_HALF:
      return 2e-3;
    case DT_BFLOAT16:
      return 1e-2;
    default:
      return 0;
  }
}

void ExpectClose(const Tensor& got, const std::vector<double>& want, double rel_tol,
                 const std::string& what) {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 5; ++i) {
    const double g = ValueAt(got, i), w = want[i];
    if (std::isnan(w)) {
      if (!std::isnan(g)) {
        ADD_FAILURE() << what << ": element " << i << " is " << g << ", want NaN";
        ++failures;
      }
      continue;
    }
    if (std::isinf(w) || rel_tol == 0) {
      if (g != w) {
        ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
        ++failures;
      }
      continue;
    }
    if (std::abs(g - w) > rel_tol * std::max(1.0, std::abs(w))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
      ++failures;
    }
  }
}

// out[i] = f(x[ix], y[iy]) with NumPy broadcasting, computed one element at a time.
std::vector<double> ReferenceBinary(const Tensor& x, const Tensor& y, const TensorShape& out,
                                    const RefFn& f) {
  const int rank = out.rank();
  std::vector<double> result(out.num_elements());
  std::vector<int64_t> idx(rank);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t rem = i;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rem % out.dim(d);
      rem /= out.dim(d);
    }
    auto flat = [&](const Tensor& t) {
      int64_t off = 0;
      for (int d = 0; d < t.dims(); ++d) {
        const int64_t size = t.dim_size(d);
        off = off * size + (size == 1 ? 0 : idx[rank - t.dims() + d]);
      }
      return off;
    };
    result[i] = f(ValueAt(x, flat(x)), ValueAt(y, flat(y)));
  }
  return result;
}

std::vector<double> ReferenceUnary(const Tensor& x, const std::function<double(double)>& f) {
  std::vector<double> result(x.NumElements());
  for (int64_t i = 0; i < x.NumElements(); ++i) result[i] = f(ValueAt(x, i));
  return result;
}

double TruncDiv(double a, double b) {
  return static_cast<double>(static_cast<int64_t>(a) / static_cast<int64_t>(b));
}

const std::map<std::string, RefFn>& ArithmeticRefs() {
  static const auto* refs = new std::map<std::string, RefFn>{
      {"Add", [](double a, double b) { return a + b; }},
      {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},
      {"Maximum", [](double a, double b) { return std::max(a, b); }},
      {"Minimum", [](double a, double b) { return std::min(a, b); }},
      {"SquaredDifference", [](double a, double b) { return (a - b) * (a - b); }},
  };
  return *refs;
}

const std::map<std::string, RefFn>& CompareRefs() {
  static const auto* refs = new std::map<std::string, RefFn>{
      {"Equal", [](double a, double b) { return double(a == b); }},
      {"NotEqual", [](double a, double b) { return double(a != b); }},
      {"Less", [](double a, double b) { return double(a < b); }},
      {"LessEqual", [](double a, double b) { return double(a <= b); }},
      {"Greater", [](double a, double b) { return double(a > b); }},
      {"GreaterEqual", [](double a, double b) { return double(a >= b); }},
  };
  return *refs;
}

// Shape pairs covering every path of the kernel: same shape, scalar either side, row, column,
// outer product, 3-D mixed, rank mismatch, size-1 dimensions and empty tensors.
const std::vector<std::pair<TensorShape, TensorShape>>& BroadcastCases() {
  static const auto* cases = new std::vector<std::pair<TensorShape, TensorShape>>{
      {TensorShape({2, 3}), TensorShape({2, 3})},
      {
          TensorShape({}),
          TensorShape({}),
      },
      {TensorShape({}), TensorShape({2, 3})},
      {TensorShape({2, 3}), TensorShape({})},
      {TensorShape({1}), TensorShape({5})},
      {TensorShape({4, 5}), TensorShape({5})},
      {TensorShape({5}), TensorShape({4, 5})},
      {TensorShape({4, 5}), TensorShape({4, 1})},
      {TensorShape({4, 1}), TensorShape({4, 5})},
      {TensorShape({4, 1}), TensorShape({1, 5})},
      {TensorShape({2, 1, 3}), TensorShape({4, 1})},
      {TensorShape({3, 1, 5, 1}), TensorShape({1, 4, 1, 6})},
      {TensorShape({2, 3, 4}), TensorShape({2, 1, 4})},
      {TensorShape({2, 3, 4}), TensorShape({1, 3, 1})},
      {TensorShape({1, 1, 7}), TensorShape({7})},
      {TensorShape({2, 1, 3, 1, 2}), TensorShape({2, 2, 3, 2, 1})},
      {TensorShape({0, 3}), TensorShape({3})},
      {TensorShape({2, 0}), TensorShape({2, 1})},
  };
  return *cases;
}

TensorShape BroadcastOf(const TensorShape& a, const TensorShape& b) {
  const int rank = std::max(a.rank(), b.rank());
  TensorShape out;
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dim(ia) : 1, db = ib >= 0 ? b.dim(ib) : 1;
    out.AddDim(da == 1 ? db : da);
  }
  return out;
}

// Runs `op` on every broadcast case for T and checks against `ref`.
template <typename T>
void CheckBroadcastCases(const std::string& op, const RefFn& ref, double lo, double hi,
                         bool nonzero_y, double tol) {
  uint32_t seed = 1;
  for (const auto& [xs, ys] : BroadcastCases()) {
    Tensor x = RandomTensor<T>(xs, lo, hi, seed++);
    Tensor y = RandomTensor<T>(ys, lo, hi, seed++, nonzero_y);
    const std::string what = op + " " + DataTypeString(DataTypeToEnum<T>::value) + " " +
                             xs.DebugString() + " vs " + ys.DebugString();
    Tensor z = RunOne(op, {x, y});
    ASSERT_TRUE(z.IsInitialized()) << what;
    const TensorShape out = BroadcastOf(xs, ys);
    EXPECT_EQ(z.shape(), out) << what;
    ExpectClose(z, ReferenceBinary(x, y, out, ref), tol, what);
  }
}

// ---- binary: values and broadcasting --------------------------------------------------------

TEST(CwiseBinaryTest, SameShapeFloatValues) {
  Tensor x = Tensor::FromVector<float>({1, -2, 3, 4}, {2, 2});
  Tensor y = Tensor::FromVector<float>({2, 4, -1, 0.5f}, {2, 2});
  ExpectClose(RunOne("Add", {x, y}), {3, 2, 2, 4.5}, 0, "Add");
  ExpectClose(RunOne("Sub", {x, y}), {-1, -6, 4, 3.5}, 0, "Sub");
  ExpectClose(RunOne("Mul", {x, y}), {2, -8, -3, 2}, 0, "Mul");
  ExpectClose(RunOne("Div", {x, y}), {0.5, -0.5, -3, 8}, 0, "Div");
  ExpectClose(RunOne("Maximum", {x, y}), {2, 4, 3, 4}, 0, "Maximum");
  ExpectClose(RunOne("Minimum", {x, y}), {1, -2, -1, 0.5}, 0, "Minimum");
  ExpectClose(RunOne("SquaredDifference", {x, y}), {1, 36, 16, 12.25}, 0, "SquaredDifference");
  Tensor base = Tensor::FromVector<float>({2, 9, 4, 1.5f}, {2, 2});
  ExpectClose(RunOne("Pow", {base, y}), {4, 6561, 0.25, std::sqrt(1.5)}, 1e-6, "Pow");
  EXPECT_EQ(RunOne("Add", {x, y}).shape(), TensorShape({2, 2}));
}

TEST(CwiseBinaryTest, ScalarWithTensorKeepsOperandOrder) {
  Tensor v = Tensor::FromVector<float>({1, 2, 4});
  Tensor s = Tensor::Scalar<float>(8);
  ExpectClose(RunOne("Sub", {s, v}), {7, 6, 4}, 0, "scalar - tensor");
  ExpectClose(RunOne("Sub", {v, s}), {-7, -6, -4}, 0, "tensor - scalar");
  ExpectClose(RunOne("Div", {s, v}), {8, 4, 2}, 0, "scalar / tensor");
  ExpectClose(RunOne("Div", {v, s}), {0.125, 0.25, 0.5}, 0, "tensor / scalar");
  Tensor z = RunOne("Mul", {s, s});
  EXPECT_EQ(z.shape(), TensorShape({}));
  ExpectClose(z, {64}, 0, "scalar * scalar");
}

TEST(CwiseBinaryTest, RowAndColumnBroadcast) {
  Tensor m = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = Tensor::FromVector<float>({10, 20, 30});
  Tensor col = Tensor::FromVector<float>({100, 200}, {2, 1});
  ExpectClose(RunOne("Add", {m, row}), {11, 22, 33, 14, 25, 36}, 0, "[2,3] + [3]");
  ExpectClose(RunOne("Sub", {row, m}), {9, 18, 27, 6, 15, 24}, 0, "[3] - [2,3]");
  ExpectClose(RunOne("Add", {m, col}), {101, 102, 103, 204, 205, 206}, 0, "[2,3] + [2,1]");
  ExpectClose(RunOne("Sub", {col, m}), {99, 98, 97, 196, 195, 194}, 0, "[2,1] - [2,3]");
  Tensor outer = RunOne("Mul", {col, row});
  EXPECT_EQ(outer.shape(), TensorShape({2, 3}));
  ExpectClose(outer, {1000, 2000, 3000, 2000, 4000, 6000}, 0, "[2,1] * [3]");
}

TEST(CwiseBinaryTest, ThreeDMixedBroadcast) {
  // x: [2,1,3], y: [4,1] -> [2,4,3]; z[i,j,k] = x[i,0,k] + y[j,0].
  Tensor x = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 1, 3});
  Tensor y = Tensor::FromVector<int32_t>({10, 20, 30, 40}, {4, 1});
  Tensor z = RunOne("Add", {x, y});
  ASSERT_EQ(z.shape(), TensorShape({2, 4, 3}));
  std::vector<double> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 3; ++k) want.push_back((i * 3 + k + 1) + 10 * (j + 1));
    }
  }
  ExpectClose(z, want, 0, "[2,1,3] + [4,1]");
  EXPECT_EQ(z.data<int32_t>()[0], 11);
  EXPECT_EQ(z.data<int32_t>()[23], 46);
}

TEST(CwiseBinaryTest, EveryBroadcastPathMatchesReference) {
  for (const auto& [op, ref] : ArithmeticRefs()) {
    CheckBroadcastCases<float>(op, ref, -3, 3, false, Tolerance(DT_FLOAT));
  }
  CheckBroadcastCases<float>(
      "Div", [](double a, double b) { return a / b; }, -3, 3, true, Tolerance(DT_FLOAT));
  CheckBroadcastCases<float>(
      "Pow", [](double a, double b) { return std::pow(a, b); }, 0.5, 2, false, 1e-5);
}

// ---- binary: dtypes -------------------------------------------------------------------------

template <typename T>
class CwiseBinaryTypedTest : public ::testing::Test {};
using SignedTypes = ::testing::Types<float, double, int32_t, int64_t, half, bfloat16>;
TYPED_TEST_SUITE(CwiseBinaryTypedTest, SignedTypes);

TYPED_TEST(CwiseBinaryTypedTest, ArithmeticMatchesReference) {
  using T = TypeParam;
  const DataType dt = DataTypeToEnum<T>::value;
  for (const auto& [op, ref] : ArithmeticRefs()) {
    CheckBroadcastCases<T>(op, ref, -20, 20, false, Tolerance(dt));
  }
  const RefFn div =
      std::is_integral_v<T> ? RefFn(TruncDiv) : RefFn([](double a, double b) { return a / b; });
  CheckBroadcastCases<T>("Div", div, -20, 20, true, Tolerance(dt));
}

TYPED_TEST(CwiseBinaryTypedTest, ComparisonsMatchReference) {
  using T = TypeParam;
  for (const auto& [op, ref] : CompareRefs()) {
    // Few distinct values, so that equal pairs occur.
    CheckBroadcastCases<T>(op, ref, -2, 2, false, 0);
  }
  Tensor z = RunOne("Less", {RandomTensor<T>({3}, -2, 2, 7), RandomTensor<T>({2, 3}, -2, 2, 8)});
  EXPECT_EQ(z.dtype(), DT_BOOL);
}

TEST(CwiseBinaryTest, Int8AndUint8ArithmeticAndComparisons) {
  for (const char* op : {"Add", "Sub", "Mul", "Maximum", "Minimum"}) {
    CheckBroadcastCases<int8_t>(op, ArithmeticRefs().at(op), -10, 10, false, 0);
  }
  for (const char* op : {"Add", "Maximum", "Minimum"}) {
    CheckBroadcastCases<uint8_t>(op, ArithmeticRefs().at(op), 0, 100, false, 0);
  }
  for (const auto& [op, ref] : CompareRefs()) {
    CheckBroadcastCases<int8_t>(op, ref, -2, 2, false, 0);
    CheckBroadcastCases<uint8_t>(op, ref, 0, 3, false, 0);
  }
  // Narrow integers wrap around.
  Tensor z = RunOne("Add", {Tensor::FromVector<uint8_t>({250, 1}), Tensor::Scalar<uint8_t>(10)});
  ExpectClose(z, {4, 11}, 0, "uint8 wrap");
}

TEST(CwiseBinaryTest, PowOnHalfAndBfloat16) {
  const RefFn pow = [](double a, double b) { return std::pow(a, b); };
  CheckBroadcastCases<double>("Pow", pow, 0.5, 2, false, 1e-12);
  CheckBroadcastCases<half>("Pow", pow, 0.5, 2, false, Tolerance(DT_HALF));
  CheckBroadcastCases<bfloat16>("Pow", pow, 0.5, 2, false, Tolerance(DT_BFLOAT16));
}

TEST(CwiseBinaryTest, BoolEqualityAndLogicalOps) {
  Tensor a = Tensor::FromVector<bool>({true, true, false, false});
  Tensor b = Tensor::FromVector<bool>({true, false, true, false});
  ExpectClose(RunOne("Equal", {a, b}), {1, 0, 0, 1}, 0, "Equal bool");
  ExpectClose(RunOne("NotEqual", {a, b}), {0, 1, 1, 0}, 0, "NotEqual bool");
  ExpectClose(RunOne("LogicalAnd", {a, b}), {1, 0, 0, 0}, 0, "LogicalAnd");
  ExpectClose(RunOne("LogicalOr", {a, b}), {1, 1, 1, 0}, 0, "LogicalOr");
  ExpectClose(RunOne("LogicalNot", {a}), {0, 0, 1, 1}, 0, "LogicalNot");
  // Broadcast: [2,1] and [2].
  Tensor col = Tensor::FromVector<bool>({true, false}, {2, 1});
  Tensor row = Tensor::FromVector<bool>({true, false});
  Tensor z = RunOne("LogicalAnd", {col, row});
  EXPECT_EQ(z.shape(), TensorShape({2, 2}));
  ExpectClose(z, {1, 0, 0, 0}, 0, "LogicalAnd [2,1] [2]");
  ExpectClose(RunOne("LogicalOr", {col, row}), {1, 1, 1, 0}, 0, "LogicalOr [2,1] [2]");
}

TEST(CwiseBinaryTest, ComparisonHandValues) {
  Tensor x = Tensor::FromVector<float>({1, 2, 3});
  Tensor two = Tensor::Scalar<float>(2);
  ExpectClose(RunOne("Equal", {x, two}), {0, 1, 0}, 0, "Equal");
  ExpectClose(RunOne("NotEqual", {x, two}), {1, 0, 1}, 0, "NotEqual");
  ExpectClose(RunOne("Less", {x, two}), {1, 0, 0}, 0, "Less");
  ExpectClose(RunOne("LessEqual", {x, two}), {1, 1, 0}, 0, "LessEqual");
  ExpectClose(RunOne("Greater", {x, two}), {0, 0, 1}, 0, "Greater");
  ExpectClose(RunOne("GreaterEqual", {two, x}), {1, 1, 0}, 0, "GreaterEqual scalar first");
}

TEST(CwiseBinaryTest, IntegerDivisionTruncatesAndWrapsAtTheMinimum) {
  Tensor x = Tensor::FromVector<int32_t>({7, -7, 7, -7, std::numeric_limits<int32_t>::min()});
  Tensor y = Tensor::FromVector<int32_t>({2, 2, -2, -2, -1});
  ExpectClose(RunOne("Div", {x, y}), {3, -3, -3, 3, std::numeric_limits<int32_t>::min()}, 0,
              "int32 Div");
  Tensor z = RunOne("Div", {Tensor::FromVector<int64_t>({std::numeric_limits<int64_t>::min(), 9}),
                            Tensor::Scalar<int64_t>(-1)});
  ASSERT_EQ(z.dtype(), DT_INT64);
  EXPECT_EQ(z.data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(z.data<int64_t>()[1], -9);
}

TEST(CwiseBinaryTest, FloatDivisionByZeroGivesInfinity) {
  Tensor z = RunOne("Div", {Tensor::FromVector<float>({1, -1, 0}), Tensor::Scalar<float>(0)});
  ASSERT_EQ(z.dtype(), DT_FLOAT);
  EXPECT_EQ(z.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(z.data<float>()[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(z.data<float>()[2]));
}

TEST(CwiseBinaryTest, MaximumAndMinimumPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::FromVector<float>({nan, 1, 2});
  Tensor y = Tensor::FromVector<float>({1, nan, 3});
  for (const char* op : {"Maximum", "Minimum"}) {
    Tensor z = RunOne(op, {x, y});
    ASSERT_EQ(z.NumElements(), 3);
    EXPECT_TRUE(std::isnan(z.data<float>()[0])) << op;
    EXPECT_TRUE(std::isnan(z.data<float>()[1])) << op;
  }
}

// ---- Select / SelectV2 ----------------------------------------------------------------------

Tensor Bools(const std::vector<bool>& v, const TensorShape& shape) {
  Tensor t(DT_BOOL, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

TEST(SelectTest, ReadsOnlyTheChosenOperand) {
  // The arithmetic form c*t + (1-c)*e gives NaN where e is Inf and c is true.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor c = Bools({true, false, true, false}, {4});
  Tensor t = Tensor::FromVector<float>({1, inf, 3, nan});
  Tensor e = Tensor::FromVector<float>({inf, 2, nan, 4});
  for (const char* op : {"Select", "SelectV2"}) {
    Tensor z = RunOne(op, {c, t, e});
    ASSERT_EQ(z.NumElements(), 4) << op;
    EXPECT_EQ(std::vector<float>(z.data<float>(), z.data<float>() + 4),
              (std::vector<float>{1, 2, 3, 4}))
        << op;
  }
}

TEST(SelectTest, SelectRowVectorAndScalarCondition) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, TensorShape({3, 2}));
  Tensor e = Tensor::FromVector<int32_t>({-1, -2, -3, -4, -5, -6}, TensorShape({3, 2}));
  Tensor rows = RunOne("Select", {Bools({true, false, true}, {3}), t, e});
  EXPECT_EQ(std::vector<int32_t>(rows.data<int32_t>(), rows.data<int32_t>() + 6),
            (std::vector<int32_t>{1, 2, -3, -4, 5, 6}));
  Tensor all = RunOne("Select", {Bools({false}, {}), t, e});
  EXPECT_EQ(std::vector<int32_t>(all.data<int32_t>(), all.data<int32_t>() + 6),
            (std::vector<int32_t>{-1, -2, -3, -4, -5, -6}));
}

TEST(SelectTest, SelectV2BroadcastsAllThreeOnEveryThreadCount) {
  // condition [4,1,3], t [5,1], e scalar -> [4,5,3]; large enough to be sharded.
  const TensorShape out({4, 500, 3});
  Tensor c(DT_BOOL, TensorShape({4, 1, 3}));
  for (int i = 0; i < 12; ++i) c.data<bool>()[i] = (i * 7) % 3 == 0;
  Tensor t = RandomTensor<float>(TensorShape({500, 1}), -5, 5, 71);
  Tensor e = Tensor::Scalar<float>(-100);
  std::vector<double> want(out.num_elements());
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 500; ++b)
      for (int k = 0; k < 3; ++k)
        want[(a * 500 + b) * 3 + k] = c.data<bool>()[a * 3 + k] ? t.data<float>()[b] : -100.0;
  ExpectClose(RunOne("SelectV2", {c, t, e}), want, 0, "SelectV2");
  for (int threads : {1, 3, 8}) {
    auto z = RunKernelDirect("SelectV2", {c, t, e}, threads);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ(z->shape(), out);
    ExpectClose(*z, want, 0, "SelectV2 threads=" + std::to_string(threads));
  }
}

TEST(SelectTest, BadShapesAreErrorsNamingThem) {
  Tensor t(DT_FLOAT, TensorShape({2, 3}));
  Tensor e(DT_FLOAT, TensorShape({3}));
  auto v1 = RunOp("Select", {Bools({true, false}, {2}), t, e});
  ASSERT_FALSE(v1.ok());
  EXPECT_NE(v1.status().message().find("SelectV2"), std::string::npos) << v1.status();
  auto cond = RunKernelDirect("Select", {Bools({true, false, true}, {3}), t, t}, 1);
  ASSERT_FALSE(cond.ok());
  EXPECT_NE(cond.status().message().find("condition [3]"), std::string::npos) << cond.status();
  auto v2 = RunKernelDirect("SelectV2", {Bools({true, false}, {2}), t, e}, 1);
  ASSERT_FALSE(v2.ok());
  EXPECT_EQ(v2.status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- binary: errors -------------------------------------------------------------------------

TEST(CwiseBinaryErrorTest, IncompatibleShapes) {
  Tensor x(DT_FLOAT, TensorShape({2, 3}));
  Tensor y(DT_FLOAT, TensorShape({4}));
  auto out = RunOp("Add", {x, y});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("broadcast"), std::string::npos) << out.status();
  // The kernel checks too, for graphs whose shapes were unknown when built.
  auto direct = RunKernelDirect(
      "Mul", {Tensor(DT_INT32, TensorShape({3, 2})), Tensor(DT_INT32, TensorShape({3}))}, 1);
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(direct.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(direct.status().message().find("[3,2]"), std::string::npos) << direct.status();
}

TEST(CwiseBinaryErrorTest, IntegerDivisionByZero) {
  auto out32 = RunOp(
      "Div", {Tensor::FromVector<int32_t>({1, 2, 3}), Tensor::FromVector<int32_t>({1, 0, 1})});
  ASSERT_FALSE(out32.ok());
  EXPECT_EQ(out32.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out32.status().message().find("division by zero"), std::string::npos) << out32.status();
  auto out64 = RunOp("Div", {Tensor::FromVector<int64_t>({1, 2}), Tensor::Scalar<int64_t>(0)});
  ASSERT_FALSE(out64.ok());
  EXPECT_EQ(out64.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CwiseBinaryErrorTest, UnregisteredTypeIsReported) {
  // Div has no int8 kernel (see the comment atop cwise_binary_ops.cc).
  auto out = RunOp("Div", {Tensor::FromVector<int8_t>({4}), Tensor::FromVector<int8_t>({2})});
  EXPECT_FALSE(out.ok());
}

// ---- unary ----------------------------------------------------------------------------------

TEST(CwiseUnaryTest, SignedOpsHandValues) {
  Tensor f = Tensor::FromVector<float>({-2.5f, 0, 3});
  ExpectClose(RunOne("Neg", {f}), {2.5, 0, -3}, 0, "Neg");
  ExpectClose(RunOne("Abs", {f}), {2.5, 0, 3}, 0, "Abs");
  ExpectClose(RunOne("Square", {f}), {6.25, 0, 9}, 0, "Square");
  ExpectClose(RunOne("Sign", {f}), {-1, 0, 1}, 0, "Sign");
  ExpectClose(RunOne("Relu", {f}), {0, 0, 3}, 0, "Relu");
  Tensor i = Tensor::FromVector<int32_t>({-5, 0, 7});
  ExpectClose(RunOne("Neg", {i}), {5, 0, -7}, 0, "Neg int32");
  ExpectClose(RunOne("Abs", {i}), {5, 0, 7}, 0, "Abs int32");
  ExpectClose(RunOne("Square", {i}), {25, 0, 49}, 0, "Square int32");
  ExpectClose(RunOne("Sign", {i}), {-1, 0, 1}, 0, "Sign int32");
  ExpectClose(RunOne("Relu", {i}), {0, 0, 7}, 0, "Relu int32");
  Tensor l = Tensor::FromVector<int64_t>({-(int64_t{1} << 40), 3});
  ExpectClose(RunOne("Abs", {l}), {std::ldexp(1.0, 40), 3}, 0, "Abs int64");
  Tensor nan = Tensor::FromVector<float>({std::numeric_limits<float>::quiet_NaN()});
  EXPECT_TRUE(std::isnan(RunOne("Relu", {nan}).data<float>()[0]));
  EXPECT_TRUE(std::isnan(RunOne("Sign", {nan}).data<float>()[0]));
}

template <typename T>
class CwiseUnaryTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(CwiseUnaryTypedTest, SignedTypes);

TYPED_TEST(CwiseUnaryTypedTest, SignedOpsMatchReference) {
  using T = TypeParam;
  // 1003 elements: the vector loop and its tail.
  Tensor x = RandomTensor<T>({17, 59}, -50, 50, 3);
  const double tol = Tolerance(DataTypeToEnum<T>::value);
  const std::map<std::string, std::function<double(double)>> refs = {
      {"Neg", [](double a) { return -a; }},
      {"Abs", [](double a) { return std::abs(a); }},
      {"Square", [](double a) { return a * a; }},
      {"Sign", [](double a) { return double((a > 0) - (a < 0)); }},
      {"Relu", [](double a) { return std::max(a, 0.0); }},
  };
  for (const auto& [op, ref] : refs) {
    Tensor y = RunOne(op, {x});
    EXPECT_EQ(y.dtype(), x.dtype());
    EXPECT_EQ(y.shape(), x.shape());
    ExpectClose(y, ReferenceUnary(x, ref), tol, op);
  }
}

template <typename T>
class CwiseFloatingTypedTest : public ::testing::Test {};
using FloatingTypes = ::testing::Types<float, double, half, bfloat16>;
TYPED_TEST_SUITE(CwiseFloatingTypedTest, FloatingTypes);

TYPED_TEST(CwiseFloatingTypedTest, FloatingOpsMatchReference) {
  using T = TypeParam;
  const DataType dt = DataTypeToEnum<T>::value;
  // Float transcendental functions are vectorised approximations: a few ulp.
  const double tol = dt == DT_FLOAT ? 1e-5 : std::max(Tolerance(dt), 1e-12);
  Tensor positive = RandomTensor<T>({1003}, 0.05, 20, 11);
  Tensor any = RandomTensor<T>({1003}, -8, 8, 12);
  struct Case {
    const char* op;
    const Tensor* x;
    std::function<double(double)> ref;
  };
  const std::vector<Case> cases = {
      {"Sqrt", &positive, [](double a) { return std::sqrt(a); }},
      {"Rsqrt", &positive, [](double a) { return 1 / std::sqrt(a); }},
      {"Log", &positive, [](double a) { return std::log(a); }},
      {"Reciprocal", &positive, [](double a) { return 1 / a; }},
      {"Exp", &any, [](double a) { return std::exp(a); }},
      {"Tanh", &any, [](double a) { return std::tanh(a); }},
      {"Sigmoid", &any, [](double a) { return 1 / (1 + std::exp(-a)); }},
  };
  for (const Case& c : cases) {
    Tensor y = RunOne(c.op, {*c.x});
    EXPECT_EQ(y.dtype(), dt);
    ExpectClose(y, ReferenceUnary(*c.x, c.ref), tol, c.op);
  }
}

TEST(CwiseUnaryTest, FloatingEdgeValues) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = Tensor::FromVector<float>({0, -1, inf});
  Tensor sqrt = RunOne("Sqrt", {x});
  EXPECT_EQ(sqrt.data<float>()[0], 0);
  EXPECT_TRUE(std::isnan(sqrt.data<float>()[1]));
  EXPECT_EQ(sqrt.data<float>()[2], inf);
  Tensor log = RunOne("Log", {x});
  EXPECT_EQ(log.data<float>()[0], -inf);
  EXPECT_EQ(RunOne("Reciprocal", {x}).data<float>()[0], inf);
  Tensor big = Tensor::FromVector<float>({-100, 100});
  ExpectClose(RunOne("Sigmoid", {big}), {0, 1}, 1e-6, "Sigmoid saturates");
  ExpectClose(RunOne("Tanh", {big}), {-1, 1}, 1e-6, "Tanh saturates");
}

// ---- AddN -----------------------------------------------------------------------------------

template <typename T>
class AddNTypedTest : public ::testing::Test {};
TYPED_TEST_SUITE(AddNTypedTest, SignedTypes);

TYPED_TEST(AddNTypedTest, SumsEveryInput) {
  using T = TypeParam;
  const TensorShape shape({3, 700});  // two blocks of the kernel plus a tail
  std::vector<Tensor> inputs;
  for (uint32_t i = 0; i < 4; ++i) inputs.push_back(RandomTensor<T>(shape, -10, 10, 20 + i));
  Tensor z = RunOne("AddN", inputs);
  ASSERT_EQ(z.shape(), shape);
  std::vector<double> want(shape.num_elements());
  for (size_t j = 0; j < want.size(); ++j) {
    for (const Tensor& t : inputs) want[j] += ValueAt(t, j);
  }
  ExpectClose(z, want, Tolerance(DataTypeToEnum<T>::value), "AddN");
  ExpectClose(RunOne("AddN", {inputs[0]}), ReferenceUnary(inputs[0], [](double a) { return a; }), 0,
              "AddN of one input");
}

// Integer powers are exact and wrap as TensorFlow's (3^21 in int32 is 1870418611; the float64
// detour saturated to INT32_MAX); a negative integer exponent is an error naming the way out.
TEST(CwiseIntegerPowTest, ExactWrappingAndNegativeExponents) {
  Tensor p = RunOne("Pow", {Tensor::FromVector<int32_t>({3, -2, 7, 0}),
                            Tensor::FromVector<int32_t>({21, 3, 0, 0})});
  ASSERT_EQ(p.NumElements(), 4);
  EXPECT_EQ(p.data<int32_t>()[0], 1870418611);
  EXPECT_EQ(p.data<int32_t>()[1], -8);
  EXPECT_EQ(p.data<int32_t>()[2], 1);
  EXPECT_EQ(p.data<int32_t>()[3], 1);
  Tensor q = RunOne("Pow", {Tensor::FromVector<int64_t>({3}), Tensor::Scalar<int64_t>(39)});
  EXPECT_EQ(q.data<int64_t>()[0], 4052555153018976267);  // exact: above 2^53
  auto neg =
      RunOp("Pow", {Tensor::FromVector<int32_t>({2, 1}), Tensor::FromVector<int32_t>({1, -1})});
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(neg.status().message().find("negative integer powers"), std::string::npos)
      << neg.status();
}

// Shifts clamp the amount to [0, bits - 1] as TensorFlow's kernels (never undefined shifts);
// right shifts of signed values are arithmetic; left shifts of negative values are defined.
TEST(CwiseBitwiseTest, ShiftsClampAndKeepSigns) {
  Tensor l = RunOne("LeftShift", {Tensor::FromVector<int32_t>({1, 1, 1, -1}),
                                  Tensor::FromVector<int32_t>({3, 40, -2, 1})});
  EXPECT_EQ(l.data<int32_t>()[0], 8);
  EXPECT_EQ(l.data<int32_t>()[1], std::numeric_limits<int32_t>::min());  // 1 << 31
  EXPECT_EQ(l.data<int32_t>()[2], 1);
  EXPECT_EQ(l.data<int32_t>()[3], -2);
  Tensor r = RunOne("RightShift", {Tensor::FromVector<int8_t>({-128, -128, 64}),
                                   Tensor::FromVector<int8_t>({1, 100, 2})});
  EXPECT_EQ(r.data<int8_t>()[0], -64);
  EXPECT_EQ(r.data<int8_t>()[1], -1);
  EXPECT_EQ(r.data<int8_t>()[2], 16);
  Tensor u = RunOne("LeftShift", {Tensor::FromVector<uint8_t>({255}), Tensor::Scalar<uint8_t>(4)});
  EXPECT_EQ(u.data<uint8_t>()[0], 240);
  Tensor pc = RunOne("PopulationCount", {Tensor::FromVector<int64_t>({-1, 0, 5})});
  ASSERT_EQ(pc.dtype(), DT_UINT8);
  EXPECT_EQ(pc.data<uint8_t>()[0], 64);
  EXPECT_EQ(pc.data<uint8_t>()[1], 0);
  EXPECT_EQ(pc.data<uint8_t>()[2], 2);
}

TEST(AddNTest, MismatchedShapesAreAnError) {
  auto out = RunKernelDirect(
      "AddN", {Tensor(DT_FLOAT, TensorShape({2, 3})), Tensor(DT_FLOAT, TensorShape({3, 2}))}, 1);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("[3,2]"), std::string::npos) << out.status();
  EXPECT_FALSE(
      RunOp("AddN", {Tensor(DT_FLOAT, TensorShape({2})), Tensor(DT_FLOAT, TensorShape({3}))}).ok());
}

// ---- large tensors: the sharded path --------------------------------------------------------

struct LargeCase {
  TensorShape x, y;
};

TEST(CwiseLargeTest, BinaryBroadcastsMatchReferenceOnEveryThreadCount) {
  const std::vector<LargeCase> cases = {
      {TensorShape({1100003}), TensorShape({1100003})},      // flat, odd length
      {TensorShape({}), TensorShape({1100003})},             // scalar with tensor
      {TensorShape({1100, 1001}), TensorShape({1001})},      // row broadcast
      {TensorShape({1001, 1100}), TensorShape({1001, 1})},   // column broadcast
      {TensorShape({7, 1, 40000}), TensorShape({5, 1})},     // 3-D mixed
      {TensorShape({600000, 2}), TensorShape({600000, 1})},  // short rows
  };
  uint32_t seed = 100;
  for (const LargeCase& c : cases) {
    Tensor x = RandomTensor<float>(c.x, -5, 5, seed++);
    Tensor y = RandomTensor<float>(c.y, -5, 5, seed++);
    const TensorShape out = BroadcastOf(c.x, c.y);
    ASSERT_GT(out.num_elements(), 1000000);
    const std::vector<double> want =
        ReferenceBinary(x, y, out, [](double a, double b) { return a - b; });
    const std::string what = "Sub " + c.x.DebugString() + " " + c.y.DebugString();
    ExpectClose(RunOne("Sub", {x, y}), want, 1e-6, what);
    for (int threads : {1, 3, 8}) {
      auto z = RunKernelDirect("Sub", {x, y}, threads);
      ASSERT_TRUE(z.ok()) << z.status();
      ExpectClose(*z, want, 1e-6, what + " threads=" + std::to_string(threads));
    }
  }
}

TEST(CwiseLargeTest, UnaryAndComparisonOnLargeTensors) {
  Tensor x = RandomTensor<float>({1 << 20, 3}, -4, 4, 5);
  ExpectClose(RunOne("Exp", {x}), ReferenceUnary(x, [](double a) { return std::exp(a); }), 1e-5,
              "Exp large");
  Tensor h = RandomTensor<half>({1 << 20, 2}, -4, 4, 6);
  ExpectClose(RunOne("Tanh", {h}), ReferenceUnary(h, [](double a) { return std::tanh(a); }),
              Tolerance(DT_HALF), "Tanh half large");
  Tensor row = RandomTensor<float>({3}, -4, 4, 7);
  Tensor z = RunOne("Greater", {x, row});
  ASSERT_EQ(z.dtype(), DT_BOOL);
  ExpectClose(z, ReferenceBinary(x, row, x.shape(), CompareRefs().at("Greater")), 0,
              "Greater large");
  auto sum = RunKernelDirect("AddN", {x, x, x}, 4);
  ASSERT_TRUE(sum.ok()) << sum.status();
  ExpectClose(*sum, ReferenceUnary(x, [](double a) { return 3 * a; }), 1e-6, "AddN large");
}

// ---- buffer reuse ---------------------------------------------------------------------------

TEST(CwiseForwardingTest, OutputsReuseAnInputBufferWhenTheyMay) {
  {
    Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
    Tensor y = Tensor::FromVector<float>({10, 20});
    const void* x_buf = x.raw_data();
    auto z = RunKernelDirect("Sub", MoveAll(x, y), 1);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ(z->raw_data(), x_buf);
    ExpectClose(*z, {-9, -18, -7, -16}, 0, "Sub forwarding x");
  }
  {
    // x is the broadcast operand, so y's buffer is reused; the order of operands must hold.
    Tensor x = Tensor::FromVector<float>({100});
    Tensor y = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
    const void* y_buf = y.raw_data();
    auto z = RunKernelDirect("Sub", MoveAll(x, y), 1);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ(z->raw_data(), y_buf);
    ExpectClose(*z, {99, 98, 97, 96}, 0, "Sub forwarding y");
  }
  {
    Tensor x = Tensor::FromVector<float>({1, -2, 3});
    const void* x_buf = x.raw_data();
    auto z = RunKernelDirect("Neg", MoveAll(x), 1);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ(z->raw_data(), x_buf);
    ExpectClose(*z, {-1, 2, -3}, 0, "Neg forwarding");
  }
  {
    // A shared input is never overwritten.
    Tensor x = Tensor::FromVector<float>({1, 2});
    Tensor keep = x;
    auto z = RunKernelDirect("Exp", {x}, 1);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_NE(z->raw_data(), keep.raw_data());
    ExpectClose(keep, {1, 2}, 0, "input left alone");
  }
  {
    Tensor a = Tensor::FromVector<int32_t>({1, 2});
    Tensor b = Tensor::FromVector<int32_t>({10, 20});
    const void* a_buf = a.raw_data();
    auto z = RunKernelDirect("AddN", MoveAll(a, b, Tensor::FromVector<int32_t>({5, 5})), 1);
    ASSERT_TRUE(z.ok()) << z.status();
    EXPECT_EQ(z->raw_data(), a_buf);
    ExpectClose(*z, {16, 27}, 0, "AddN forwarding");
  }
}

}  // namespace
}  // namespace shardflow
