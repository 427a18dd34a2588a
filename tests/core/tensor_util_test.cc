// CastTensor / the Cast kernel on values C++ leaves undefined: float -> integer of NaN,
// infinities and out-of-range values (see Note [Float to integer casts] in
// core/framework/tensor_util.cc). UBSan reported the Cast kernel's float -> int of NaN.
#include "core/framework/tensor_util.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/framework/attr_value.h"
#include "gtest/gtest.h"
#include "runtime/op_runner.h"

namespace shardflow {
namespace {

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

template <typename To, typename From>
std::vector<To> Cast(const std::vector<From>& in) {
  auto out = CastTensor(Tensor::FromVector<From>(in), DataTypeToEnum<To>::value);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Values<To>(*out) : std::vector<To>();
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(CastFloatToIntTest, NaNBecomesZero) {
  EXPECT_EQ(Cast<int32_t>(std::vector<float>{kNaN, -kNaN}), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(Cast<int64_t>(std::vector<double>{std::nan("")}), (std::vector<int64_t>{0}));
  EXPECT_EQ(Cast<uint8_t>(std::vector<float>{kNaN}), (std::vector<uint8_t>{0}));
  EXPECT_EQ(Cast<int8_t>(std::vector<half>{half(kNaN)}), (std::vector<int8_t>{0}));
  EXPECT_EQ(Cast<int32_t>(std::vector<bfloat16>{bfloat16(kNaN)}), (std::vector<int32_t>{0}));
}

TEST(CastFloatToIntTest, OutOfRangeSaturates) {
  using I32 = std::numeric_limits<int32_t>;
  using I64 = std::numeric_limits<int64_t>;
  EXPECT_EQ(Cast<int32_t>(std::vector<float>{kInf, -kInf, 1e30f, -1e30f, 2147483648.f}),
            (std::vector<int32_t>{I32::max(), I32::min(), I32::max(), I32::min(), I32::max()}));
  EXPECT_EQ(Cast<int64_t>(std::vector<double>{9.3e18, -9.3e18, 9223372036854775808.0}),
            (std::vector<int64_t>{I64::max(), I64::min(), I64::max()}));
  EXPECT_EQ(Cast<uint8_t>(std::vector<float>{300.f, -5.f, -0.5f, 255.9f}),
            (std::vector<uint8_t>{255, 0, 0, 255}));
  EXPECT_EQ(Cast<int8_t>(std::vector<double>{-129.0, 128.0}), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(Cast<int32_t>(std::vector<half>{half(65504.f), half(-kInf)}),
            (std::vector<int32_t>{65504, I32::min()}));
}

TEST(CastFloatToIntTest, InRangeTruncatesTowardZero) {
  EXPECT_EQ(Cast<int32_t>(std::vector<float>{1.7f, -1.7f, 2147483520.f, -2147483648.f}),
            (std::vector<int32_t>{1, -1, 2147483520, std::numeric_limits<int32_t>::min()}));
  EXPECT_EQ(Cast<int64_t>(std::vector<double>{9223372036854774784.0, -0.9}),
            (std::vector<int64_t>{9223372036854774784, 0}));
}

TEST(CastFloatToIntTest, TheCastKernelSaturates) {
  auto out = RunOp("Cast", {Tensor::FromVector<float>({kNaN, kInf, -1e20f, 3.9f})},
                   {{"DstT", MakeAttr(DT_INT32)}});
  ASSERT_TRUE(out.ok()) << out.status();
  using I32 = std::numeric_limits<int32_t>;
  EXPECT_EQ(Values<int32_t>(out->at(0)), (std::vector<int32_t>{0, I32::max(), I32::min(), 3}));
}

}  // namespace
}  // namespace shardflow
