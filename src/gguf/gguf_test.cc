#include "gguf/gguf.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(MetadataTest, AddKeepsFirstSetReplacesOrderIsKept) {
  Metadata m;
  EXPECT_TRUE(m.Add("b", GgufValue::U32(1)));
  EXPECT_TRUE(m.Add("a", GgufValue::U32(2)));
  EXPECT_FALSE(m.Add("b", GgufValue::U32(3)));
  EXPECT_EQ(m.GetUint("b"), 1u);
  m.Set("b", GgufValue::Str("x"));
  m.Set("c", GgufValue::Bool(true));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.entries()[0].first, "b");
  EXPECT_EQ(m.entries()[2].first, "c");
  EXPECT_EQ(m.GetString("b"), "x");
  EXPECT_EQ(m.Find("zzz"), nullptr);
  EXPECT_FALSE(m.Has("zzz"));
}

TEST(MetadataTest, TypedAccessorsAreForgivingAcrossIntegerTypes) {
  Metadata m;
  m.Set("u32", GgufValue::U32(7));
  m.Set("i32", GgufValue::I32(7));
  m.Set("neg", GgufValue::I32(-1));
  m.Set("f", GgufValue::F32(0.5f));
  m.Set("s", GgufValue::Str("hi"));
  m.Set("b", GgufValue::Bool(false));
  EXPECT_EQ(m.GetUint("u32"), 7u);
  EXPECT_EQ(m.GetUint("i32"), 7u);
  EXPECT_EQ(m.GetUint("neg"), std::nullopt);
  EXPECT_EQ(m.GetUint("f"), std::nullopt);
  EXPECT_EQ(m.GetUint("s"), std::nullopt);
  EXPECT_EQ(m.GetFloat("f"), 0.5);
  EXPECT_EQ(m.GetFloat("neg"), -1.0);
  EXPECT_EQ(m.GetFloat("s"), std::nullopt);
  EXPECT_EQ(m.GetString("u32"), std::nullopt);
  EXPECT_EQ(m.GetBool("b"), false);
  EXPECT_EQ(m.GetBool("u32"), std::nullopt);
}

TEST(MetadataTest, IntArraysAndPerLayerValues) {
  Metadata m;
  m.Set("arr", GgufValue::Array(GgufValueType::kInt32, {int64_t{1}, int64_t{-2}}));
  m.Set("uarr", GgufValue::Array(GgufValueType::kUint64, {uint64_t{1} << 63}));
  m.Set("sarr", GgufValue::Array(GgufValueType::kString, {std::string("x")}));
  m.Set("ff", GgufValue::U32(512));
  GgufValue elided = GgufValue::Array(GgufValueType::kInt32, {});
  elided.array_count = 100000;
  elided.array_elided = true;
  m.Set("big", elided);
  EXPECT_EQ(m.GetIntArray("arr"), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(m.GetIntArray("uarr"), std::nullopt);  // does not fit int64
  EXPECT_EQ(m.GetIntArray("sarr"), std::nullopt);
  EXPECT_EQ(m.GetIntArray("big"), std::nullopt);
  EXPECT_EQ(m.GetIntArray("ff"), std::nullopt);
  EXPECT_EQ(m.GetPerLayer("ff", 3), (std::vector<int64_t>{512, 512, 512}));
  EXPECT_EQ(m.GetPerLayer("arr", 2), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(m.GetPerLayer("arr", 3), std::nullopt);  // wrong length
  EXPECT_EQ(m.GetPerLayer("missing", 3), std::nullopt);
}

TEST(MetadataTest, ValueTypeNames) {
  EXPECT_STREQ(GgufValueTypeName(GgufValueType::kUint8), "u8");
  EXPECT_STREQ(GgufValueTypeName(GgufValueType::kArray), "arr");
  EXPECT_STREQ(GgufValueTypeName(GgufValueType::kFloat64), "f64");
  EXPECT_STREQ(GgufValueTypeName(static_cast<GgufValueType>(99)), "unknown");
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

GgufModel TinyModel(uint32_t experts_used) {
  GgufModel m;
  m.parts.emplace_back();
  Metadata& md = m.parts[0].metadata;
  md.Set("general.architecture", GgufValue::Str("qwen3moe"));
  md.Set("general.name", GgufValue::Str("tiny"));
  md.Set("qwen3moe.expert_used_count", GgufValue::U32(experts_used));
  md.Set("qwen3moe.rope.freq_base", GgufValue::F32(1e6F));
  TensorInfo t;
  t.name = "blk.0.ffn_up_exps.weight";
  t.ne = {64, 32, 8};
  t.type = 1;
  m.tensors.push_back(t);
  return m;
}

TEST(GgufFingerprintTest, EveryHyperparameterAndTensorShapeCounts) {
  const std::string a = GgufFingerprint(TinyModel(4));
  EXPECT_EQ(a.rfind("sha256:", 0), 0u);
  EXPECT_EQ(a.size(), 7u + 16u);
  EXPECT_EQ(a, GgufFingerprint(TinyModel(4)));
  EXPECT_NE(a, GgufFingerprint(TinyModel(8)));  // same name and shape, other expert_used_count
  GgufModel other_shape = TinyModel(4);
  other_shape.tensors[0].ne[2] = 16;
  EXPECT_NE(a, GgufFingerprint(other_shape));
  GgufModel other_type = TinyModel(4);
  other_type.tensors[0].type = 8;
  EXPECT_NE(a, GgufFingerprint(other_type));
}

}  // namespace
}  // namespace moetune
