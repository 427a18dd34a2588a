// Sizes that come from untrusted bytes (issue 10, finding 1 and 2): element counts that
// overflow int64, byte counts that overflow, allocations past the allocator's limit, and
// protos that announce more than they carry are errors, never small or huge allocations.
#include <cstdint>
#include <vector>

#include "absl/strings/match.h"
#include "core/framework/allocator.h"
#include "core/framework/tensor.h"
#include "core/platform/checked_math.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace shardflow {
namespace {

TEST(CheckedMathTest, OverflowAndNegativesAreRefused) {
  int64_t out = 0;
  EXPECT_TRUE(CheckedMul(int64_t{1} << 31, int64_t{1} << 31, &out));
  EXPECT_EQ(out, int64_t{1} << 62);
  EXPECT_FALSE(CheckedMul(int64_t{1} << 62, 4, &out));
  EXPECT_FALSE(CheckedMul(-1, 4, &out));
  EXPECT_TRUE(CheckedMul(0, INT64_MAX, &out));
  EXPECT_EQ(out, 0);
  EXPECT_FALSE(CheckedAdd(INT64_MAX, 1, &out));
  EXPECT_TRUE(CheckedAdd(INT64_MAX - 1, 1, &out));
  EXPECT_TRUE(RangeInside(0, 10, 10));
  EXPECT_TRUE(RangeInside(10, 0, 10));
  EXPECT_FALSE(RangeInside(5, 6, 10));
  EXPECT_FALSE(RangeInside(INT64_MAX, INT64_MAX, 10));
  EXPECT_FALSE(RangeInside(-1, 1, 10));
}

TEST(TensorShapeLimitsTest, ProtosWhoseElementCountOverflowsAreRefused) {
  TensorShapeProto proto;
  proto.add_dim(int64_t{1} << 62);
  proto.add_dim(4);
  auto shape = TensorShape::FromProto(proto);
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(shape.status().message(), "64 bits")) << shape.status();
  // Unknown dimensions are left out of the product; the known ones still may not overflow.
  TensorShapeProto partial;
  partial.add_dim(-1);
  partial.add_dim(int64_t{1} << 62);
  partial.add_dim(2);
  EXPECT_FALSE(TensorShape::FromProto(partial).ok());
  TensorShapeProto big_but_fine;
  big_but_fine.add_dim(int64_t{1} << 31);
  big_but_fine.add_dim(int64_t{1} << 31);
  EXPECT_TRUE(TensorShape::FromProto(big_but_fine).ok());
  TensorShapeProto deep;
  for (int i = 0; i <= TensorShape::kMaxRank; ++i) deep.add_dim(1);
  EXPECT_FALSE(TensorShape::FromProto(deep).ok());
}

TEST(TensorShapeLimitsTest, ShapesBuiltInCodeReportOverflow) {
  TensorShape shape({int64_t{1} << 62, 4});
  EXPECT_EQ(shape.num_elements(), -1);
  EXPECT_FALSE(shape.CheckedNumElements().ok());
  EXPECT_EQ(*TensorShape({3, 0, int64_t{1} << 62}).CheckedNumElements(), 0);
  EXPECT_EQ(*TensorShape({6, 7}).CheckedNumElements(), 42);
}

TEST(TensorLimitsTest, CreateRefusesOverflowingAndHugeTensors) {
  auto overflow = Tensor::Create(CpuAllocator(), DT_FLOAT, TensorShape({int64_t{1} << 62, 4}));
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kInvalidArgument) << overflow.status();
  // The element count fits, the byte count does not.
  auto bytes = Tensor::Create(CpuAllocator(), DT_DOUBLE, TensorShape({int64_t{1} << 61}));
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kResourceExhausted) << bytes.status();
  // 4 TiB: past the allocator's limit (a fraction of this machine's memory).
  auto huge = Tensor::Create(CpuAllocator(), DT_FLOAT, TensorShape({int64_t{1} << 40}));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_TRUE(absl::StrContains(huge.status().message(), "limit")) << huge.status();
  // Strings count against the limit too (their std::string objects).
  auto strings = Tensor::Create(CpuAllocator(), DT_STRING, TensorShape({int64_t{1} << 40}));
  ASSERT_FALSE(strings.ok());
  EXPECT_EQ(strings.status().code(), absl::StatusCode::kResourceExhausted) << strings.status();
  // The constructor gives an uninitialized tensor instead of crashing.
  EXPECT_FALSE(Tensor(DT_FLOAT, TensorShape({int64_t{1} << 62, 4})).IsInitialized());
}

TEST(TensorLimitsTest, TheMemoryLimitCanBeSetAndRestored) {
  const int64_t before = CpuMemoryLimit();
  SetCpuMemoryLimit(CpuAllocator()->GetStats().bytes_in_use + (1 << 20));
  auto too_big = Tensor::Create(CpuAllocator(), DT_UINT8, TensorShape({4 << 20}));
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  auto fits = Tensor::Create(CpuAllocator(), DT_UINT8, TensorShape({1 << 10}));
  EXPECT_TRUE(fits.ok()) << fits.status();
  SetCpuMemoryLimit(0);
  EXPECT_EQ(CpuMemoryLimit(), before);
  EXPECT_TRUE(Tensor::Create(CpuAllocator(), DT_UINT8, TensorShape({4 << 20})).ok());
}

// Regression (2026-11-29): the cache of freed blocks stopped at 2 GiB, so every step of a model
// whose activations pass it (ResNet-50 training at batch 32) page-faulted the rest afresh. Blocks
// are never touched here, so the gigabytes below are address space, not memory.
TEST(AllocatorTest, FreedBlocksStayCachedPastTwoGibUntilTheLimitNeedsThem) {
  Allocator* a = CpuAllocator();
  const int64_t before = CpuMemoryLimit();
  const size_t gib = size_t{1} << 30;
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) {
    blocks.push_back(a->AllocateRaw(Allocator::kAlignment, gib));
    ASSERT_NE(blocks.back(), nullptr);
  }
  const int64_t cached_before = a->GetStats().bytes_cached;
  for (void* p : blocks) a->DeallocateRaw(p, gib);
  EXPECT_GE(a->GetStats().bytes_cached, cached_before + 3 * static_cast<int64_t>(gib));
  // The same size again comes from the cache.
  void* again = a->AllocateRaw(Allocator::kAlignment, gib);
  ASSERT_NE(again, nullptr);
  EXPECT_GE(a->GetStats().bytes_cached, cached_before + 2 * static_cast<int64_t>(gib));
  // A fresh block that would take in-use plus cached bytes past the limit first gives cached
  // blocks back.
  SetCpuMemoryLimit(a->GetStats().bytes_in_use + static_cast<int64_t>(gib));
  void* other = a->AllocateRaw(Allocator::kAlignment, gib / 2 + 4096);
  ASSERT_NE(other, nullptr);
  const AllocatorStats s = a->GetStats();
  EXPECT_LE(s.bytes_in_use + s.bytes_cached, s.bytes_limit);
  a->DeallocateRaw(other, gib / 2 + 4096);
  a->DeallocateRaw(again, gib);
  SetCpuMemoryLimit(0);
  EXPECT_EQ(CpuMemoryLimit(), before);
}

TEST(TensorLimitsTest, FromProtoChecksWhatTheProtoCarriesBeforeAllocating) {
  TensorProto strings;
  strings.set_dtype(DT_STRING);
  strings.mutable_shape()->add_dim(int64_t{1} << 40);
  auto s = Tensor::FromProto(strings);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), "has 0 values")) << s.status();

  TensorProto floats;
  floats.set_dtype(DT_FLOAT);
  floats.mutable_shape()->add_dim(int64_t{1} << 40);
  auto f = Tensor::FromProto(floats);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << f.status();

  TensorProto overflow = floats;
  overflow.mutable_shape()->add_dim(int64_t{1} << 30);
  EXPECT_EQ(Tensor::FromProto(overflow).status().code(), absl::StatusCode::kInvalidArgument);

  TensorProto bad_type;
  bad_type.set_dtype(static_cast<DataType>(999));
  EXPECT_EQ(Tensor::FromProto(bad_type).status().code(), absl::StatusCode::kInvalidArgument);

  // Regression (found by the tensor_proto fuzzer): a bool is 0 or 1; byte 93 read as bool is
  // undefined behaviour.
  TensorProto bools;
  bools.set_dtype(DT_BOOL);
  bools.mutable_shape()->add_dim(4);
  bools.set_content(std::string("\1\0\0\x5d", 4));
  auto b = Tensor::FromProto(bools);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << b.status();
  EXPECT_TRUE(absl::StrContains(b.status().message(), "byte 93 at element 3")) << b.status();
  bools.set_content(std::string("\1\0\0\1", 4));
  EXPECT_TRUE(Tensor::FromProto(bools).ok());
}

// A kernel that computes a shape from values (Fill's dims) gets an error, not a crash.
TEST(TensorLimitsTest, KernelsAskingForImpossibleShapesFailTheStep) {
  Scope s = Scope::NewRootScope();
  auto dims = ops::Placeholder(s.WithOpName("dims"), DT_INT64, TensorShape({2}));
  ops::Fill(s.WithOpName("fill"), dims, ops::Const(s, 1.0f));
  GraphDef def;
  ASSERT_TRUE(s.ToGraphDef(&def).ok());
  auto session = NewSession(SessionOptions());
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->Create(def).ok());
  std::vector<Tensor> out;
  for (auto [a, b] : std::vector<std::pair<int64_t, int64_t>>{
           {int64_t{1} << 62, 4}, {int64_t{1} << 40, 1}, {-5, 3}}) {
    absl::Status st =
        (*session)->Run({{"dims", Tensor::FromVector<int64_t>({a, b})}}, {"fill"}, {}, &out);
    EXPECT_FALSE(st.ok()) << a << "x" << b;
    EXPECT_NE(st.code(), absl::StatusCode::kInternal) << st;
  }
  ASSERT_TRUE(
      (*session)->Run({{"dims", Tensor::FromVector<int64_t>({2, 3})}}, {"fill"}, {}, &out).ok());
  EXPECT_EQ(out[0].NumElements(), 6);
}

}  // namespace
}  // namespace shardflow
