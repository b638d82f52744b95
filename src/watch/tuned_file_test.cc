#include "watch/tuned_file.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "util/test_temp_dir.h"
#include "watch/trace_test_util.h"

namespace moetune {
namespace {

TEST(TunedFileTest, PlanJsonGivesTheCommand) {
  auto f = ParseTunedFile(
      R"({"command":"llama-server -m m.gguf","command_argv":["llama-server","-m","m.gguf","--n-cpu-moe","3"],"n_cpu_moe":3})",
      "plan.json");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->kind, "plan");
  ASSERT_TRUE(f->command_argv);
  EXPECT_EQ(f->command_argv->size(), 5u);
  EXPECT_FALSE(f->analysis);
}

TEST(TunedFileTest, TuneJsonGivesCommandAndAnalysis) {
  auto f = ParseTunedFile(
      R"({"command":["llama-server","-m","m.gguf","--n-cpu-moe","7"],
          "analysis":{"curves":[{"depth":0,"points":[{"n_cpu_moe":7,
                                                      "prefill_tps":{"mean":90.5,"n":3}}]}]}})",
      "tune.json");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->kind, "tune");
  ASSERT_TRUE(f->command_argv && f->analysis);
  // The command is the pick's, written by the one command builder.
  const auto& argv = *f->command_argv;
  const auto n = std::find(argv.begin(), argv.end(), "--n-cpu-moe");
  ASSERT_TRUE(n != argv.end() && n + 1 != argv.end());
  EXPECT_EQ(*(n + 1), "7");
  ASSERT_EQ(f->analysis->curves.size(), 1u);
  ASSERT_EQ(f->analysis->curves[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(f->analysis->curves[0].points[0].prefill->mean, 90.5);
  // Without curves the file still gives its command, and no baseline.
  auto bare = ParseTunedFile(R"({"command":["llama-server","-m","m.gguf","--n-cpu-moe","7"]})",
                             "tune.json");
  ASSERT_TRUE(bare.ok()) << bare.error().message();
  EXPECT_TRUE(bare->command_argv);
  EXPECT_FALSE(bare->analysis);
  // A tune file is read whole: a field of the wrong type is named.
  auto bad =
      ParseTunedFile(R"({"command":["llama-server","-m","m.gguf"],"ctx":"long"})", "tune.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("ctx"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("tune.json"), std::string::npos) << bad.error().message();
}

TEST(TunedFileTest, AnalyzeJsonGivesTheBaseline) {
  auto f = LoadTunedFile(testing::WatchFixture("tiny16k-analysis.json"));
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->kind, "analyze");
  EXPECT_FALSE(f->command_argv);
  ASSERT_TRUE(f->analysis);
  EXPECT_FALSE(f->analysis->curves.empty());
  EXPECT_FALSE(f->analysis->curves.front().points.empty());
}

TEST(TunedFileTest, PlanPredictJsonGivesThePrediction) {
  auto f = ParseTunedFile(
      R"({"command_argv":["llama-server","-m","m.gguf","--n-cpu-moe","3"],
          "prediction":{"target_depth":8000},
          "options":[{"n_cpu_moe":3,"predicted":{"loads":true,"prefill_tps":500,"decode_tps":30}}]})",
      "plan.json");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->kind, "plan");
  EXPECT_TRUE(f->command_argv);
  EXPECT_FALSE(f->analysis);
  ASSERT_TRUE(f->prediction);
  // Predicted speeds alone are a baseline to compare with.
  EXPECT_TRUE(
      ParseTunedFile(R"({"options":[{"n_cpu_moe":3,"predicted":{"loads":false}}]})", "p").ok());
}

TEST(TunedFileTest, BadFilesSayWhatIsExpected) {
  EXPECT_FALSE(ParseTunedFile("[]", "x").ok());
  EXPECT_FALSE(ParseTunedFile("not json", "x").ok());
  auto nothing = ParseTunedFile(R"({"model":"m"})", "x.json");
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.error().message().find("command_argv"), std::string::npos);
  EXPECT_FALSE(ParseTunedFile(R"({"command_argv":[]})", "x").ok());
  EXPECT_FALSE(ParseTunedFile(R"({"command_argv":["a",1]})", "x").ok());
  moetune::testing::TempDir dir;
  EXPECT_FALSE(LoadTunedFile(dir.path()).ok());
  EXPECT_EQ(LoadTunedFile(dir.File("absent")).error().kind(), ErrorKind::kNotFound);
}

}  // namespace
}  // namespace moetune
