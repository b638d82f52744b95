#include "watch/tuned_file.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "util/temp_dir_test_util.h"
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

namespace moetune {
namespace {

TEST(ForeignTuneTest, SimulatedOtherMachineAndOtherEngineAreNamed) {
  const std::string here = "AMD Ryzen 7 (16 logical CPUs, 8 physical cores)";
  const std::string version = "version: 0.7.0 (build 11669, commit Debian)";
  TuneOrigin made_here{false, version + " at /opt/llama", here};
  EXPECT_TRUE(ForeignTuneChecks(made_here, here, version).empty());
  // Unknown here: nothing to compare with.
  EXPECT_TRUE(ForeignTuneChecks(made_here, "", "").empty());

  TuneOrigin sim{true, "moetune simulated engine", "SIMULATED RTX 4070"};
  auto s = ForeignTuneChecks(sim, here, version);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].kind, ForeignTuneKind::kSimulated);
  EXPECT_NE(s[0].Describe().find("simulated engine (SIMULATED RTX 4070)"), std::string::npos)
      << s[0].Describe();

  TuneOrigin other{false, "version: 0.4.0 (build 1, commit x) at /usr/bin", "Intel i9 (32, 24)"};
  auto o = ForeignTuneChecks(other, here, version);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].kind, ForeignTuneKind::kOtherMachine);
  EXPECT_EQ(o[1].kind, ForeignTuneKind::kOtherEngine);
  EXPECT_NE(o[1].Describe().find("0.4.0"), std::string::npos) << o[1].Describe();
  EXPECT_NE(o[1].Describe().find("0.7.0"), std::string::npos) << o[1].Describe();
}

TEST(ForeignTuneTest, ATuneFileCarriesItsOrigin) {
  auto f = ParseTunedFile(
      R"({"command":["llama-server","-m","m.gguf"],"simulated":true,
          "engine":"moetune simulated engine","machine":"SIMULATED RTX 4070"})",
      "t.json");
  ASSERT_TRUE(f.ok()) << f.error().message();
  ASSERT_TRUE(f->origin);
  EXPECT_TRUE(f->origin->simulated);
  EXPECT_EQ(f->origin->machine, "SIMULATED RTX 4070");
  // A plan file has none: it was never measured.
  auto plan = ParseTunedFile(R"({"command_argv":["llama-server","-m","m.gguf"]})", "p.json");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->origin);
}

}  // namespace
}  // namespace moetune
