// Tests for the CPU shape-manipulation kernels (kernels/cpu/array_ops.cc) and the identity kernels
// (kernels/cpu/basic_ops.cc): Reshape, ExpandDims, Squeeze, Shape, Transpose, Concat, Slice, Cast,
// Fill, ZerosLike, OnesLike, Identity and StopGradient. Values against hand-computed results or a
// naive reference, several element sizes (1, 2, 4, 8 bytes and strings), and errors both through
// RunOp (shape inference answers first) and straight from the kernel.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/framework/attr_value.h"
#include "core/framework/kernel_registry.h"
#include "core/framework/node_def_util.h"
#include "core/framework/op_def.h"
#include "core/framework/tensor.h"
#include "gtest/gtest.h"
#include "runtime/device.h"
#include "runtime/op_runner.h"
#include "tests/util/test_util.h"

namespace shardflow {
namespace {

using Attrs = std::map<std::string, AttrValue>;
using test::ExpectValues;

// ---- helpers --------------------------------------------------------------------------------

Tensor RunOne(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  auto out = RunOp(op, inputs, attrs);
  EXPECT_TRUE(out.ok()) << op << ": " << out.status();
  if (!out.ok() || out->empty()) return Tensor();
  return (*out)[0];
}

// Runs the kernel without RunOp: no shape inference, so the kernel's own checks are reached.
// Type attrs not in `attrs` are taken from the inputs (list arguments take all but the inputs of
// later arguments), as RunOp does.
absl::StatusOr<Tensor> RunKernelDirect(const std::string& op, const std::vector<Tensor>& inputs,
                                       const Attrs& attrs = {}, int intra_threads = 1) {
  RunOpOptions options;
  options.infer_shapes = false;
  options.intra_op_threads = intra_threads;
  auto out = RunOp(op, inputs, attrs, options);
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// Expects an InvalidArgument error whose message contains `needle`.
template <typename T>
void ExpectInvalid(const absl::StatusOr<T>& out, const std::string& needle) {
  ASSERT_FALSE(out.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  EXPECT_NE(out.status().message().find(needle), std::string::npos) << out.status();
}

Tensor Ints(const std::vector<int32_t>& v) { return Tensor::FromVector<int32_t>(v); }
Tensor Longs(const std::vector<int64_t>& v) { return Tensor::FromVector<int64_t>(v); }

// 0, 1, 2, ... in `shape`, stored as T.
template <typename T>
Tensor Iota(const TensorShape& shape) {
  std::vector<T> v(shape.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(static_cast<float>(i));
  return Tensor::FromVector<T>(v, shape);
}

Tensor Strings(const std::vector<std::string>& v, const TensorShape& shape) {
  return Tensor::FromVector<std::string>(v, shape);
}

std::vector<std::string> StringValues(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.NumElements());
}

// Row-major multi-index of flat position i in `shape`.
std::vector<int64_t> Unflatten(int64_t i, const TensorShape& shape) {
  std::vector<int64_t> idx(shape.rank());
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[d] = i % shape.dim(d);
    i /= shape.dim(d);
  }
  return idx;
}

int64_t Flatten(const std::vector<int64_t>& idx, const TensorShape& shape) {
  int64_t off = 0;
  for (int d = 0; d < shape.rank(); ++d) off = off * shape.dim(d) + idx[d];
  return off;
}

// For each flat output position, the flat input position Transpose reads: y[i...] =
// x[j...] with j[perm[d]] = i[d].
std::vector<int64_t> TransposeSources(const TensorShape& in, const std::vector<int32_t>& perm) {
  TensorShape out;
  for (int32_t p : perm) out.AddDim(in.dim(p));
  std::vector<int64_t> src(out.num_elements());
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    std::vector<int64_t> oi = Unflatten(i, out), ii(in.rank());
    for (size_t d = 0; d < perm.size(); ++d) ii[perm[d]] = oi[d];
    src[i] = Flatten(ii, in);
  }
  return src;
}

// Checks y == Transpose(x, perm) bytewise against the naive index map, for any fixed-size dtype.
void ExpectTransposed(const Tensor& x, const std::vector<int32_t>& perm, const Tensor& y) {
  TensorShape want_shape;
  for (int32_t p : perm) want_shape.AddDim(x.dim_size(p));
  ASSERT_EQ(y.shape(), want_shape) << "perm size " << perm.size();
  ASSERT_EQ(y.dtype(), x.dtype());
  const size_t elem = DataTypeSize(x.dtype());
  const std::vector<int64_t> src = TransposeSources(x.shape(), perm);
  const char* xb = static_cast<const char*>(x.raw_data());
  const char* yb = static_cast<const char*>(y.raw_data());
  int failures = 0;
  for (size_t i = 0; i < src.size() && failures < 5; ++i) {
    if (std::memcmp(yb + i * elem, xb + src[i] * elem, elem) != 0) {
      ADD_FAILURE() << "element " << i << " of " << y.DebugString() << " is not element " << src[i]
                    << " of the input";
      ++failures;
    }
  }
}

// ---- Reshape --------------------------------------------------------------------------------

TEST(ReshapeTest, KeepsValuesAndSharesTheBuffer) {
  Tensor x = Iota<float>({2, 3});
  Tensor y = RunOne("Reshape", {x, Ints({3, 2})});
  EXPECT_EQ(y.shape(), TensorShape({3, 2}));
  ExpectValues<float>(y, {0, 1, 2, 3, 4, 5});
  EXPECT_TRUE(y.SharesBufferWith(x));
}

TEST(ReshapeTest, InfersMinusOne) {
  Tensor x = Iota<int32_t>({2, 3, 4});
  EXPECT_EQ(RunOne("Reshape", {x, Ints({-1})}).shape(), TensorShape({24}));
  EXPECT_EQ(RunOne("Reshape", {x, Ints({4, -1})}).shape(), TensorShape({4, 6}));
  EXPECT_EQ(RunOne("Reshape", {x, Ints({-1, 1, 2})}).shape(), TensorShape({12, 1, 2}));
  Tensor y = RunOne("Reshape", {x, Ints({2, -1, 3})});
  EXPECT_EQ(y.shape(), TensorShape({2, 4, 3}));
  EXPECT_EQ(y.data<int32_t>()[23], 23);
  // The kernel infers -1 by itself too.
  auto direct = RunKernelDirect("Reshape", {x, Ints({-1, 8})});
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ(direct->shape(), TensorShape({3, 8}));
}

TEST(ReshapeTest, Int64ShapeAndScalars) {
  Tensor x = Iota<double>({6});
  Tensor y = RunOne("Reshape", {x, Longs({3, -1})});
  EXPECT_EQ(y.shape(), TensorShape({3, 2}));
  ExpectValues<double>(y, {0, 1, 2, 3, 4, 5});
  Tensor to_scalar = RunOne("Reshape", {Tensor::FromVector<float>({4.5f}), Ints({})});
  EXPECT_EQ(to_scalar.shape(), TensorShape({}));
  ExpectValues<float>(to_scalar, {4.5f});
  Tensor from_scalar = RunOne("Reshape", {Tensor::Scalar<int64_t>(9), Longs({1, 1})});
  EXPECT_EQ(from_scalar.shape(), TensorShape({1, 1}));
  ExpectValues<int64_t>(from_scalar, {9});
}

TEST(ReshapeTest, StringTensor) {
  Tensor x = Strings({"a", "bb", "ccc", "d"}, {4});
  Tensor y = RunOne("Reshape", {x, Ints({2, 2})});
  EXPECT_EQ(y.shape(), TensorShape({2, 2}));
  EXPECT_EQ(StringValues(y), (std::vector<std::string>{"a", "bb", "ccc", "d"}));
}

TEST(ReshapeTest, WrongElementCountIsAnError) {
  Tensor x = Iota<float>({2, 3});
  ExpectInvalid(RunOp("Reshape", {x, Ints({4, 2})}), "cannot reshape");
  ExpectInvalid(RunOp("Reshape", {x, Ints({-1, 4})}), "cannot reshape");
  ExpectInvalid(RunOp("Reshape", {x, Ints({-1, -1})}), "at most one -1");
  ExpectInvalid(RunKernelDirect("Reshape", {x, Ints({4, 2})}), "cannot reshape");
  ExpectInvalid(RunKernelDirect("Reshape", {x, Ints({-1, 4})}), "cannot reshape");
  ExpectInvalid(RunKernelDirect("Reshape", {x, Ints({-1, -1})}), "at most one -1");
  ExpectInvalid(RunKernelDirect("Reshape", {x, Ints({-2, 3})}), "negative dimension");
  ExpectInvalid(RunKernelDirect("Reshape", {x, Tensor::FromVector<int32_t>({6}, {1, 1})}),
                "must be a vector");
}

// ---- ExpandDims / Squeeze -------------------------------------------------------------------

TEST(ExpandDimsTest, PositiveAndNegativeAxes) {
  Tensor x = Iota<float>({2, 3});
  EXPECT_EQ(RunOne("ExpandDims", {x, Tensor::Scalar<int32_t>(0)}).shape(), TensorShape({1, 2, 3}));
  EXPECT_EQ(RunOne("ExpandDims", {x, Tensor::Scalar<int32_t>(1)}).shape(), TensorShape({2, 1, 3}));
  EXPECT_EQ(RunOne("ExpandDims", {x, Tensor::Scalar<int32_t>(2)}).shape(), TensorShape({2, 3, 1}));
  EXPECT_EQ(RunOne("ExpandDims", {x, Tensor::Scalar<int32_t>(-1)}).shape(), TensorShape({2, 3, 1}));
  EXPECT_EQ(RunOne("ExpandDims", {x, Tensor::Scalar<int32_t>(-3)}).shape(), TensorShape({1, 2, 3}));
  Tensor y = RunOne("ExpandDims", {x, Longs({-2})});  // a one-element vector, int64
  EXPECT_EQ(y.shape(), TensorShape({2, 1, 3}));
  ExpectValues<float>(y, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(RunOne("ExpandDims", {Tensor::Scalar<float>(1), Tensor::Scalar<int32_t>(-1)}).shape(),
            TensorShape({1}));
}

TEST(ExpandDimsTest, AxisOutOfRangeIsAnError) {
  Tensor x = Iota<float>({2, 3});
  ExpectInvalid(RunOp("ExpandDims", {x, Tensor::Scalar<int32_t>(3)}), "out of range");
  ExpectInvalid(RunOp("ExpandDims", {x, Tensor::Scalar<int32_t>(-4)}), "out of range");
  ExpectInvalid(RunKernelDirect("ExpandDims", {x, Tensor::Scalar<int32_t>(3)}), "out of range");
  ExpectInvalid(RunKernelDirect("ExpandDims", {x, Ints({0, 1})}), "one value");
}

TEST(SqueezeTest, AllSizeOneDimensions) {
  Tensor x = Iota<int64_t>({1, 2, 1, 3, 1});
  Tensor y = RunOne("Squeeze", {x});
  EXPECT_EQ(y.shape(), TensorShape({2, 3}));
  ExpectValues<int64_t>(y, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(RunOne("Squeeze", {Iota<float>({1, 1})}).shape(), TensorShape({}));
  EXPECT_EQ(RunOne("Squeeze", {Iota<float>({2, 3})}).shape(), TensorShape({2, 3}));
}

TEST(SqueezeTest, ListedDimensions) {
  Tensor x = Iota<float>({1, 2, 1, 3, 1});
  Attrs dims = {{"squeeze_dims", MakeAttr(std::vector<int64_t>{0, -1})}};
  Tensor y = RunOne("Squeeze", {x}, dims);
  EXPECT_EQ(y.shape(), TensorShape({2, 1, 3}));
  ExpectValues<float>(y, {0, 1, 2, 3, 4, 5});
  auto direct =
      RunKernelDirect("Squeeze", {x}, {{"squeeze_dims", MakeAttr(std::vector<int64_t>{2})}});
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ(direct->shape(), TensorShape({1, 2, 3, 1}));
}

TEST(SqueezeTest, DimensionOfSizeOtherThanOneIsAnError) {
  Tensor x = Iota<float>({1, 2, 1});
  Attrs dims = {{"squeeze_dims", MakeAttr(std::vector<int64_t>{1})}};
  ExpectInvalid(RunOp("Squeeze", {x}, dims), "cannot squeeze dimension 1 of size 2");
  ExpectInvalid(RunKernelDirect("Squeeze", {x}, dims), "cannot squeeze dimension 1 of size 2");
  Attrs out_of_range = {{"squeeze_dims", MakeAttr(std::vector<int64_t>{3})}};
  ExpectInvalid(RunOp("Squeeze", {x}, out_of_range), "out of range");
  ExpectInvalid(RunKernelDirect("Squeeze", {x}, out_of_range), "out of range");
}

// ---- Shape ----------------------------------------------------------------------------------

TEST(ShapeTest, Int32AndInt64) {
  Tensor x(DT_FLOAT, TensorShape({2, 3, 4}));
  Tensor s32 = RunOne("Shape", {x});
  ExpectValues<int32_t>(s32, {2, 3, 4});
  Tensor s64 = RunOne("Shape", {x}, {{"out_type", MakeAttr(DT_INT64)}});
  ExpectValues<int64_t>(s64, {2, 3, 4});
  Tensor scalar = RunOne("Shape", {Tensor::Scalar<int32_t>(1)});
  EXPECT_EQ(scalar.shape(), TensorShape({0}));
  ExpectValues<int32_t>(RunOne("Shape", {Tensor(DT_STRING, TensorShape({0, 5}))}), {0, 5});
}

// ---- Transpose ------------------------------------------------------------------------------

TEST(TransposeTest, TwoD) {
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = RunOne("Transpose", {x, Ints({1, 0})});
  EXPECT_EQ(y.shape(), TensorShape({3, 2}));
  ExpectValues<float>(y, {1, 4, 2, 5, 3, 6});
  ExpectValues<float>(RunOne("Transpose", {x, Ints({0, 1})}), {1, 2, 3, 4, 5, 6});
  ExpectValues<float>(RunOne("Transpose", {x, Longs({1, 0})}), {1, 4, 2, 5, 3, 6});
}

TEST(TransposeTest, ThreeDPermutationsMatchNaiveIndexing) {
  Tensor x = Iota<int32_t>({2, 3, 4});
  Tensor y = RunOne("Transpose", {x, Ints({2, 0, 1})});
  ASSERT_EQ(y.shape(), TensorShape({4, 2, 3}));
  // y[i,j,k] = x[j,k,i] = 12j + 4k + i.
  std::vector<int32_t> want;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) want.push_back(12 * j + 4 * k + i);
    }
  }
  ExpectValues<int32_t>(y, want);
  const std::vector<std::vector<int32_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (const auto& perm : perms) {
    ExpectTransposed(x, perm, RunOne("Transpose", {x, Ints(perm)}));
  }
}

TEST(TransposeTest, EveryElementSize) {
  // 1, 2, 4 and 8-byte elements take different copy loops; 4-D with a size-1 dimension.
  const std::vector<int32_t> perm = {3, 1, 0, 2};
  const TensorShape shape({3, 1, 5, 7});
  for (Tensor x : {Iota<uint8_t>(shape), Iota<bfloat16>(shape), Iota<half>(shape),
                   Iota<float>(shape), Iota<int64_t>(shape), Iota<double>(shape)}) {
    SCOPED_TRACE(DataTypeString(x.dtype()));
    ExpectTransposed(x, perm, RunOne("Transpose", {x, Ints(perm)}));
  }
}

TEST(TransposeTest, OneDAndScalar) {
  Tensor v = Tensor::FromVector<float>({1, 2, 3});
  Tensor y = RunOne("Transpose", {v, Ints({0})});
  EXPECT_EQ(y.shape(), TensorShape({3}));
  ExpectValues<float>(y, {1, 2, 3});
  Tensor s = RunOne("Transpose", {Tensor::Scalar<float>(7), Ints({})});
  EXPECT_EQ(s.shape(), TensorShape({}));
  ExpectValues<float>(s, {7});
  Tensor empty = RunOne("Transpose", {Tensor(DT_FLOAT, TensorShape({0, 4})), Ints({1, 0})});
  EXPECT_EQ(empty.shape(), TensorShape({4, 0}));
}

TEST(TransposeTest, BadPermIsAnError) {
  Tensor x = Iota<float>({2, 3, 4});
  ExpectInvalid(RunOp("Transpose", {x, Ints({0, 0, 1})}), "permutation");
  ExpectInvalid(RunOp("Transpose", {x, Ints({0, 1, 3})}), "permutation");
  ExpectInvalid(RunOp("Transpose", {x, Ints({0, -1, 1})}), "permutation");
  ExpectInvalid(RunOp("Transpose", {x, Ints({1, 0})}), "perm has 2 entries");
  ExpectInvalid(RunKernelDirect("Transpose", {x, Ints({0, 0, 1})}), "permutation");
  ExpectInvalid(RunKernelDirect("Transpose", {x, Ints({2, 1, 3})}), "permutation");
  ExpectInvalid(RunKernelDirect("Transpose", {x, Ints({1, 0})}), "perm has 2 entries");
}

TEST(TransposeTest, LargeMatrixMatchesNaiveLoop) {
  const int64_t rows = 512, cols = 1024;
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(rows * cols);
  for (float& e : v) e = dist(gen);
  Tensor x = Tensor::FromVector<float>(v, {rows, cols});
  std::vector<float> want(rows * cols);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) want[j * rows + i] = v[i * cols + j];
  }
  auto check = [&](const Tensor& y, const std::string& what) {
    ASSERT_EQ(y.shape(), TensorShape({cols, rows})) << what;
    int64_t mismatches = 0;
    for (int64_t i = 0; i < rows * cols; ++i) mismatches += y.data<float>()[i] != want[i];
    EXPECT_EQ(mismatches, 0) << what;
  };
  check(RunOne("Transpose", {x, Ints({1, 0})}), "RunOp");
  for (int threads : {1, 4}) {
    auto y = RunKernelDirect("Transpose", {x, Ints({1, 0})}, {}, threads);
    ASSERT_TRUE(y.ok()) << y.status();
    check(*y, "threads=" + std::to_string(threads));
  }
}

TEST(TransposeTest, StringTensor) {
  Tensor x = Strings({"a", "b", "c", "d", "e", "f"}, {2, 3});
  Tensor y = RunOne("Transpose", {x, Ints({1, 0})});
  EXPECT_EQ(y.shape(), TensorShape({3, 2}));
  EXPECT_EQ(StringValues(y), (std::vector<std::string>{"a", "d", "b", "e", "c", "f"}));
}

// ---- Concat ---------------------------------------------------------------------------------

TEST(ConcatTest, AxisZeroOneAndMinusOne) {
  Tensor a = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::FromVector<float>({5, 6}, {1, 2});
  Tensor rows = RunOne("Concat", {a, b, Tensor::Scalar<int32_t>(0)});
  EXPECT_EQ(rows.shape(), TensorShape({3, 2}));
  ExpectValues<float>(rows, {1, 2, 3, 4, 5, 6});
  Tensor c = Tensor::FromVector<float>({7, 8}, {2, 1});
  Tensor cols = RunOne("Concat", {a, c, Tensor::Scalar<int32_t>(1)});
  EXPECT_EQ(cols.shape(), TensorShape({2, 3}));
  ExpectValues<float>(cols, {1, 2, 7, 3, 4, 8});
  Tensor last = RunOne("Concat", {a, c, Tensor::Scalar<int64_t>(-1)});
  EXPECT_EQ(last.shape(), TensorShape({2, 3}));
  ExpectValues<float>(last, {1, 2, 7, 3, 4, 8});
  Tensor one = RunOne("Concat", {a, Tensor::Scalar<int32_t>(0)});
  ExpectValues<float>(one, {1, 2, 3, 4});
}

TEST(ConcatTest, ThreeInputsThreeD) {
  // [2,1,2] ++ [2,2,2] ++ [2,0,2] ++ along axis 1 -> [2,3,2].
  Tensor a = Tensor::FromVector<int64_t>({1, 2, 3, 4}, {2, 1, 2});
  Tensor b = Tensor::FromVector<int64_t>({10, 11, 12, 13, 14, 15, 16, 17}, {2, 2, 2});
  Tensor empty(DT_INT64, TensorShape({2, 0, 2}));
  Tensor y = RunOne("Concat", {a, b, empty, Tensor::Scalar<int32_t>(1)});
  EXPECT_EQ(y.shape(), TensorShape({2, 3, 2}));
  ExpectValues<int64_t>(y, {1, 2, 10, 11, 12, 13, 3, 4, 14, 15, 16, 17});
  Tensor z = RunOne("Concat", {a, a, a, Tensor::Scalar<int32_t>(-1)});
  EXPECT_EQ(z.shape(), TensorShape({2, 1, 6}));
  ExpectValues<int64_t>(z, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

TEST(ConcatTest, MismatchedShapesAreAnError) {
  Tensor a = Iota<float>({2, 3});
  Tensor b = Iota<float>({2, 2});
  ExpectInvalid(RunOp("Concat", {a, b, Tensor::Scalar<int32_t>(0)}), "may differ");
  ExpectInvalid(RunKernelDirect("Concat", {a, b, Tensor::Scalar<int32_t>(0)}), "may differ");
  ExpectInvalid(RunOp("Concat", {a, Iota<float>({6}), Tensor::Scalar<int32_t>(0)}), "rank");
  ExpectInvalid(RunKernelDirect("Concat", {a, Iota<float>({6}), Tensor::Scalar<int32_t>(0)}),
                "rank");
  ExpectInvalid(RunOp("Concat", {a, a, Tensor::Scalar<int32_t>(2)}), "out of range");
  ExpectInvalid(RunKernelDirect("Concat", {a, a, Tensor::Scalar<int32_t>(-3)}), "out of range");
  ExpectInvalid(RunOp("Concat", {Tensor::Scalar<float>(1), Tensor::Scalar<float>(2),
                                 Tensor::Scalar<int32_t>(0)}),
                "scalars");
}

TEST(ConcatTest, Strings) {
  Tensor a = Strings({"a", "b"}, {2, 1});
  Tensor b = Strings({"cc", "dd", "ee", "ff"}, {2, 2});
  Tensor y = RunOne("Concat", {a, b, Tensor::Scalar<int32_t>(1)});
  EXPECT_EQ(y.shape(), TensorShape({2, 3}));
  EXPECT_EQ(StringValues(y), (std::vector<std::string>{"a", "cc", "dd", "b", "ee", "ff"}));
}

// ---- Slice ----------------------------------------------------------------------------------

TEST(SliceTest, BeginAndSize) {
  Tensor x = Iota<float>({3, 4});
  Tensor y = RunOne("Slice", {x, Ints({1, 1}), Ints({2, 2})});
  EXPECT_EQ(y.shape(), TensorShape({2, 2}));
  ExpectValues<float>(y, {5, 6, 9, 10});
  Tensor to_end = RunOne("Slice", {x, Ints({1, 2}), Ints({-1, -1})});
  EXPECT_EQ(to_end.shape(), TensorShape({2, 2}));
  ExpectValues<float>(to_end, {6, 7, 10, 11});
  Tensor row = RunOne("Slice", {x, Longs({2, 0}), Longs({1, -1})});
  EXPECT_EQ(row.shape(), TensorShape({1, 4}));
  ExpectValues<float>(row, {8, 9, 10, 11});
  Tensor none = RunOne("Slice", {x, Ints({3, 0}), Ints({0, 4})});
  EXPECT_EQ(none.shape(), TensorShape({0, 4}));
  Tensor scalar = RunOne("Slice", {Tensor::Scalar<int32_t>(5), Ints({}), Ints({})});
  ExpectValues<int32_t>(scalar, {5});
}

TEST(SliceTest, ThreeD) {
  Tensor x = Iota<int32_t>({3, 4, 5});
  Tensor y = RunOne("Slice", {x, Ints({1, 2, 1}), Ints({2, -1, 3})});
  ASSERT_EQ(y.shape(), TensorShape({2, 2, 3}));
  std::vector<int32_t> want;
  for (int i = 1; i < 3; ++i) {
    for (int j = 2; j < 4; ++j) {
      for (int k = 1; k < 4; ++k) want.push_back(20 * i + 5 * j + k);
    }
  }
  ExpectValues<int32_t>(y, want);
  Tensor s = Strings({"a", "b", "c", "d", "e", "f"}, {2, 3});
  Tensor t = RunOne("Slice", {s, Ints({0, 1}), Ints({2, 2})});
  EXPECT_EQ(StringValues(t), (std::vector<std::string>{"b", "c", "e", "f"}));
}

TEST(SliceTest, OutOfBoundsIsAnError) {
  Tensor x = Iota<float>({3, 4});
  ExpectInvalid(RunOp("Slice", {x, Ints({2, 0}), Ints({2, 4})}), "out of bounds");
  ExpectInvalid(RunOp("Slice", {x, Ints({0, 0}), Ints({3, 5})}), "out of bounds");
  ExpectInvalid(RunOp("Slice", {x, Ints({-1, 0}), Ints({1, 1})}), "outside");
  ExpectInvalid(RunKernelDirect("Slice", {x, Ints({2, 0}), Ints({2, 4})}), "out of bounds");
  ExpectInvalid(RunKernelDirect("Slice", {x, Ints({-1, 0}), Ints({1, 1})}), "out of bounds");
  ExpectInvalid(RunKernelDirect("Slice", {x, Ints({0, 5}), Ints({1, -1})}), "out of bounds");
  // begin == size with size -1 is an empty slice, not an error.
  auto empty = RunKernelDirect("Slice", {x, Ints({0, 4}), Ints({1, -1})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), TensorShape({1, 0}));
  ExpectInvalid(RunKernelDirect("Slice", {x, Ints({0}), Ints({1})}), "must have 2 entries");
}

// Regression: begin near INT64_MAX wrapped begin + size around, so the check passed and the
// kernel copied the bytes before the tensor (a fetched heap leak, and a crash for larger
// sizes), from a graph or a feed that any client may send.
TEST(SliceTest, BeginAndSizeThatOverflowAreErrorsNotReads) {
  Tensor x = Iota<float>({3});
  const int64_t max = std::numeric_limits<int64_t>::max();
  for (const auto& [begin, size] : std::vector<std::pair<int64_t, int64_t>>{
           {max - 1, 4}, {max - 16383, 16386}, {1, max}, {max, -1}, {2, max - 1}}) {
    ExpectInvalid(RunKernelDirect("Slice", {x, Longs({begin}), Longs({size})}), "out of bounds");
    auto inferred = RunOp("Slice", {x, Longs({begin}), Longs({size})});
    EXPECT_FALSE(inferred.ok()) << begin << " " << size;
  }
}

// ---- number attributes ----------------------------------------------------------------------

// Regression: Concat's N of 2^40 from a hand-made graph was expanded into a list of 2^40 dtypes
// before anything compared it with the node's inputs (a 155-byte CreateSession grew the master
// by 4 GiB in 9 s).
TEST(ArgTypesTest, HugeNumberAttributesFailBeforeAnythingIsExpanded) {
  for (const std::string op : {"Concat", "AddN"}) {
    const OpDef* op_def = OpRegistry::Global()->LookUp(op);
    ASSERT_NE(op_def, nullptr) << op;
    NodeDef def;
    def.set_name("n");
    def.set_op(op);
    def.add_input("a");
    def.add_input("b");
    (*def.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
    for (int64_t n : {int64_t{1} << 40, int64_t{-3}}) {
      (*def.mutable_attr())["N"] = MakeAttr(n);
      DataTypeVector in_types, out_types;
      absl::Status s = ComputeArgTypes(*op_def, def, &in_types, &out_types);
      ASSERT_FALSE(s.ok()) << op << " " << n;
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_NE(s.message().find(n > 0 ? "more inputs" : "negative"), std::string::npos) << s;
    }
  }
}

// ---- Cast -----------------------------------------------------------------------------------

Attrs To(DataType dt) { return {{"DstT", MakeAttr(dt)}}; }

TEST(CastTest, FloatToInt32Truncates) {
  Tensor x = Tensor::FromVector<float>({1.7f, -1.7f, 2.5f, -0.2f, 0, 100.99f});
  Tensor y = RunOne("Cast", {x}, To(DT_INT32));
  EXPECT_EQ(y.shape(), x.shape());
  ExpectValues<int32_t>(y, {1, -1, 2, 0, 0, 100});
  ExpectValues<int64_t>(RunOne("Cast", {Tensor::FromVector<double>({-3.9, 3.9})}, To(DT_INT64)),
                        {-3, 3});
}

TEST(CastTest, IntToBoolAndBack) {
  Tensor x = Tensor::FromVector<int32_t>({0, 3, -2, 1});
  Tensor b = RunOne("Cast", {x}, To(DT_BOOL));
  ExpectValues<bool>(b, {false, true, true, true});
  ExpectValues<float>(RunOne("Cast", {b}, To(DT_FLOAT)), {0, 1, 1, 1});
  ExpectValues<int64_t>(RunOne("Cast", {b}, To(DT_INT64)), {0, 1, 1, 1});
  ExpectValues<bool>(RunOne("Cast", {Tensor::FromVector<float>({0.0f, 0.25f})}, To(DT_BOOL)),
                     {false, true});
}

TEST(CastTest, FloatToBfloat16AndBack) {
  // Exactly representable values survive; others round to 8 significant bits.
  Tensor x = Tensor::FromVector<float>({1, -2, 0.5f, 3.140625f, 1.0f / 3, 1000.7f});
  Tensor b = RunOne("Cast", {x}, To(DT_BFLOAT16));
  ASSERT_EQ(b.dtype(), DT_BFLOAT16);
  Tensor y = RunOne("Cast", {b}, To(DT_FLOAT));
  ASSERT_EQ(y.dtype(), DT_FLOAT);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], x.data<float>()[i]) << i;
  for (int i = 4; i < 6; ++i) {
    EXPECT_NEAR(y.data<float>()[i], x.data<float>()[i], 4e-3 * std::abs(x.data<float>()[i])) << i;
  }
  Tensor h = RunOne("Cast", {Tensor::FromVector<int32_t>({-7, 250})}, To(DT_HALF));
  ExpectValues<int32_t>(RunOne("Cast", {h}, To(DT_INT32)), {-7, 250});
}

TEST(CastTest, SameTypeCopies) {
  Tensor x = Tensor::FromVector<float>({1.5f, -2});
  Tensor y = RunOne("Cast", {x}, To(DT_FLOAT));
  ExpectValues<float>(y, {1.5f, -2});
  EXPECT_FALSE(y.SharesBufferWith(x));
  Tensor s = RunOne("Cast", {Strings({"x", "y"}, {2})}, To(DT_STRING));
  EXPECT_EQ(StringValues(s), (std::vector<std::string>{"x", "y"}));
}

TEST(CastTest, StringToNumberIsAnError) {
  auto out = RunOp("Cast", {Strings({"1"}, {1})}, To(DT_FLOAT));
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("cannot cast"), std::string::npos) << out.status();
}

// ---- Fill, ZerosLike, OnesLike --------------------------------------------------------------

TEST(FillTest, FillsEveryElement) {
  Tensor y = RunOne("Fill", {Ints({2, 3}), Tensor::Scalar<float>(7.5f)});
  EXPECT_EQ(y.shape(), TensorShape({2, 3}));
  ExpectValues<float>(y, std::vector<float>(6, 7.5f));
  Tensor l = RunOne("Fill", {Longs({4}), Tensor::Scalar<int64_t>(-3)});
  ExpectValues<int64_t>(l, {-3, -3, -3, -3});
  Tensor s = RunOne("Fill", {Ints({2}), Tensor::Scalar<std::string>("hi")});
  EXPECT_EQ(StringValues(s), (std::vector<std::string>{"hi", "hi"}));
  Tensor scalar = RunOne("Fill", {Ints({}), Tensor::Scalar<bfloat16>(bfloat16(2))});
  EXPECT_EQ(scalar.shape(), TensorShape({}));
  EXPECT_EQ(static_cast<float>(scalar.data<bfloat16>()[0]), 2.0f);
  EXPECT_EQ(RunOne("Fill", {Ints({0, 3}), Tensor::Scalar<float>(1)}).shape(), TensorShape({0, 3}));
}

TEST(FillTest, BadArgumentsAreErrors) {
  ExpectInvalid(RunKernelDirect("Fill", {Ints({2, -1}), Tensor::Scalar<float>(1)}), "negative");
  ExpectInvalid(RunOp("Fill", {Ints({2}), Tensor::FromVector<float>({1, 2})}), "scalar");
  ExpectInvalid(RunKernelDirect("Fill", {Ints({2}), Tensor::FromVector<float>({1, 2})}), "scalar");
}

TEST(ZerosAndOnesLikeTest, FloatInt64AndBfloat16) {
  Tensor f = Tensor::FromVector<float>({1.5f, -2, 3}, {3, 1});
  Tensor zf = RunOne("ZerosLike", {f});
  EXPECT_EQ(zf.shape(), TensorShape({3, 1}));
  ExpectValues<float>(zf, {0, 0, 0});
  ExpectValues<float>(RunOne("OnesLike", {f}), {1, 1, 1});
  Tensor l = Longs({5, -6});
  ExpectValues<int64_t>(RunOne("ZerosLike", {l}), {0, 0});
  ExpectValues<int64_t>(RunOne("OnesLike", {l}), {1, 1});
  Tensor b =
      Tensor::FromVector<bfloat16>({bfloat16(3), bfloat16(-1), bfloat16(8), bfloat16(0)}, {2, 2});
  for (const auto& [op, value] : std::map<std::string, float>{{"ZerosLike", 0}, {"OnesLike", 1}}) {
    Tensor y = RunOne(op, {b});
    ASSERT_EQ(y.dtype(), DT_BFLOAT16) << op;
    EXPECT_EQ(y.shape(), TensorShape({2, 2})) << op;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(static_cast<float>(y.data<bfloat16>()[i]), value) << op;
  }
  ExpectValues<bool>(RunOne("OnesLike", {Tensor::FromVector<bool>({false, true})}), {true, true});
  EXPECT_EQ(RunOne("ZerosLike", {Tensor(DT_FLOAT, TensorShape({0}))}).NumElements(), 0);
}

TEST(ZerosAndOnesLikeTest, StringIsAnError) {
  ExpectInvalid(RunOp("ZerosLike", {Strings({"a"}, {1})}), "numeric");
  ExpectInvalid(RunOp("OnesLike", {Strings({"a"}, {1})}), "numeric");
}

// ---- Identity, StopGradient -----------------------------------------------------------------

TEST(IdentityTest, ReturnsTheInputBuffer) {
  for (const char* op : {"Identity", "StopGradient"}) {
    Tensor x = Tensor::FromVector<float>({1, 2, 3}, {3, 1});
    Tensor y = RunOne(op, {x});
    EXPECT_EQ(y.shape(), x.shape()) << op;
    ExpectValues<float>(y, {1, 2, 3});
    EXPECT_TRUE(y.SharesBufferWith(x)) << op;
    Tensor s = RunOne(op, {Strings({"p", "q"}, {2})});
    EXPECT_EQ(StringValues(s), (std::vector<std::string>{"p", "q"})) << op;
    ExpectValues<int64_t>(RunOne(op, {Tensor::Scalar<int64_t>(-4)}), {-4});
  }
}

}  // namespace
}  // namespace shardflow

namespace shardflow {
namespace {

TEST(WhereTest, CoordinatesOfTrueElementsInRowMajorOrder) {
  Tensor x(DT_BOOL, TensorShape({2, 2, 3}));
  const std::vector<int> on = {1, 5, 6, 11};
  for (int i = 0; i < 12; ++i) x.data<bool>()[i] = std::count(on.begin(), on.end(), i) > 0;
  auto out = RunOp("Where", {x}, {{"T", MakeAttr(DT_BOOL)}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& idx = (*out)[0];
  ASSERT_EQ(idx.shape(), TensorShape({4, 3}));
  EXPECT_EQ(std::vector<int64_t>(idx.data<int64_t>(), idx.data<int64_t>() + 12),
            (std::vector<int64_t>{0, 0, 1, 0, 1, 2, 1, 0, 0, 1, 1, 2}));
  // Nothing true: [0, rank]; a float input counts non-zeros.
  auto none = RunOp("Where", {Tensor::FromVector<float>({0, 0, 0})}, {{"T", MakeAttr(DT_FLOAT)}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].shape(), TensorShape({0, 1}));
  auto some =
      RunOp("Where", {Tensor::FromVector<float>({0, -2.5f, 0, 1})}, {{"T", MakeAttr(DT_FLOAT)}});
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(std::vector<int64_t>((*some)[0].data<int64_t>(), (*some)[0].data<int64_t>() + 2),
            (std::vector<int64_t>{1, 3}));
}

}  // namespace
}  // namespace shardflow
