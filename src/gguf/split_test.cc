#include "gguf/split.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <initializer_list>

#include "gguf/ggml_type.h"
#include "gguf/gguf_test_util.h"

namespace moetune {
namespace {

using testing::ExpectError;
using testing::TempDir;

GgufWriter SixTensorModel() {
  GgufWriter w;
  w.SetString("general.architecture", "qwen3moe");
  w.SetU32("qwen3moe.block_count", 3);
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(w.AddTensor("blk." + std::to_string(i) + ".w", {32, 2}, ggml_type::kQ8_0).ok());
  }
  return w;
}

// One hand-made part with the given split keys and tensors.
void WritePart(const std::string& path, uint64_t no, uint64_t count, int64_t total,
               std::initializer_list<const char*> tensors) {
  GgufWriter w;
  if (no == 0) w.SetString("general.architecture", "qwen3moe");
  w.Set("split.no", GgufValue::Scalar(GgufValueType::kUint16, no));
  w.Set("split.count", GgufValue::Scalar(GgufValueType::kUint16, count));
  w.SetI32("split.tensors.count", static_cast<int32_t>(total));
  for (const char* t : tensors) ASSERT_TRUE(w.AddTensor(t, {8}, ggml_type::kF32).ok());
  ASSERT_TRUE(w.WriteAtomically(path).ok());
}

TEST(GgufSplitTest, PathsFollowLlamaCppPattern) {
  EXPECT_EQ(GgufSplitPath("/m/Model-Q4", 1, 3), "/m/Model-Q4-00002-of-00003.gguf");
  auto n = ParseGgufSplitPath("/m/Model-Q4-00002-of-00003.gguf");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->prefix, "/m/Model-Q4");
  EXPECT_EQ(n->index, 1u);
  EXPECT_EQ(n->count, 3u);
  EXPECT_FALSE(ParseGgufSplitPath("/m/Model-Q4.gguf"));
  EXPECT_FALSE(ParseGgufSplitPath("/m/M-00000-of-00003.gguf"));  // numbers start at 1
  EXPECT_FALSE(ParseGgufSplitPath("/m/M-00004-of-00003.gguf"));
  EXPECT_FALSE(ParseGgufSplitPath("/m/M-0002-of-00003.gguf"));
  EXPECT_FALSE(ParseGgufSplitPath("-00001-of-00001.gguf").has_value() &&
               !ParseGgufSplitPath("-00001-of-00001.gguf")->prefix.empty());
}

TEST(GgufSplitTest, WritesAndReadsASplitModelFromAnyPart) {
  TempDir dir;
  GgufWriter w = SixTensorModel();
  auto paths = WriteGgufSplit(w, dir.File("m"), 3);
  ASSERT_TRUE(paths.ok()) << paths.error().message();
  ASSERT_EQ(paths->size(), 3u);
  EXPECT_EQ((*paths)[2], dir.File("m-00003-of-00003.gguf"));
  for (const auto& p : *paths) {
    auto m = OpenGgufModel(p);
    ASSERT_TRUE(m.ok()) << m.error().message();
    ASSERT_EQ(m->parts.size(), 3u);
    EXPECT_EQ(m->architecture(), "qwen3moe");
    EXPECT_EQ(m->metadata().GetUint("qwen3moe.block_count"), 3u);
    ASSERT_EQ(m->tensors.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(m->tensors[i].name, "blk." + std::to_string(i) + ".w");
      EXPECT_EQ(m->tensors[i].part, i / 2);
    }
    EXPECT_EQ(m->tensor_bytes(), 6u * 2 * 34);
    EXPECT_EQ(m->parts[1].path, (*paths)[1]);
    EXPECT_FALSE(m->parts[1].metadata.Has("general.architecture"));  // part 1 only
  }
}

TEST(GgufSplitTest, SingleFileIsAOnePartModel) {
  TempDir dir;
  GgufWriter w = SixTensorModel();
  ASSERT_TRUE(w.WriteAtomically(dir.File("single.gguf")).ok());
  auto m = OpenGgufModel(dir.File("single.gguf"));
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->parts.size(), 1u);
  EXPECT_EQ(m->tensors.size(), 6u);
  EXPECT_EQ(m->file_bytes(), m->parts[0].file_size);
}

TEST(GgufSplitTest, ReportsAMissingPartByItsPath) {
  TempDir dir;
  GgufWriter w = SixTensorModel();
  auto paths = WriteGgufSplit(w, dir.File("m"), 3);
  ASSERT_TRUE(paths.ok());
  std::remove((*paths)[2].c_str());
  ExpectError(OpenGgufModel((*paths)[0]), ErrorKind::kNotFound,
              {"split part 3 of 3 is missing", "m-00003-of-00003.gguf", "download all 3 parts"});
}

TEST(GgufSplitTest, APartThatIsAFifoIsRefusedWithoutWaiting) {
  TempDir dir;
  GgufWriter w = SixTensorModel();
  auto paths = WriteGgufSplit(w, dir.File("m"), 3);
  ASSERT_TRUE(paths.ok());
  // Opening a FIFO for reading waits for a writer: the reader must not.
  std::remove((*paths)[1].c_str());
  ASSERT_EQ(::mkfifo((*paths)[1].c_str(), 0600), 0);
  auto m = OpenGgufModel((*paths)[0]);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("a named pipe, not a regular file"), std::string::npos)
      << m.error().message();
  EXPECT_NE(m.error().message().find("m-00002-of-00003.gguf"), std::string::npos);
}

TEST(GgufSplitTest, ReportsInconsistentParts) {
  TempDir dir;
  const std::string p1 = dir.File("m-00001-of-00002.gguf"), p2 = dir.File("m-00002-of-00002.gguf");
  // split.count disagrees.
  WritePart(p1, 0, 2, 2, {"a"});
  WritePart(p2, 1, 3, 2, {"b"});
  ExpectError(OpenGgufModel(p1), ErrorKind::kFormat,
              {"split part 2 of 2", "split.count is 3, expected 2"});
  // split.no wrong in the other part.
  WritePart(p2, 0, 2, 2, {"b"});
  ExpectError(OpenGgufModel(p1), ErrorKind::kFormat, {"split part 2 of 2", "split.no is 0"});
  // The given part's own split.no disagrees with its name.
  ExpectError(OpenGgufModel(p2), ErrorKind::kFormat, {"name says part 2", "split.no is 0"});
  // Tensor total disagrees.
  WritePart(p2, 1, 2, 3, {"b"});
  ExpectError(OpenGgufModel(p1), ErrorKind::kFormat,
              {"split.tensors.count is 3 but part 1 says 2"});
  WritePart(p1, 0, 2, 3, {"a"});
  ExpectError(OpenGgufModel(p1), ErrorKind::kFormat, {"says the model has 3 tensors", "hold 2"});
  // The same tensor in two parts.
  WritePart(p1, 0, 2, 2, {"a"});
  WritePart(p2, 1, 2, 2, {"a"});
  ExpectError(OpenGgufModel(p1), ErrorKind::kFormat, {"tensor 'a' is also in part 1"});
  // Consistent at last.
  WritePart(p2, 1, 2, 2, {"b"});
  auto m = OpenGgufModel(p2);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->tensors.size(), 2u);
}

TEST(GgufSplitTest, ReportsRenamedParts) {
  TempDir dir;
  WritePart(dir.File("renamed.gguf"), 0, 2, 2, {"a"});
  ExpectError(OpenGgufModel(dir.File("renamed.gguf")), ErrorKind::kFormat,
              {"split.count is 2", "NAME-00001-of-00002.gguf"});
  WritePart(dir.File("m-00001-of-00003.gguf"), 0, 2, 2, {"a"});
  ExpectError(OpenGgufModel(dir.File("m-00001-of-00003.gguf")), ErrorKind::kFormat,
              {"name says 3 parts but split.count is 2"});
}

TEST(GgufSplitTest, WriteSplitValidatesAndCleansUp) {
  TempDir dir;
  GgufWriter w = SixTensorModel();
  EXPECT_FALSE(WriteGgufSplit(w, dir.File("m"), 0).ok());
  auto bad = WriteGgufSplit(w, dir.File("no/such/dir/m"), 2);
  ExpectError(bad, ErrorKind::kIo, {"writing split part 1 of 2"});
}

}  // namespace
}  // namespace moetune
