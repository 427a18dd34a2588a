#include "core/framework/device_name.h"
#include "core/framework/tensor_shape.h"
#include "core/framework/types.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

TEST(DataTypeTest, NamesSizesAndParsing) {
  EXPECT_EQ(DataTypeString(DT_BFLOAT16), "bfloat16");
  EXPECT_EQ(DataTypeSize(DT_HALF), 2);
  EXPECT_EQ(DataTypeSize(DT_INT64), 8);
  EXPECT_EQ(DataTypeSize(DT_STRING), 0);
  for (DataType t : AllDataTypes()) EXPECT_EQ(*ParseDataType(DataTypeString(t)), t);
  EXPECT_EQ(*ParseDataType("float32"), DT_FLOAT);
  auto bad = ParseDataType("complex64");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("valid:"), std::string::npos);
  EXPECT_EQ(AllDataTypes().size(), 10u);
}

TEST(TensorShapeTest, UnknownDimsAndCompatibility) {
  TensorShape partial({-1, 784});
  EXPECT_EQ(partial.DebugString(), "[?,784]");
  EXPECT_FALSE(partial.IsFullyDefined());
  EXPECT_EQ(partial.num_elements(), -1);
  EXPECT_TRUE(partial.IsCompatibleWith(TensorShape({32, 784})));
  EXPECT_FALSE(partial.IsCompatibleWith(TensorShape({32, 783})));
  EXPECT_FALSE(partial.IsCompatibleWith(TensorShape({784})));
  EXPECT_TRUE(TensorShape::Unknown().IsCompatibleWith(TensorShape({1, 2, 3})));
  EXPECT_EQ(TensorShape::Unknown().DebugString(), "<unknown>");
  EXPECT_EQ(TensorShape().DebugString(), "[]");
  EXPECT_EQ(TensorShape().num_elements(), 1);
  auto merged = partial.Merge(TensorShape({8, -1}));
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->DebugString(), "[8,784]");
  EXPECT_FALSE(partial.Merge(TensorShape({8, 3})).ok());
}

TEST(TensorShapeTest, ProtoRoundTripAndValidation) {
  TensorShapeProto p;
  TensorShape({2, -1, 3}).AsProto(&p);
  EXPECT_EQ(TensorShape::FromProto(p)->DebugString(), "[2,?,3]");
  p.add_dim(-5);
  EXPECT_FALSE(TensorShape::FromProto(p).ok());
  TensorShape::Unknown().AsProto(&p);
  EXPECT_TRUE(TensorShape::FromProto(p)->unknown_rank());
}

TEST(DeviceNameTest, ParseFullAndPartial) {
  auto full = DeviceName::Parse("/job:worker/replica:0/task:1/device:GPU:0");
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->IsFullySpecified());
  EXPECT_EQ(full->ToString(), "/job:worker/replica:0/task:1/device:GPU:0");
  EXPECT_EQ(full->TaskName(), "/job:worker/replica:0/task:1");

  auto gpu0 = DeviceName::Parse("/device:GPU:0");
  auto ps = DeviceName::Parse("/job:ps");
  auto cpu1 = DeviceName::Parse("/cpu:1");
  ASSERT_TRUE(gpu0.ok() && ps.ok() && cpu1.ok());
  EXPECT_TRUE(gpu0->Matches(*full));
  EXPECT_FALSE(ps->Matches(*full));
  EXPECT_EQ(cpu1->ToString(), "/device:CPU:1");
  EXPECT_TRUE(DeviceName::Parse("")->Matches(*full));
  auto any_cpu = DeviceName::Parse("/device:CPU:*");
  EXPECT_TRUE(any_cpu->Matches(*DeviceName::Parse("/job:a/replica:0/task:0/device:CPU:7")));
}

TEST(DeviceNameTest, MergeAndErrors) {
  auto a = DeviceName::Parse("/job:worker");
  auto b = DeviceName::Parse("/device:CPU:1");
  ASSERT_TRUE(a->MergeFrom(*b).ok());
  EXPECT_EQ(a->ToString(), "/job:worker/device:CPU:1");
  EXPECT_FALSE(a->MergeFrom(*DeviceName::Parse("/job:ps")).ok());
  for (const char* bad : {"job:worker", "/job:", "/task:x", "/device:GPU:-1", "/job:a b"}) {
    auto s = DeviceName::Parse(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) EXPECT_NE(s.status().message().find("expected e.g."), std::string::npos);
  }
}

}  // namespace
}  // namespace shardflow
