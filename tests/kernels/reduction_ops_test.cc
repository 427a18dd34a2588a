// Tests for the CPU reduction kernels (kernels/cpu/reduction_ops.cc): Sum, Mean, Max, Min, Prod
// and ArgMax against hand-computed values and a naive reference, every registered dtype, axis
// forms (scalar, vector, negative, duplicate, empty, int64), keep_dims, empty inputs, errors and
// the sharded path on large tensors.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
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

// ---- helpers --------------------------------------------------------------------------------

Tensor RunOne(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  auto out = RunOp(op, inputs, attrs);
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  if (!out.ok() || out->empty()) return Tensor();
  return (*out)[0];
}

Attrs KeepDims(bool keep) { return {{"keep_dims", MakeAttr(keep)}}; }

// Runs the kernel without RunOp: no shape inference (so the kernel's own checks are reached)
// and `intra_threads` threads.
absl::StatusOr<Tensor> RunKernelDirect(const std::string& op, const std::vector<Tensor>& inputs,
                                       int intra_threads, const Attrs& attrs = {}) {
  RunOpOptions options;
  options.infer_shapes = false;
  options.intra_op_threads = intra_threads;
  auto out = RunOp(op, inputs, attrs, options);
  if (!out.ok()) return out.status();
  return (*out)[0];
}

double ValueAt(const Tensor& t, int64_t i) {
  SF_SWITCH_NUMERIC(
      t.dtype(), T, { return static_cast<double>(t.data<T>()[i]); },
      ADD_FAILURE() << "unexpected dtype " << DataTypeString(t.dtype()));
  return 0;
}

template <typename T>
Tensor RandomTensor(const TensorShape& shape, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<T> v(shape.num_elements());
  for (auto& e : v) {
    if constexpr (std::is_integral_v<T>) {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      e = static_cast<T>(d(gen));
    } else {
      std::uniform_real_distribution<double> d(lo, hi);
      e = static_cast<T>(d(gen));
    }
  }
  return Tensor::FromVector<T>(v, shape);
}

void ExpectClose(const Tensor& got, const std::vector<double>& want, double rel_tol,
                 const std::string& what) {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << what;
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 5; ++i) {
    const double g = ValueAt(got, i), w = want[i];
    const bool ok =
        std::isnan(w) ? std::isnan(g) : std::abs(g - w) <= rel_tol * std::max(1.0, std::abs(w));
    if (!ok) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << w;
      ++failures;
    }
  }
}

enum class Kind { kSum, kMean, kMax, kMin, kProd };

const std::map<std::string, Kind>& ReductionOps() {
  static const auto* ops = new std::map<std::string, Kind>{{"Sum", Kind::kSum},
                                                           {"Mean", Kind::kMean},
                                                           {"Max", Kind::kMax},
                                                           {"Min", Kind::kMin},
                                                           {"Prod", Kind::kProd}};
  return *ops;
}

// Reduces `x` over `axes` (normalised, any order, duplicates allowed) one element at a time, in
// double; integer means truncate.
std::vector<double> ReferenceReduce(const Tensor& x, const std::vector<int64_t>& axes, Kind kind) {
  const int rank = x.dims();
  std::vector<bool> reduce(rank, false);
  for (int64_t a : axes) reduce[a < 0 ? a + rank : a] = true;
  int64_t out_count = 1, count = 1;
  for (int d = 0; d < rank; ++d) (reduce[d] ? count : out_count) *= x.dim_size(d);
  double init = 0;
  if (kind == Kind::kProd) init = 1;
  if (kind == Kind::kMax) init = -std::numeric_limits<double>::infinity();
  if (kind == Kind::kMin) init = std::numeric_limits<double>::infinity();
  std::vector<double> acc(out_count, init);
  std::vector<int64_t> idx(rank);
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    int64_t rem = i;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rem % x.dim_size(d);
      rem /= x.dim_size(d);
    }
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) {
      if (!reduce[d]) o = o * x.dim_size(d) + idx[d];
    }
    const double v = ValueAt(x, i);
    switch (kind) {
      case Kind::kSum:
      case Kind::kMean:
        acc[o] += v;
        break;
      case Kind::kProd:
        acc[o] *= v;
        break;
      case Kind::kMax:
        acc[o] = std::max(acc[o], v);
        break;
      case Kind::kMin:
        acc[o] = std::min(acc[o], v);
        break;
    }
  }
  if (kind == Kind::kMean) {
    for (double& a : acc) {
      a = DataTypeIsInteger(x.dtype()) ? std::trunc(a / count) : a / count;
    }
  }
  return acc;
}

double Tolerance(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return 1e-5;
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

// ---- values ---------------------------------------------------------------------------------

TEST(ReductionTest, HandValuesOverEachAxis) {
  // [[1, 2, 3],
  //  [4, 5, 6]]
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor axis0 = Tensor::Scalar<int32_t>(0);
  Tensor axis1 = Tensor::Scalar<int32_t>(1);
  Tensor both = Tensor::FromVector<int32_t>({0, 1});
  ExpectClose(RunOne("Sum", {x, axis0}), {5, 7, 9}, 0, "Sum axis 0");
  ExpectClose(RunOne("Sum", {x, axis1}), {6, 15}, 0, "Sum axis 1");
  ExpectClose(RunOne("Sum", {x, both}), {21}, 0, "Sum all");
  ExpectClose(RunOne("Mean", {x, axis0}), {2.5, 3.5, 4.5}, 0, "Mean axis 0");
  ExpectClose(RunOne("Mean", {x, axis1}), {2, 5}, 0, "Mean axis 1");
  ExpectClose(RunOne("Max", {x, axis0}), {4, 5, 6}, 0, "Max axis 0");
  ExpectClose(RunOne("Max", {x, axis1}), {3, 6}, 0, "Max axis 1");
  ExpectClose(RunOne("Min", {x, axis0}), {1, 2, 3}, 0, "Min axis 0");
  ExpectClose(RunOne("Min", {x, axis1}), {1, 4}, 0, "Min axis 1");
  ExpectClose(RunOne("Prod", {x, axis0}), {4, 10, 18}, 0, "Prod axis 0");
  ExpectClose(RunOne("Prod", {x, both}), {720}, 0, "Prod all");
  EXPECT_EQ(RunOne("Sum", {x, axis1}).shape(), TensorShape({2}));
  EXPECT_EQ(RunOne("Sum", {x, both}).shape(), TensorShape({}));
}

TEST(ReductionTest, AxisForms) {
  Tensor x = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  ExpectClose(RunOne("Sum", {x, Tensor::Scalar<int32_t>(-1)}), {6, 15}, 0, "negative axis");
  ExpectClose(RunOne("Sum", {x, Tensor::FromVector<int64_t>({-2})}), {5, 7, 9}, 0, "int64 axis");
  ExpectClose(RunOne("Sum", {x, Tensor::FromVector<int32_t>({1, -1, 1})}), {6, 15}, 0,
              "duplicate axes");
  ExpectClose(RunOne("Sum", {x, Tensor::FromVector<int32_t>({1, 0})}), {21}, 0,
              "axes in any order");
  Tensor none = RunOne("Sum", {x, Tensor::FromVector<int32_t>({})});
  EXPECT_EQ(none.shape(), TensorShape({2, 3}));
  ExpectClose(none, {1, 2, 3, 4, 5, 6}, 0, "empty axis list reduces nothing");
  Tensor scalar = RunOne("Max", {Tensor::Scalar<float>(3), Tensor::FromVector<int32_t>({})});
  EXPECT_EQ(scalar.shape(), TensorShape({}));
  ExpectClose(scalar, {3}, 0, "scalar input");
}

TEST(ReductionTest, KeepDims) {
  Tensor x = RandomTensor<float>({2, 3, 4}, -1, 1, 1);
  Tensor a = RunOne("Sum", {x, Tensor::FromVector<int32_t>({0, 2})}, KeepDims(true));
  EXPECT_EQ(a.shape(), TensorShape({1, 3, 1}));
  ExpectClose(a, ReferenceReduce(x, {0, 2}, Kind::kSum), 1e-5, "keep_dims");
  Tensor b = RunOne("Mean", {x, Tensor::FromVector<int32_t>({})}, KeepDims(true));
  EXPECT_EQ(b.shape(), TensorShape({2, 3, 4}));
  Tensor c = RunOne("Max", {x, Tensor::FromVector<int32_t>({0, 1, 2})}, KeepDims(true));
  EXPECT_EQ(c.shape(), TensorShape({1, 1, 1}));
  EXPECT_EQ(RunOne("Max", {x, Tensor::Scalar<int32_t>(1)}, KeepDims(false)).shape(),
            TensorShape({2, 4}));
}

TEST(ReductionTest, IntegerMeanTruncates) {
  Tensor x = Tensor::FromVector<int32_t>({1, 2, -1, -2, 7, 7}, {3, 2});
  ExpectClose(RunOne("Mean", {x, Tensor::Scalar<int32_t>(1)}), {1, -1, 7}, 0, "int32 Mean");
  Tensor y = Tensor::FromVector<int64_t>({10, 3, 4});
  ExpectClose(RunOne("Mean", {y, Tensor::Scalar<int32_t>(0)}), {5}, 0, "int64 Mean");
}

TEST(ReductionTest, EverySplitOfAxesMatchesReference) {
  // Every subset of the axes of a rank-4 tensor, including separated groups like {0, 2} and
  // {1, 3}, and size-1 dimensions that vanish when merging.
  for (const TensorShape& shape : {TensorShape({2, 3, 4, 5}), TensorShape({3, 1, 4, 2})}) {
    Tensor x = RandomTensor<float>(shape, -2, 2, 5);
    for (int mask = 0; mask < 16; ++mask) {
      std::vector<int64_t> axes;
      for (int d = 0; d < 4; ++d) {
        if (mask & (1 << d)) axes.push_back(d);
      }
      Tensor axis = Tensor::FromVector<int64_t>(axes);
      for (const auto& [op, kind] : ReductionOps()) {
        Tensor y = RunOne(op, {x, axis});
        ExpectClose(y, ReferenceReduce(x, axes, kind), 1e-5,
                    op + " " + shape.DebugString() + " axes " + axis.SummarizeValue());
      }
    }
  }
}

TEST(ReductionTest, MaxAndMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::FromVector<float>({1, nan, 3, 4}, {2, 2});
  for (const char* op : {"Max", "Min"}) {
    Tensor y = RunOne(op, {x, Tensor::Scalar<int32_t>(1)});
    ASSERT_EQ(y.NumElements(), 2);
    EXPECT_TRUE(std::isnan(y.data<float>()[0])) << op;
    EXPECT_FALSE(std::isnan(y.data<float>()[1])) << op;
  }
}

// ---- dtypes ---------------------------------------------------------------------------------

template <typename T>
class ReductionTypedTest : public ::testing::Test {};
using ReductionTypes = ::testing::Types<float, double, int32_t, int64_t, half, bfloat16>;
TYPED_TEST_SUITE(ReductionTypedTest, ReductionTypes);

TYPED_TEST(ReductionTypedTest, MatchesReference) {
  using T = TypeParam;
  const DataType dt = DataTypeToEnum<T>::value;
  // Small values keep integer sums exact and products of 60 factors in range.
  Tensor x = RandomTensor<T>({3, 4, 5}, -3, 3, 9);
  Tensor small = RandomTensor<T>({3, 4, 5}, -1, 1, 10);
  for (const std::vector<int64_t>& axes :
       std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}}) {
    Tensor axis = Tensor::FromVector<int64_t>(axes);
    for (const auto& [op, kind] : ReductionOps()) {
      const Tensor& in = kind == Kind::kProd ? small : x;
      Tensor y = RunOne(op, {in, axis});
      ASSERT_EQ(y.dtype(), dt);
      ExpectClose(y, ReferenceReduce(in, axes, kind), Tolerance(dt),
                  op + " " + DataTypeString(dt) + " axes " + axis.SummarizeValue());
    }
  }
}

TYPED_TEST(ReductionTypedTest, ArgMaxMatchesReference) {
  using T = TypeParam;
  Tensor x = RandomTensor<T>({3, 4, 5}, -50, 50, 11);
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int a = static_cast<int>(axis < 0 ? axis + 3 : axis);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < a; ++d) outer *= x.dim_size(d);
    for (int d = a + 1; d < 3; ++d) inner *= x.dim_size(d);
    const int64_t n = x.dim_size(a);
    std::vector<double> want;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        int64_t best = 0;
        for (int64_t r = 1; r < n; ++r) {
          if (ValueAt(x, (o * n + r) * inner + j) > ValueAt(x, (o * n + best) * inner + j)) {
            best = r;
          }
        }
        want.push_back(best);
      }
    }
    for (DataType out_type : {DT_INT32, DT_INT64}) {
      Tensor y = RunOne("ArgMax", {x, Tensor::Scalar<int64_t>(axis)},
                        {{"output_type", MakeAttr(out_type)}});
      ASSERT_EQ(y.dtype(), out_type);
      ExpectClose(y, want, 0, "ArgMax axis " + std::to_string(axis));
    }
  }
}

// ---- ArgMax ---------------------------------------------------------------------------------

TEST(ArgMaxTest, HandValuesTiesAndNaN) {
  Tensor x = Tensor::FromVector<float>({1, 5, 5, 2, 9, 0}, {2, 3});
  Tensor y = RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(1)});
  ASSERT_EQ(y.dtype(), DT_INT64);  // the default output_type
  EXPECT_EQ(y.shape(), TensorShape({2}));
  ExpectClose(y, {1, 1}, 0, "ArgMax axis 1, first of the tied maxima");
  ExpectClose(RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(0)}), {1, 1, 0}, 0, "ArgMax axis 0");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor with_nan = Tensor::FromVector<float>({1, nan, 3, nan});
  ExpectClose(RunOne("ArgMax", {with_nan, Tensor::Scalar<int32_t>(0)}), {1}, 0, "first NaN");
}

// Long rows go through the kernel's vector lanes: ties and NaNs must still pick the first index.
template <typename T>
void CheckFirstIndexOnLongRows() {
  const int64_t n = 1000;
  struct Case {
    std::vector<int64_t> max_at;  // positions holding the maximum, in any order
    int64_t want;
  };
  const std::vector<Case> cases = {
      {{700, 123, 999}, 123}, {{0, 500}, 0}, {{999}, 999}, {{}, 0}, {{9, 8, 10, 17}, 8}};
  for (const Case& c : cases) {
    std::vector<T> row(n, static_cast<T>(1));
    for (int64_t p : c.max_at) row[p] = static_cast<T>(5);
    Tensor x = Tensor::FromVector<T>(row, {1, n});
    Tensor along_row = RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(1)});
    ExpectClose(along_row, {double(c.want)}, 0, "ArgMax row " + DataTypeString(x.dtype()));
    // The same values as the middle column of [n, 3] (a strided reduction); the other columns
    // are constant, so their answer is 0.
    std::vector<T> columns(3 * n, static_cast<T>(0));
    for (int64_t r = 0; r < n; ++r) columns[3 * r + 1] = row[r];
    Tensor y = Tensor::FromVector<T>(columns, {n, 3});
    ExpectClose(RunOne("ArgMax", {y, Tensor::Scalar<int32_t>(0)}), {0, double(c.want), 0}, 0,
                "ArgMax column " + DataTypeString(x.dtype()));
  }
}

TEST(ArgMaxTest, FirstIndexOnLongRows) {
  CheckFirstIndexOnLongRows<float>();
  CheckFirstIndexOnLongRows<int32_t>();
  CheckFirstIndexOnLongRows<int64_t>();
  CheckFirstIndexOnLongRows<half>();
  CheckFirstIndexOnLongRows<bfloat16>();
  std::vector<float> row(1000, 1.0f);
  row[700] = row[301] = row[900] = std::numeric_limits<float>::quiet_NaN();
  row[5] = 10;
  ExpectClose(RunOne("ArgMax", {Tensor::FromVector<float>(row), Tensor::Scalar<int32_t>(0)}), {301},
              0, "first NaN in a long row");
}

TEST(ArgMaxTest, Errors) {
  Tensor x(DT_FLOAT, TensorShape({2, 3}));
  auto out = RunOp("ArgMax", {x, Tensor::Scalar<int32_t>(2)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  auto direct = RunKernelDirect("ArgMax", {x, Tensor::Scalar<int32_t>(-3)}, 1);
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(direct.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(direct.status().message().find("[-2, 2)"), std::string::npos) << direct.status();
  auto empty = RunOp("ArgMax", {Tensor(DT_FLOAT, TensorShape({0, 3})), Tensor::Scalar<int32_t>(0)});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos) << empty.status();
}

// ---- empty inputs and errors ----------------------------------------------------------------

TEST(ReductionTest, EmptyReductions) {
  Tensor x(DT_FLOAT, TensorShape({0, 3}));
  Tensor axis0 = Tensor::Scalar<int32_t>(0);
  Tensor sum = RunOne("Sum", {x, axis0});
  EXPECT_EQ(sum.shape(), TensorShape({3}));
  ExpectClose(sum, {0, 0, 0}, 0, "Sum of nothing");
  ExpectClose(RunOne("Prod", {x, axis0}), {1, 1, 1}, 0, "Prod of nothing");
  Tensor mean = RunOne("Mean", {x, axis0});
  ASSERT_EQ(mean.NumElements(), 3);
  EXPECT_TRUE(std::isnan(mean.data<float>()[0]));
  ExpectClose(RunOne("Sum", {Tensor(DT_INT64, TensorShape({0})), axis0}), {0}, 0,
              "int64 Sum of nothing");
  // Reducing the non-empty axis gives an empty output, which is fine even for Max.
  Tensor none = RunOne("Max", {x, Tensor::Scalar<int32_t>(1)});
  EXPECT_EQ(none.shape(), TensorShape({0}));
  // Max and Min of nothing are their identities, as in TensorFlow: -inf and +inf for floats,
  // the lowest and highest value for integers (a reduce_max over a boolean_mask that kept no
  // rows, then tf.maximum with a floor).
  const float inf = std::numeric_limits<float>::infinity();
  Tensor fmax = RunOne("Max", {x, axis0}), fmin = RunOne("Min", {x, axis0});
  ASSERT_EQ(fmax.NumElements(), 3);
  ASSERT_EQ(fmin.NumElements(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(fmax.data<float>()[i], -inf);
    EXPECT_EQ(fmin.data<float>()[i], inf);
  }
  Tensor imax = RunOne("Max", {Tensor(DT_INT32, TensorShape({2, 0})), Tensor::Scalar<int32_t>(1)});
  ASSERT_EQ(imax.NumElements(), 2);
  EXPECT_EQ(imax.data<int32_t>()[0], std::numeric_limits<int32_t>::lowest());
  Tensor imin = RunOne("Min", {Tensor(DT_INT64, TensorShape({0})), axis0});
  EXPECT_EQ(imin.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(RunOp("Mean", {Tensor(DT_INT32, TensorShape({0})), axis0}).ok());
}

TEST(ReductionTest, AxisErrors) {
  Tensor x(DT_FLOAT, TensorShape({2, 3}));
  auto out = RunOp("Sum", {x, Tensor::Scalar<int32_t>(2)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("out of range"), std::string::npos) << out.status();
  // The kernel checks on its own (shape inference may not have seen the axis value).
  for (int64_t bad : {2, -3, 100}) {
    auto direct = RunKernelDirect("Mean", {x, Tensor::FromVector<int64_t>({0, bad})}, 1);
    ASSERT_FALSE(direct.ok()) << bad;
    EXPECT_EQ(direct.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(direct.status().message().find("[-2, 2)"), std::string::npos) << direct.status();
  }
  auto matrix_axis = RunKernelDirect("Sum", {x, Tensor::FromVector<int32_t>({0, 1}, {1, 2})}, 1);
  ASSERT_FALSE(matrix_axis.ok());
  EXPECT_NE(matrix_axis.status().message().find("scalar or a vector"), std::string::npos)
      << matrix_axis.status();
  auto scalar = RunKernelDirect("Sum", {Tensor::Scalar<float>(1), Tensor::Scalar<int32_t>(0)}, 1);
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.status().message().find("scalar"), std::string::npos) << scalar.status();
}

// ---- large tensors: the sharded path --------------------------------------------------------

TEST(ReductionLargeTest, MatchesReferenceOnEveryThreadCount) {
  struct Case {
    TensorShape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {
      {TensorShape({1100003}), {0}},          // one long contiguous reduction, split
      {TensorShape({1100, 1001}), {1}},       // many rows
      {TensorShape({1100, 1001}), {0}},       // columns
      {TensorShape({550001, 2}), {0}},        // two long strided reductions, split
      {TensorShape({40, 300, 100}), {0, 2}},  // two passes
      {TensorShape({1024, 1024}), {0, 1}},    // everything
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    Tensor x = RandomTensor<float>(c.shape, -1, 1, seed++);
    ASSERT_GT(x.NumElements(), 1000000);
    Tensor axis = Tensor::FromVector<int64_t>(c.axes);
    for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
      const std::vector<double> want = ReferenceReduce(x, c.axes, ReductionOps().at(op));
      const std::string what = std::string(op) + " " + c.shape.DebugString();
      // Float sums of a million terms: compare with a tolerance relative to the magnitude.
      const double tol = std::string(op) == "Sum" ? 2e-3 : 1e-5;
      ExpectClose(RunOne(op, {x, axis}), want, tol, what);
      for (int threads : {1, 3}) {
        auto y = RunKernelDirect(op, {x, axis}, threads);
        ASSERT_TRUE(y.ok()) << y.status();
        ExpectClose(*y, want, tol, what + " threads=" + std::to_string(threads));
      }
    }
  }
}

TEST(ReductionLargeTest, LongSumsAreDeterministicAndAccurate) {
  // The split of a long reduction does not depend on the thread count.
  Tensor x = RandomTensor<float>({1 << 21}, 0, 1, 77);
  Tensor axis = Tensor::Scalar<int32_t>(0);
  auto one = RunKernelDirect("Sum", {x, axis}, 1);
  auto many = RunKernelDirect("Sum", {x, axis}, 8);
  ASSERT_TRUE(one.ok() && many.ok());
  EXPECT_EQ(one->data<float>()[0], many->data<float>()[0]);
  const double want = ReferenceReduce(x, {0}, Kind::kSum)[0];
  EXPECT_NEAR(one->data<float>()[0], want, want * 1e-5);
  // Half accumulates in float: a sum far beyond half's integer precision is still right.
  Tensor ones = Tensor::FromVector<half>(std::vector<half>(3000, half(1.0f)));
  ExpectClose(RunOne("Sum", {ones, axis}), {3000}, 0, "half Sum of 3000 ones");
}

TEST(ReductionLargeTest, ArgMaxLarge) {
  Tensor x = RandomTensor<float>({1100, 1001}, -1, 1, 91);
  x.data<float>()[5 * 1001 + 700] = 5;  // row 5's maximum at 700
  x.data<float>()[900 * 1001 + 3] = 5;  // column 3's maximum at row 900
  Tensor rows = RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(1)});
  ASSERT_EQ(rows.NumElements(), 1100);
  EXPECT_EQ(rows.data<int64_t>()[5], 700);
  Tensor cols = RunOne("ArgMax", {x, Tensor::Scalar<int32_t>(0)});
  ASSERT_EQ(cols.NumElements(), 1001);
  EXPECT_EQ(cols.data<int64_t>()[3], 900);
  Tensor max = RunOne("Max", {x, Tensor::Scalar<int32_t>(1)});
  for (int64_t r = 0; r < 1100; ++r) {
    ASSERT_EQ(x.data<float>()[r * 1001 + rows.data<int64_t>()[r]], max.data<float>()[r]) << r;
  }
}

}  // namespace
}  // namespace shardflow
