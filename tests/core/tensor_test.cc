#include "core/framework/tensor.h"

#include <cstdint>

#include "core/framework/allocator.h"
#include "core/framework/tensor_util.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

TEST(TensorTest, AllocationIsAlignedAndTyped) {
  for (DataType dt : AllDataTypes()) {
    Tensor t(dt, TensorShape({3, 5}));
    ASSERT_TRUE(t.IsInitialized()) << DataTypeString(dt);
    EXPECT_EQ(t.NumElements(), 15);
    EXPECT_EQ(t.TotalBytes(), 15u * DataTypeSize(dt));
    if (dt != DT_STRING) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u) << DataTypeString(dt);
    }
  }
}

TEST(TensorTest, CopiesShareTheBufferAndCountReferences) {
  Tensor a(DT_FLOAT, TensorShape({4}));
  EXPECT_TRUE(a.RefCountIsOne());
  {
    Tensor b = a;
    EXPECT_TRUE(b.SharesBufferWith(a));
    EXPECT_FALSE(a.RefCountIsOne());
    b.data<float>()[0] = 7;
  }
  EXPECT_TRUE(a.RefCountIsOne());
  EXPECT_EQ(a.data<float>()[0], 7);
  Tensor moved = std::move(a);
  EXPECT_FALSE(a.IsInitialized());
  EXPECT_TRUE(moved.RefCountIsOne());
  Tensor deep = moved.DeepCopy();
  EXPECT_FALSE(deep.SharesBufferWith(moved));
  EXPECT_EQ(deep.data<float>()[0], 7);
}

// The content version names a buffer's bytes: shared by copies and reshapes, distinct between
// buffers (also one allocated where a freed one was), replaced when someone is handed the
// buffer to write (Variable::mutable_value, forwarding an input as an output).
TEST(TensorTest, ContentVersionChangesWhenTheBufferIsWritten) {
  Tensor a(DT_FLOAT, TensorShape({2, 2}));
  const uint64_t v = a.content_version();
  EXPECT_NE(v, 0u);
  Tensor copy = a;
  EXPECT_EQ(copy.content_version(), v);
  EXPECT_EQ(a.Reshaped(TensorShape({4}))->content_version(), v);
  EXPECT_NE(a.DeepCopy().content_version(), v);
  a.MarkWritten();
  EXPECT_NE(a.content_version(), v);
  EXPECT_EQ(copy.content_version(), a.content_version());  // one buffer, one version
  EXPECT_EQ(Tensor().content_version(), 0u);
  uint64_t last = a.content_version();
  for (int i = 0; i < 3; ++i) {  // the allocator may hand out the same address again
    Tensor t(DT_FLOAT, TensorShape({2, 2}));
    EXPECT_GT(t.content_version(), last);
    last = t.content_version();
  }
}

TEST(TensorTest, CreateRejectsPartialShapesAndBadTypes) {
  auto partial = Tensor::Create(CpuAllocator(), DT_FLOAT, TensorShape({-1, 2}));
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("[?,2]"), std::string::npos);
  EXPECT_FALSE(Tensor::Create(CpuAllocator(), DT_INVALID, TensorShape({1})).ok());
}

TEST(TensorTest, ReshapedSharesBufferAndChecksCount) {
  Tensor t = Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  auto r = t.Reshaped(TensorShape({3, 2}));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->SharesBufferWith(t));
  EXPECT_FALSE(t.Reshaped(TensorShape({4})).ok());
}

TEST(TensorTest, ProtoRoundTripForEveryType) {
  for (DataType dt : AllDataTypes()) {
    Tensor t(dt, TensorShape({2, 2}));
    if (dt == DT_STRING) {
      for (int i = 0; i < 4; ++i) t.data<std::string>()[i] = std::string(i, 'x');
    } else {
      for (size_t i = 0; i < t.TotalBytes(); ++i) static_cast<uint8_t*>(t.raw_data())[i] = i % 2;
    }
    TensorProto p;
    t.AsProto(&p);
    auto back = Tensor::FromProto(p);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(TensorsEqual(t, *back)) << DataTypeString(dt);
  }
}

TEST(TensorTest, FromProtoRejectsContentOfTheWrongSize) {
  TensorProto p;
  Tensor::FromVector<float>({1, 2, 3}).AsProto(&p);
  p.mutable_content()->resize(8);
  auto t = Tensor::FromProto(p);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("expected 12"), std::string::npos);
}

TEST(TensorTest, ExternalMemoryIsReleasedOnce) {
  static float data[4] = {1, 2, 3, 4};
  int releases = 0;
  {
    Tensor t = Tensor::WrapExternal(DT_FLOAT, TensorShape({4}), data, [&] { ++releases; });
    Tensor copy = t;
    EXPECT_EQ(copy.data<float>()[3], 4);
  }
  EXPECT_EQ(releases, 1);
}

TEST(TensorTest, CastConvertsValues) {
  Tensor f = Tensor::FromVector<float>({1.7f, -2.2f, 0.0f});
  auto i = CastTensor(f, DT_INT32);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->data<int32_t>()[0], 1);
  EXPECT_EQ(i->data<int32_t>()[1], -2);
  auto b = CastTensor(f, DT_BOOL);
  EXPECT_TRUE(b->data<bool>()[0]);
  EXPECT_FALSE(b->data<bool>()[2]);
  auto bf = CastTensor(f, DT_BFLOAT16);
  EXPECT_NEAR(static_cast<float>(bf->data<bfloat16>()[0]), 1.7f, 0.01f);
  EXPECT_EQ(f.DebugString(), "float [3] {1.7 -2.2 0}");
}

TEST(AllocatorTest, LargeBlocksAreCachedAndReused) {
  Allocator* a = CpuAllocator();
  void* p = a->AllocateRaw(64, 1 << 20);
  ASSERT_NE(p, nullptr);
  int64_t in_use = a->GetStats().bytes_in_use;
  a->DeallocateRaw(p, 1 << 20);
  EXPECT_LT(a->GetStats().bytes_in_use, in_use);
  void* q = a->AllocateRaw(64, 1 << 20);
  EXPECT_EQ(p, q);  // the cached block comes back
  a->DeallocateRaw(q, 1 << 20);
}

}  // namespace
}  // namespace shardflow
