#include "gguf/writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf/ggml_type.h"
#include "gguf/gguf_test_util.h"
#include "gguf/reader.h"

namespace moetune {
namespace {

using testing::ParseBytes;
using testing::TempDir;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Every scalar type, every array element type, and tensors of several types.
GgufWriter AllTypesWriter() {
  GgufWriter w;
  w.Set("u8", GgufValue::Scalar(GgufValueType::kUint8, uint64_t{200}));
  w.Set("i8", GgufValue::Scalar(GgufValueType::kInt8, int64_t{-100}));
  w.Set("u16", GgufValue::Scalar(GgufValueType::kUint16, uint64_t{60000}));
  w.Set("i16", GgufValue::Scalar(GgufValueType::kInt16, int64_t{-30000}));
  w.SetU32("u32", 4000000000u);
  w.SetI32("i32", -2000000000);
  w.SetU64("u64", 18000000000000000000ull);
  w.Set("i64", GgufValue::Scalar(GgufValueType::kInt64, int64_t{-9000000000000000000}));
  w.SetF32("f32", 0.5f);
  w.Set("f64", GgufValue::Scalar(GgufValueType::kFloat64, 1e300));
  w.SetBool("bool", true);
  w.SetString("str", std::string("h\xc3\xa9llo\0world", 12));
  w.SetString("empty", "");
  w.SetStringArray("arr.str", {"a", "", "ccc"});
  w.SetIntArray("arr.i32", GgufValueType::kInt32, {1, -2, 3});
  w.SetIntArray("arr.u8", GgufValueType::kUint8, {0, 255});
  w.SetIntArray("arr.empty", GgufValueType::kUint64, {});
  w.Set("arr.f32", GgufValue::Array(GgufValueType::kFloat32, {0.25, -1.0}));
  w.Set("arr.bool", GgufValue::Array(GgufValueType::kBool, {true, false}));
  return w;
}

TEST(GgufWriterTest, RoundTripsEveryValueTypeAndTensorData) {
  GgufWriter w = AllTypesWriter();
  std::vector<uint8_t> data(size_t{4} * 8 * 3);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_TRUE(w.AddTensor("a.weight", {8, 3}, ggml_type::kF32, data).ok());
  ASSERT_TRUE(w.AddTensor("b.weight", {256, 2}, ggml_type::kQ4_K).ok());
  ASSERT_TRUE(w.AddTensor("c.weight", {32, 1, 2, 3}, ggml_type::kQ8_0).ok());

  auto bytes = w.ToBytes();
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->version, 3u);
  EXPECT_EQ(f->alignment, 32u);
  EXPECT_EQ(f->data_offset % 32, 0u);
  ASSERT_EQ(f->metadata.size(), w.metadata().size());
  for (size_t i = 0; i < w.metadata().size(); ++i) {
    const auto& [k, want] = w.metadata().entries()[i];
    const auto& [rk, got] = f->metadata.entries()[i];
    EXPECT_EQ(rk, k);
    EXPECT_EQ(got.type, want.type) << k;
    if (want.type == GgufValueType::kArray) {
      EXPECT_EQ(got.array_type, want.array_type) << k;
      EXPECT_EQ(got.array_count, want.array_count) << k;
      EXPECT_EQ(got.array, want.array) << k;
      EXPECT_FALSE(got.array_elided);
    } else {
      EXPECT_EQ(got.scalar, want.scalar) << k;
    }
  }
  EXPECT_EQ(f->metadata.GetString("str")->size(), 12u);  // embedded NUL survives

  ASSERT_EQ(f->tensors.size(), 3u);
  EXPECT_EQ(f->tensors[0].name, "a.weight");
  EXPECT_EQ(f->tensors[0].ne, (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(f->tensors[0].n_bytes, 96u);
  EXPECT_EQ(f->tensors[1].type, ggml_type::kQ4_K);
  EXPECT_EQ(f->tensors[1].n_bytes, 2u * 144u);
  EXPECT_EQ(f->tensors[2].n_bytes, 6u * 34u);
  for (const auto& t : f->tensors) EXPECT_EQ(t.offset % 32, 0u);
  // The data really sits where the header says.
  const uint8_t* a = bytes->data() + f->data_offset + f->tensors[0].offset;
  EXPECT_TRUE(std::equal(data.begin(), data.end(), a));
  uint64_t end = f->data_offset + f->tensors[2].offset + f->tensors[2].n_bytes;
  EXPECT_EQ(bytes->size(), (end + 31) / 32 * 32);
}

TEST(GgufWriterTest, CustomAlignmentIsWrittenAndHonoured) {
  GgufWriter w;
  ASSERT_TRUE(w.SetAlignment(256).ok());
  ASSERT_TRUE(w.AddTensor("x", {3}, ggml_type::kF32).ok());
  ASSERT_TRUE(w.AddTensor("y", {5}, ggml_type::kF16).ok());
  auto bytes = w.ToBytes();
  ASSERT_TRUE(bytes.ok());
  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->alignment, 256u);
  EXPECT_EQ(f->data_offset % 256, 0u);
  EXPECT_EQ(f->tensors[1].offset, 256u);
  EXPECT_FALSE(w.SetAlignment(48).ok());
  EXPECT_FALSE(w.SetAlignment(0).ok());
}

TEST(GgufWriterTest, StreamsLargeTensorsInOrderedChunks) {
  GgufWriter w;
  const int64_t n = int64_t{3} * 1024 * 1024;  // 12 MiB of f32: several 4 MiB chunks
  uint64_t next = 0;
  int calls = 0;
  ASSERT_TRUE(w.AddTensor("big", {n}, ggml_type::kF32,
                          [&](uint64_t offset, std::span<uint8_t> chunk) -> Status {
                            EXPECT_EQ(offset, next);
                            next += chunk.size();
                            ++calls;
                            for (size_t i = 0; i < chunk.size(); ++i)
                              chunk[i] = static_cast<uint8_t>((offset + i) % 251);
                            return OkStatus();
                          })
                  .ok());
  TempDir dir;
  std::string path = dir.File("big.gguf");
  ASSERT_TRUE(w.WriteAtomically(path).ok());
  EXPECT_EQ(next, static_cast<uint64_t>(n) * 4);
  EXPECT_GE(calls, 3);
  auto f = ReadGgufFile(path);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->path, path);
  auto raw = ReadAll(path);
  ASSERT_EQ(raw.size(), f->file_size);
  for (uint64_t i : {uint64_t{0}, uint64_t{5000000}, next - 1}) {
    EXPECT_EQ(raw[f->data_offset + i], static_cast<uint8_t>(i % 251));
  }
}

TEST(GgufWriterTest, FailedWriteLeavesNoFileAndKeepsTheOldOne) {
  TempDir dir;
  std::string path = dir.File("m.gguf");
  {
    std::ofstream old(path);
    old << "previous";
  }
  GgufWriter w;
  ASSERT_TRUE(w.AddTensor("t", {64}, ggml_type::kF32, [](uint64_t, std::span<uint8_t>) -> Status {
                 return Error(ErrorKind::kIo, "source vanished");
               }).ok());
  auto s = w.WriteAtomically(path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("tensor 't'"), std::string::npos);
  auto raw = ReadAll(path);
  EXPECT_EQ(std::string(raw.begin(), raw.end()), "previous");
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);  // the temporary file was removed
  EXPECT_EQ(w.WriteAtomically(dir.File("no/such/dir.gguf")).error().kind(), ErrorKind::kIo);
}

TEST(GgufWriterTest, RefusesInvalidValuesAndTensors) {
  GgufWriter w;
  w.Set("bad", GgufValue::Scalar(GgufValueType::kUint8, uint64_t{300}));
  auto r = w.ToBytes();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(r.error().message().find("'bad'"), std::string::npos);

  GgufWriter w2;
  w2.Set("s", GgufValue::Scalar(GgufValueType::kString, uint64_t{1}));
  EXPECT_FALSE(w2.ToBytes().ok());

  GgufWriter w3;
  GgufValue elided = GgufValue::Array(GgufValueType::kString, {});
  elided.array_count = 100000;
  elided.array_elided = true;
  w3.Set("tokens", elided);
  EXPECT_FALSE(w3.ToBytes().ok());

  GgufWriter t;
  EXPECT_FALSE(t.AddTensor("x", {33}, ggml_type::kQ4_0).ok());            // not a block multiple
  EXPECT_FALSE(t.AddTensor("x", {0}, ggml_type::kF32).ok());              // empty dimension
  EXPECT_FALSE(t.AddTensor("x", {1, 1, 1, 1, 1}, ggml_type::kF32).ok());  // 5 dims
  EXPECT_FALSE(t.AddTensor("x", {4}, 200).ok());                          // unknown type
  EXPECT_FALSE(t.AddTensor("x", {4}, ggml_type::kF32, std::vector<uint8_t>(3)).ok());
  EXPECT_FALSE(t.AddTensor(std::string(64, 'n'), {4}, ggml_type::kF32).ok());
  ASSERT_TRUE(t.AddTensor("x", {4}, ggml_type::kF32).ok());
  EXPECT_FALSE(t.AddTensor("x", {4}, ggml_type::kF32).ok());  // duplicate
  EXPECT_EQ(t.tensors().size(), 1u);
}

}  // namespace
}  // namespace moetune
