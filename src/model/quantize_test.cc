#include "model/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

std::vector<float> RandomValues(size_t n, float sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Round trip through our encoder and decoder; returns RMS error / RMS value.
double RelativeRmsError(uint32_t type, const std::vector<float>& x) {
  const auto info = GgmlTypeById(type);
  std::vector<uint8_t> bytes(*GgmlRowBytes(*info, x.size()));
  EXPECT_TRUE(QuantizeRow(type, x, bytes).ok());
  std::vector<float> y(x.size());
  EXPECT_TRUE(DequantizeRow(type, bytes, y).ok());
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (x[i] - y[i]) * (x[i] - y[i]);
    ref += x[i] * x[i];
  }
  return std::sqrt(err / ref);
}

TEST(QuantizeTest, HalfConversionsAreExactForRepresentableValues) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 5.9604645e-8f, 0.1f}) {
    const float back = HalfToFloat(FloatToHalf(f));
    EXPECT_NEAR(back, f, std::fabs(f) * 1e-3 + 1e-9) << f;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);  // saturates to inf
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(3.0f)), 3.0f);
}

TEST(QuantizeTest, RoundTripErrorsMatchEachFormatsPrecision) {
  const auto x = RandomValues(4096, 0.02f, 7);
  EXPECT_LT(RelativeRmsError(ggml_type::kF16, x), 1e-3);
  EXPECT_LT(RelativeRmsError(ggml_type::kBF16, x), 5e-3);
  EXPECT_EQ(RelativeRmsError(ggml_type::kF32, x), 0.0);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ8_0, x), 0.01);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ6_K, x), 0.05);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_K, x), 0.08);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_0, x), 0.08);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_1, x), 0.08);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ4_K, x), 0.15);
  EXPECT_LT(RelativeRmsError(ggml_type::kMXFP4, x), 0.25);
  // More bits, less error: the encoders use their bits.
  EXPECT_LT(RelativeRmsError(ggml_type::kQ8_0, x), RelativeRmsError(ggml_type::kQ6_K, x));
  EXPECT_LT(RelativeRmsError(ggml_type::kQ6_K, x), RelativeRmsError(ggml_type::kQ5_K, x));
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_K, x), RelativeRmsError(ggml_type::kQ4_K, x));
}

TEST(QuantizeTest, ConstantAndZeroBlocksDecodeExactlyEnough) {
  std::vector<float> ones(256, 1.0f), zeros(256, 0.0f);
  for (uint32_t t : {ggml_type::kQ8_0, ggml_type::kQ5_0, ggml_type::kQ5_1, ggml_type::kQ4_K,
                     ggml_type::kQ5_K, ggml_type::kQ6_K, ggml_type::kMXFP4}) {
    EXPECT_LT(RelativeRmsError(t, ones), 0.02) << t;
    const auto info = GgmlTypeById(t);
    std::vector<uint8_t> bytes(*GgmlRowBytes(*info, 256));
    ASSERT_TRUE(QuantizeRow(t, zeros, bytes).ok());
    std::vector<float> y(256, 9.0f);
    ASSERT_TRUE(DequantizeRow(t, bytes, y).ok());
    for (float v : y) EXPECT_EQ(v, 0.0f) << t;
  }
}

TEST(QuantizeTest, PositiveOnlyAndOffsetBlocksKeepTheirRange) {
  // Q4_K has a per-sub-block min; a block of large negative values must still decode.
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -1.0f + 0.001f * static_cast<float>(i);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ4_K, x), 0.05);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_K, x), 0.03);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_1, x), 0.02);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ6_K, x), 0.02);
}

// Every value position of a block decodes from its own bits: a ramp through
// the whole block (each value distinct) comes back in order, which a wrong
// nibble or high-bit position would scramble.
TEST(QuantizeTest, FiveBitLayoutsPutEachValueInItsPlace) {
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(i % 32) - 0.15f;
  for (uint32_t t : {ggml_type::kQ5_0, ggml_type::kQ5_1, ggml_type::kQ5_K}) {
    EXPECT_LT(RelativeRmsError(t, x), 0.05) << t;
  }
  std::vector<float> y(256);
  for (size_t i = 0; i < y.size(); ++i) y[i] = 0.001f * static_cast<float>(i);
  // A misplaced bit costs ~100%; the fifth bit halves Q4_K's rounding error.
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_K, y), 0.02);
  EXPECT_LT(RelativeRmsError(ggml_type::kQ5_K, y), 0.7 * RelativeRmsError(ggml_type::kQ4_K, y));
}

TEST(QuantizeTest, RejectsWrongSizesAndUnknownTypes) {
  std::vector<float> x(100);
  std::vector<uint8_t> b(1000);
  EXPECT_FALSE(QuantizeRow(ggml_type::kQ4_K, x, b).ok());  // not a whole block
  std::vector<float> y(256);
  EXPECT_FALSE(QuantizeRow(ggml_type::kQ4_K, y, b).ok());  // wrong byte count
  EXPECT_FALSE(QuantizeRow(ggml_type::kIQ4_XS, y, b).ok());
  EXPECT_FALSE(CanQuantize(ggml_type::kQ2_K));
  EXPECT_TRUE(CanQuantize(ggml_type::kQ6_K));
}

}  // namespace
}  // namespace moetune
