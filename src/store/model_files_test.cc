#include "store/model_files.h"

#include <gtest/gtest.h>

#include "store/stores_test_util.h"

namespace moetune {
namespace {

using testing::TempDir;

TEST(ModelFilesTest, FileNameTagFollowsLlamaCpp) {
  EXPECT_EQ(FileNameTag("Qwen3-30B-A3B-Q4_K_M.gguf"), "Q4_K_M");
  EXPECT_EQ(FileNameTag("models/model.q8_0.gguf"), "Q8_0");
  EXPECT_EQ(FileNameTag("Q4_K_M/Qwen3-30B-A3B-UD-Q4_K_XL-00001-of-00003.gguf"), "Q4_K_XL");
  EXPECT_EQ(FileNameTag("gpt-oss-120b-MXFP4-00002-of-00002.GGUF"), "MXFP4");
  EXPECT_EQ(FileNameTag("model.gguf"), "");
  EXPECT_EQ(FileNameTag("model Q4.gguf"), "");
  EXPECT_EQ(FileNameTag("Q4_K_M.bin"), "");
}

TEST(ModelFilesTest, QuantPicksByNameAsLlamaCppDoesWithoutPartialMatches) {
  EXPECT_TRUE(FileMatchesQuant("Q4_K_M/Qwen3-Q4_K_M-00001-of-00002.gguf", "q4_k_m"));
  EXPECT_TRUE(FileMatchesQuant("Qwen3-30B-A3B-UD-Q4_K_XL.gguf", "Q4_K_XL"));
  EXPECT_TRUE(FileMatchesQuant("qwen3.Q8_0.gguf", "Q8_0"));
  EXPECT_FALSE(FileMatchesQuant("Qwen3-Q4_K_M.gguf", "Q4_K")) << "Q4_K is not Q4_K_M";
  EXPECT_FALSE(FileMatchesQuant("Qwen3-IQ4_XS.gguf", "Q4_XS")) << "Q4_XS is not IQ4_XS";
  EXPECT_TRUE(FileMatchesQuant("anything.gguf", ""));
}

TEST(ModelFilesTest, CompanionFilesAreNotModels) {
  EXPECT_TRUE(IsModelFileName("Qwen3-30B-A3B-Q4_K_M.gguf"));
  EXPECT_FALSE(IsModelFileName("mmproj-F16.gguf"));
  EXPECT_FALSE(IsModelFileName("dir/Qwen2.5-VL-7B-MMPROJ-f16.gguf"));
  EXPECT_FALSE(IsModelFileName("imatrix_unsloth.gguf"));
  EXPECT_TRUE(HasGgufExtension("a.GGUF"));
  EXPECT_FALSE(HasGgufExtension(".gguf"));
}

TEST(ModelFilesTest, SplitPartsBecomeOneModelAndAMissingPartIsNamed) {
  TempDir dir;
  for (int i = 1; i <= 3; ++i) {
    testing::WriteText(dir.File(fmt::format("q/M-Q4_K_M-0000{}-of-00003.gguf", i)), "x");
  }
  testing::WriteText(dir.File("N-Q8_0-00001-of-00002.gguf"), "xy");
  testing::WriteText(dir.File("single.gguf"), "xyz");
  StoredModel proto;
  proto.name = "org/repo";
  const auto models = GroupModelFiles(
      dir.path(),
      {"N-Q8_0-00001-of-00002.gguf", "q/M-Q4_K_M-00001-of-00003.gguf",
       "q/M-Q4_K_M-00002-of-00003.gguf", "q/M-Q4_K_M-00003-of-00003.gguf", "single.gguf"},
      proto);
  ASSERT_EQ(models.size(), 3u);
  const StoredModel& n = models[0];
  EXPECT_EQ(n.file, "N-Q8_0-00001-of-00002.gguf");
  EXPECT_EQ(n.problem, EntryProblem::kMissingPart);
  EXPECT_NE(n.problem_message.find("split part 2 of 2 is missing: expected " +
                                   dir.File("N-Q8_0-00002-of-00002.gguf")),
            std::string::npos)
      << n.problem_message;
  const StoredModel& m = models[1];
  EXPECT_EQ(m.file, "q/M-Q4_K_M-00001-of-00003.gguf");
  EXPECT_EQ(m.path, dir.File("q/M-Q4_K_M-00001-of-00003.gguf"));
  EXPECT_EQ(m.name, "org/repo");
  EXPECT_EQ(m.tag, "Q4_K_M");
  EXPECT_EQ(m.parts.size(), 3u);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_TRUE(m.usable());
  EXPECT_EQ(models[2].file, "single.gguf");
  EXPECT_EQ(models[2].size(), 3u);
}

TEST(ModelFilesTest, FindModelFilesSurvivesLinkLoopsAndStopsAtItsLimits) {
  TempDir dir;
  testing::WriteText(dir.File("a/b/model-Q4_0.gguf"), "x");
  testing::WriteText(dir.File("a/mmproj-model.gguf"), "x");
  testing::WriteText(dir.File("a/notes.txt"), "x");
  testing::Link("..", dir.File("a/b/up"));  // a loop back to a/
  bool truncated = true;
  EXPECT_EQ(FindModelFiles(dir.path(), 8, 1000, &truncated),
            std::vector<std::string>{"a/b/model-Q4_0.gguf"});
  EXPECT_FALSE(truncated);
  EXPECT_TRUE(FindModelFiles(dir.path(), 1, 1000, &truncated).empty());
  EXPECT_TRUE(truncated);
  FindModelFiles(dir.path(), 8, 2, &truncated);
  EXPECT_TRUE(truncated);
}

}  // namespace
}  // namespace moetune
