#include "watch/tuned_file.h"

#include <gtest/gtest.h>

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
      R"({"command":["llama-server","-m","m.gguf","--n-cpu-moe","7"],"analysis":{"curves":[]}})",
      "tune.json");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->kind, "tune");
  ASSERT_TRUE(f->command_argv && f->analysis);
  EXPECT_EQ(f->command_argv->back(), "7");
}

TEST(TunedFileTest, AnalyzeJsonGivesTheBaseline) {
  auto f = LoadTunedFile(testing::WatchFixture("tiny16k-analysis.json"));
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->kind, "analyze");
  EXPECT_FALSE(f->command_argv);
  ASSERT_TRUE(f->analysis);
  EXPECT_TRUE((*f->analysis)["curves"].is_array());
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
