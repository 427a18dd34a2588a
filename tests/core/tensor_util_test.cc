// CastTensor / the Cast kernel on values C++ leaves undefined: float -> integer of NaN,
// infinities and out-of-range values (see Note [Float to integer casts] in
// core/framework/tensor_util.cc). UBSan reported the Cast kernel's float -> int of NaN.
#include "core/framework/tensor_util.h"

#include <cmath>
#include <cstdint>
#include <cstring>
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

// The array conversions between float and half / bfloat16 (vectorized) give, bit for bit, what
// the element conversions half(float) and bfloat16(float) give: ties to even, subnormals, values
// that overflow to infinity, infinities and NaN; lengths that are not a multiple of the vector
// width; and back to float exactly.
TEST(TensorUtilTest, ArrayConversionsToSixteenBitFloatsMatchTheElementConversions) {
  std::vector<float> in = {0.0f,
                           -0.0f,
                           1.0f,
                           -2.5f,
                           65504.0f,
                           65520.0f,
                           1e6f,
                           -1e-7f,
                           6e-8f,
                           3e-39f,
                           1.0f + 1.0f / 2048,
                           1.0f + 3.0f / 2048,
                           1.00390625f,
                           1.01171875f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           kNaN,
                           -kNaN,
                           std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::min()};
  uint32_t seed = 12345;
  for (int i = 0; i < 1000; ++i) {  // every exponent, random mantissas
    seed = seed * 1664525u + 1013904223u;
    uint32_t bits = seed;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    in.push_back(f);
  }
  for (int64_t n : {int64_t{0}, int64_t{7}, static_cast<int64_t>(in.size())}) {
    std::vector<half> h(n);
    std::vector<bfloat16> b(n);
    FloatToHalf(in.data(), h.data(), n);
    FloatToBfloat16(in.data(), b.data(), n);
    std::vector<float> hf(n), bf(n);
    HalfToFloat(h.data(), hf.data(), n);
    Bfloat16ToFloat(b.data(), bf.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const half eh(in[i]);
      const bfloat16 eb(in[i]);
      if (std::isnan(in[i])) {
        EXPECT_TRUE(std::isnan(static_cast<float>(h[i]))) << i;
        EXPECT_TRUE(std::isnan(static_cast<float>(b[i]))) << i;
        EXPECT_TRUE(std::isnan(hf[i]) && std::isnan(bf[i])) << i;
        continue;
      }
      EXPECT_EQ(eh.x, h[i].x) << "half of " << in[i];
      EXPECT_EQ(eb.value, b[i].value) << "bfloat16 of " << in[i];
      EXPECT_EQ(static_cast<float>(eh), hf[i]) << i;
      EXPECT_EQ(static_cast<float>(eb), bf[i]) << i;
    }
  }
  // The Cast kernel's path (CastTensor) uses them: the same values.
  auto cast = CastTensor(Tensor::FromVector<float>({1.0f + 1.0f / 2048, 70000.0f}), DT_HALF);
  ASSERT_TRUE(cast.ok()) << cast.status();
  EXPECT_EQ(static_cast<float>(cast->data<half>()[0]), 1.0f);  // a tie, to even
  EXPECT_TRUE(std::isinf(static_cast<float>(cast->data<half>()[1])));
}

}  // namespace
}  // namespace shardflow
