#include "gguf/reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>

#include "gguf/ggml_type.h"
#include "gguf/gguf_test_util.h"
#include "gguf/writer.h"

namespace moetune {
namespace {

using testing::ByteBuilder;
using testing::ExpectError;
using testing::ParseBytes;
using testing::TempDir;

constexpr uint32_t kF32 = ggml_type::kF32;
constexpr uint32_t kU32 = static_cast<uint32_t>(GgufValueType::kUint32);

// A valid file: one metadata entry, tensors laid out by the caller, data appended.
ByteBuilder WithTensors(
    std::initializer_list<std::tuple<const char*, std::vector<int64_t>, uint32_t, uint64_t>>
        tensors,
    size_t data_bytes) {
  ByteBuilder b;
  b.Header(tensors.size(), 1).KvStr("general.architecture", "llama");
  for (const auto& [name, ne, type, offset] : tensors) b.Tensor(name, ne, type, offset);
  b.PadTo(32).Zeros(data_bytes);
  return b;
}

TEST(GgufReaderTest, ParsesAHandcraftedV2File) {
  ByteBuilder b;
  b.Header(2, 2, /*version=*/2)
      .KvStr("general.architecture", "llama")
      .KvU32("llama.block_count", 3);
  b.Tensor("a", {4, 2}, kF32, 0).Tensor("b", {32}, ggml_type::kQ8_0, 32).PadTo(32).Zeros(32 + 34);
  auto f = ParseBytes(b.bytes);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->version, 2u);
  EXPECT_EQ(f->metadata.GetUint("llama.block_count"), 3u);
  ASSERT_EQ(f->tensors.size(), 2u);
  EXPECT_EQ(f->tensors[1].n_bytes, 34u);
  EXPECT_EQ(f->data_offset % 32, 0u);
  EXPECT_EQ(f->file_size, b.bytes.size());
}

TEST(GgufReaderTest, RejectsBadMagic) {
  ByteBuilder b;
  b.Raw("PK\x03\x04").Zeros(20);
  ExpectError(ParseBytes(b.bytes), ErrorKind::kFormat,
              {"byte offset 0", "magic", "not a GGUF", "50 4b 03 04"});
  ExpectError(ParseBytes({'G', 'G'}), ErrorKind::kFormat, {"magic", "only 2 bytes"});
  ExpectError(ParseBytes({}), ErrorKind::kFormat, {"magic"});
}

TEST(GgufReaderTest, RejectsUnsupportedVersionsAndBigEndian) {
  ExpectError(ParseBytes(ByteBuilder().Header(0, 0, 1).bytes), ErrorKind::kUnsupported,
              {"byte offset 4", "version 1"});
  ExpectError(ParseBytes(ByteBuilder().Header(0, 0, 4).bytes), ErrorKind::kUnsupported,
              {"version 4", "2 and 3"});
  ExpectError(ParseBytes(ByteBuilder().Header(0, 0, 0x03000000).bytes), ErrorKind::kUnsupported,
              {"big-endian", "0x03000000", "gguf_convert_endian"});
}

TEST(GgufReaderTest, EveryTruncationOfAValidFileIsAnErrorNamingAnOffset) {
  auto full = WithTensors({{"t0", {8}, kF32, 0}, {"t1", {8}, kF32, 32}}, 64).bytes;
  ASSERT_TRUE(ParseBytes(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
    auto r = ParseBytes(cut);
    ASSERT_FALSE(r.ok()) << "prefix " << n;
    EXPECT_EQ(r.error().kind(), ErrorKind::kFormat);
    EXPECT_NE(r.error().message().find("byte offset"), std::string::npos) << r.error().message();
  }
  ExpectError(ParseBytes(ByteBuilder().Header(0, 1).Put<uint64_t>(20).Raw("abcdefghij").bytes),
              ErrorKind::kFormat, {"byte offset 24", "metadata key", "runs past the end"});
  ExpectError(
      ParseBytes(ByteBuilder().Header(0, 1).Str("k").Put<uint32_t>(kU32).Put<uint16_t>(1).bytes),
      ErrorKind::kFormat, {"byte offset 37", "metadata value", "truncated", "key 'k'"});
}

TEST(GgufReaderTest, RejectsCountsBeyondTheFile) {
  ExpectError(ParseBytes(ByteBuilder().Header(1000000000000ull, 0).Zeros(100).bytes),
              ErrorKind::kFormat, {"byte offset 8", "tensor count", "1000000000000", "limit"});
  ExpectError(ParseBytes(ByteBuilder().Header(0, ~0ull).Zeros(100).bytes), ErrorKind::kFormat,
              {"byte offset 16", "metadata entry count", "limit"});
  ExpectError(ParseBytes(ByteBuilder().Header(1000, 0).Zeros(100).bytes), ErrorKind::kFormat,
              {"byte offset 8", "tensor count", "1000 tensors need at least 24 bytes each"});
  ExpectError(ParseBytes(ByteBuilder().Header(0, 1000).Zeros(100).bytes), ErrorKind::kFormat,
              {"byte offset 16", "metadata entry count", "only 100 bytes remain"});
  // An array of 2^61 u64 would need 2^64 bytes: the count check must not overflow.
  ByteBuilder arr;
  arr.Header(0, 1).Str("a").Put<uint32_t>(9).Put<uint32_t>(10).Put<uint64_t>(1ull << 61).Zeros(64);
  ExpectError(ParseBytes(arr.bytes), ErrorKind::kFormat,
              {"byte offset 41", "array count", "key 'a'", "2305843009213693952"});
  ByteBuilder strs;
  strs.Header(0, 1).Str("s").Put<uint32_t>(9).Put<uint32_t>(8).Put<uint64_t>(100).Zeros(64);
  ExpectError(ParseBytes(strs.bytes), ErrorKind::kFormat, {"array count", "only 64 bytes"});
}

TEST(GgufReaderTest, RejectsStringsOverTheirCaps) {
  ByteBuilder key;
  key.Header(0, 1).Str(std::string(kGgufMaxKeyBytes + 1, 'k')).Put<uint32_t>(kU32).Put<uint32_t>(1);
  ExpectError(ParseBytes(key.bytes), ErrorKind::kFormat,
              {"byte offset 24", "metadata key", "exceeds the limit", "metadata entry 0 of 1"});
  auto name = WithTensors(
      {{"this_tensor_name_is_far_too_long_for_ggml_which_allows_63_bytes_x", {8}, kF32, 0}}, 32);
  ExpectError(ParseBytes(name.bytes), ErrorKind::kFormat,
              {"tensor name", "limit of 63", "tensor info 0"});
}

TEST(GgufReaderTest, RejectsUnknownValueTypesAndNestedArrays) {
  ByteBuilder b;
  b.Header(0, 1).Str("k").Put<uint32_t>(13).Put<uint32_t>(0);
  ExpectError(ParseBytes(b.bytes), ErrorKind::kFormat, {"byte offset 33", "key 'k'", "type id 13"});
  ByteBuilder n;
  n.Header(0, 1).Str("k").Put<uint32_t>(9).Put<uint32_t>(9).Put<uint64_t>(0);
  ExpectError(ParseBytes(n.bytes), ErrorKind::kFormat, {"byte offset 37", "nested array"});
}

TEST(GgufReaderTest, RejectsDuplicateKeys) {
  ByteBuilder b;
  b.Header(0, 2).KvU32("general.x", 1).KvU32("general.x", 2);
  ExpectError(ParseBytes(b.bytes), ErrorKind::kFormat,
              {"duplicate key 'general.x'", "entry 1", "byte offset 49"});
}

TEST(GgufReaderTest, ChecksAlignment) {
  for (uint32_t bad : {0u, 48u}) {
    ByteBuilder b;
    b.Header(0, 1).KvU32("general.alignment", bad);
    ExpectError(ParseBytes(b.bytes), ErrorKind::kFormat,
                {"general.alignment", "power of two", "byte offset 24"});
  }
  ByteBuilder s;
  s.Header(0, 1).KvStr("general.alignment", "32");
  ExpectError(ParseBytes(s.bytes), ErrorKind::kFormat, {"non-integer"});
  ByteBuilder good;
  good.Header(1, 1).KvU32("general.alignment", 64).Tensor("t", {4}, kF32, 0).PadTo(64).Zeros(16);
  auto f = ParseBytes(good.bytes);
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->alignment, 64u);
  EXPECT_EQ(f->data_offset % 64, 0u);
}

TEST(GgufReaderTest, RejectsBadDimensions) {
  ExpectError(ParseBytes(WithTensors({{"t", {1, 1, 1, 1, 1}, kF32, 0}}, 32).bytes),
              ErrorKind::kFormat, {"tensor 0 't' n_dims", "5 dimensions", "at most 4"});
  ExpectError(ParseBytes(WithTensors({{"t", {4, 0}, kF32, 0}}, 32).bytes), ErrorKind::kFormat,
              {"'t' ne[1]", "dimension is 0"});
  ExpectError(ParseBytes(WithTensors({{"t", {-4}, kF32, 0}}, 32).bytes), ErrorKind::kFormat,
              {"'t' ne[0]", "dimension is -4"});
  ExpectError(ParseBytes(WithTensors({{"t", {1ll << 32, 1ll << 32}, kF32, 0}}, 32).bytes),
              ErrorKind::kFormat, {"'t' ne[1]", "overflows"});
  // 2^62 f32 elements fit in int64 but their byte size does not fit in 64 bits.
  ExpectError(ParseBytes(WithTensors({{"t", {1ll << 31, 1ll << 31}, kF32, 0}}, 32).bytes),
              ErrorKind::kFormat, {"'t' size", "overflows"});
}

TEST(GgufReaderTest, RejectsUnknownGgmlTypeNamingTensorAndId) {
  ExpectError(ParseBytes(WithTensors({{"blk.0.ffn_up_exps.weight", {32}, 77, 0}}, 64).bytes),
              ErrorKind::kUnsupported, {"'blk.0.ffn_up_exps.weight'", "type id 77", "update"});
}

TEST(GgufReaderTest, RejectsRowsNotAMultipleOfTheBlockSize) {
  ExpectError(ParseBytes(WithTensors({{"q", {33, 2}, ggml_type::kQ4_0, 0}}, 64).bytes),
              ErrorKind::kFormat, {"'q'", "ne[0]=33", "block size 32", "q4_0"});
}

TEST(GgufReaderTest, RejectsDuplicateTensorNames) {
  ExpectError(ParseBytes(WithTensors({{"w", {8}, kF32, 0}, {"w", {8}, kF32, 32}}, 64).bytes),
              ErrorKind::kFormat, {"duplicate tensor name 'w'", "tensors 0 and 1"});
}

TEST(GgufReaderTest, RejectsMisalignedOutOfRangeAndOverlappingData) {
  ExpectError(ParseBytes(WithTensors({{"w", {8}, kF32, 4}}, 64).bytes), ErrorKind::kFormat,
              {"tensor 0 'w' offset", "not a multiple of the alignment 32"});
  ExpectError(ParseBytes(WithTensors({{"w", {8}, kF32, 0}, {"v", {16}, kF32, 32}}, 40).bytes),
              ErrorKind::kFormat, {"tensor 1 'v' offset", "past the end", "truncated"});
  ExpectError(ParseBytes(WithTensors({{"w", {8}, kF32, ~0ull - 31}}, 64).bytes), ErrorKind::kFormat,
              {"'w' offset", "beyond 2^64"});
  ExpectError(ParseBytes(WithTensors({{"w", {16}, kF32, 0}, {"v", {8}, kF32, 32}}, 96).bytes),
              ErrorKind::kFormat, {"tensor 1 'v' offset", "overlaps tensor 0 'w'"});
}

TEST(GgufReaderTest, ElidesHugeArraysUnlessAskedToKeepThem) {
  GgufWriter w;
  std::vector<std::string> tokens(70000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = "tok" + std::to_string(i);
  w.SetStringArray("tokenizer.ggml.tokens", tokens);
  w.SetIntArray("tokenizer.ggml.token_type", GgufValueType::kInt32, std::vector<int64_t>(70000, 1));
  w.SetU32("after", 7);
  auto bytes = w.ToBytes();
  ASSERT_TRUE(bytes.ok());

  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.error().message();
  const GgufValue* t = f->metadata.Find("tokenizer.ggml.tokens");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->array_elided);
  EXPECT_EQ(t->array_count, 70000u);
  EXPECT_TRUE(t->array.empty());
  EXPECT_TRUE(f->metadata.Find("tokenizer.ggml.token_type")->array_elided);
  EXPECT_EQ(f->metadata.GetUint("after"), 7u);  // parsing resumed at the right byte

  GgufReadOptions keep;
  keep.keep_large_arrays = true;
  auto k = ParseBytes(*bytes, keep);
  ASSERT_TRUE(k.ok());
  const GgufValue* kt = k->metadata.Find("tokenizer.ggml.tokens");
  EXPECT_FALSE(kt->array_elided);
  ASSERT_EQ(kt->array.size(), 70000u);
  EXPECT_EQ(std::get<std::string>(kt->array[69999]), "tok69999");

  // An elided string array is still validated element by element.
  std::vector<uint8_t> broken = *bytes;
  // Corrupt the length of the first token: the key, type ids and count precede it.
  size_t first_len = 24 + 8 + std::string("tokenizer.ggml.tokens").size() + 4 + 4 + 8;
  broken[first_len + 7] = 0x7f;
  ExpectError(ParseBytes(broken), ErrorKind::kFormat,
              {"key 'tokenizer.ggml.tokens' element 0", "exceeds the limit"});
}

TEST(GgufReaderTest, ParseGgufHeaderAcceptsAPrefixOfTheFile) {
  auto full = WithTensors({{"w", {8}, kF32, 0}}, 32).bytes;
  std::vector<uint8_t> header(full.begin(), full.end() - 32);
  auto f = ParseGgufHeader(header, full.size());
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->file_size, full.size());
  ExpectError(ParseGgufHeader(full, 10), ErrorKind::kInvalidArgument, {"smaller"});
}

TEST(GgufReaderTest, ReadGgufFileReportsMissingAndUnreadablePaths) {
  TempDir dir;
  ExpectError(ReadGgufFile(dir.File("absent.gguf")), ErrorKind::kNotFound,
              {"absent.gguf", "no such file"});
  ExpectError(ReadGgufFile(dir.path()), ErrorKind::kIo, {"not a regular file"});
  std::string path = dir.File("bad.gguf");
  std::ofstream(path) << "GGUF\x03";
  ExpectError(ReadGgufFile(path), ErrorKind::kFormat, {"bad.gguf: byte offset 4", "version"});
}

TEST(GgufReaderTest, ReadGgufFileRefusesAFifoWithoutWaitingForAWriter) {
  // A FIFO named like a model (found by `moetune models` in a folder, or given
  // as MODEL) must not block the open: nobody will ever write to it.
  TempDir dir;
  const std::string fifo = dir.File("pipe.gguf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectError(ReadGgufFile(fifo), ErrorKind::kIo, {"pipe.gguf", "not a regular file"});
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

// The fuzz seeds must stay valid, or the fuzzer starts from rejected inputs only.
TEST(GgufReaderTest, FuzzSeedCorpusParses) {
  const std::string dir = std::string(MOETUNE_SOURCE_DIR) + "/tests/fuzz/corpus/gguf";
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    auto f = ReadGgufFile(e.path().string());
    EXPECT_TRUE(f.ok()) << e.path() << ": " << f.error().message();
    ++n;
  }
  EXPECT_GE(n, 4u);
}

}  // namespace
}  // namespace moetune
