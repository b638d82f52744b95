#include "watch/prediction.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "speed/speed_test_util.h"

namespace moetune {
namespace {

const ModelInfo& Qwen3() {
  static const ModelInfo m = SynthModelInfo("qwen3moe");
  return m;
}

ServerPredictor Predictor(const std::string& machine) {
  ServerPredictor p;
  p.model = std::make_shared<const ModelInfo>(Qwen3());
  p.machine = PresetMachine(machine);
  return p;
}

TEST(PredictionTest, RunSettingsFollowTheServersFlags) {
  const auto s = SettingsFromArgv({"llama-server",
                                   "-m",
                                   "x.gguf",
                                   "-ngl",
                                   "99",
                                   "-ncmoe",
                                   "12",
                                   "-ot",
                                   "blk\\.12\\.ffn_up_exps=CPU",
                                   "-c",
                                   "16384",
                                   "-np",
                                   "2",
                                   "-ub",
                                   "1024",
                                   "-b",
                                   "4096",
                                   "-ctk",
                                   "q8_0",
                                   "-ctv",
                                   "q8_0",
                                   "-fa",
                                   "off",
                                   "-t",
                                   "6",
                                   "--no-mmap",
                                   "--no-op-offload"});
  auto r = RunSettingsFromServer(s, Qwen3());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->n_gpu_layers, 99);
  EXPECT_EQ(r->n_cpu_moe, 12);
  EXPECT_EQ(r->override_tensor, "blk\\.12\\.ffn_up_exps=CPU");
  EXPECT_EQ(r->n_ctx, 16384);
  EXPECT_EQ(r->n_seq, 2);
  EXPECT_FALSE(r->kv_unified);
  EXPECT_EQ(r->n_ubatch, 1024);
  EXPECT_EQ(r->n_batch, 4096);
  EXPECT_EQ(r->type_k, 8u);  // q8_0
  EXPECT_EQ(r->type_v, 8u);
  EXPECT_FALSE(r->flash_attn);
  EXPECT_EQ(r->threads, 6);
  EXPECT_TRUE(r->pinned);
  EXPECT_FALSE(r->op_offload);
}

// 0.7.0's -lm replaces --no-mmap: the modes that read weights into buffers
// are pinned, the memory-mapped ones are not.
TEST(PredictionTest, LoadModeSaysWhetherHostWeightsArePinned) {
  for (const auto& [mode, pinned] : std::vector<std::pair<std::string, bool>>{
           {"none", true}, {"dio", true}, {"mlock", true}, {"mmap", false}, {"auto", false}}) {
    auto r = RunSettingsFromServer(
        SettingsFromArgv({"llama-server", "-m", "x.gguf", "-ngl", "99", "--load-mode", mode}),
        Qwen3());
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->pinned, pinned) << mode;
  }
  auto lm = SettingsFromArgv({"llama-server", "-m", "x.gguf", "-lm", "none"});
  EXPECT_EQ(lm.config.load_mode, LoadMode::kNone);
}

TEST(PredictionTest, LlamaServersDefaultsFillTheRest) {
  auto r = RunSettingsFromServer(
      SettingsFromArgv({"llama-server", "-m", "x.gguf", "--cpu-moe", "-np", "-1"}), Qwen3());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->n_gpu_layers, -1);  // every layer
  EXPECT_EQ(r->n_cpu_moe, 48);     // --cpu-moe: every layer's experts
  EXPECT_EQ(r->n_ctx, Qwen3().arch.hp.n_ctx_train);
  EXPECT_EQ(r->n_seq, 4);  // automatic slots share one cache
  EXPECT_TRUE(r->kv_unified);
  EXPECT_EQ(r->n_ubatch, 512);
  EXPECT_TRUE(r->flash_attn);
  EXPECT_TRUE(r->op_offload);
}

TEST(PredictionTest, WhatCannotBePredictedIsSaid) {
  struct Case {
    std::vector<std::string> argv;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"llama-server", "-m", "x.gguf"}, "--fit"},
      {{"llama-server", "-m", "x.gguf", "-ngl", "lots"}, "-ngl 'lots' is not a whole number"},
      {{"llama-server", "-m", "x.gguf", "-ncmoe", "-3"}, "--n-cpu-moe '-3' is negative"},
      {{"llama-server", "-m", "x.gguf", "-ncmoe", "3", "-ctk", "q9_z"}, "-ctk 'q9_z'"},
      {{"llama-server", "-m", "x.gguf", "-ncmoe", "3", "-c", "1e9"}, "-c '1e9'"},
  };
  for (const auto& c : cases) {
    auto r = RunSettingsFromServer(SettingsFromArgv(c.argv), Qwen3());
    ASSERT_FALSE(r.ok()) << c.needle;
    EXPECT_NE(r.error().message().find(c.needle), std::string::npos) << r.error().message();
  }
  // -fit off with no placement flag: llama.cpp's default placement (every layer).
  EXPECT_TRUE(
      RunSettingsFromServer(SettingsFromArgv({"llama-server", "-m", "x", "-fit", "off"}), Qwen3())
          .ok());
}

TEST(PredictionTest, TheBaselineIsTheSpeedModelAtTheServersDepths) {
  const ServerPredictor p = Predictor("rtx4070-12g,ddr5-6000-2ch,8c16t");
  const auto argv = SettingsFromArgv({"llama-server", "-m", "x.gguf", "-ngl", "99", "--n-cpu-moe",
                                      "30", "-c", "32768", "-np", "1", "-t", "8", "-fit", "off"});
  std::vector<std::string> notes;
  auto b = PredictServer(p, argv, std::nullopt, &notes);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(notes.empty());
  EXPECT_NE((*b)->Describe().find("--n-cpu-moe 30"), std::string::npos);
  EXPECT_NE((*b)->Describe().find("default constants"), std::string::npos);
  // The same figures as the speed model itself: pp512 (one full micro-batch)
  // and decode, at depth 0 and at the whole context.
  const SpeedModel sm(Qwen3(), p.machine);
  for (int depth : {0, 32768}) {
    RunSettings r = Prefill(30, depth);
    r.n_ctx = 32768;
    r.n_gen = 2;
    r.kv_unified = false;
    const SpeedPrediction want = MustPredict(sm, r);
    const ExpectedSpeed got = (*b)->Predicted(depth);
    ASSERT_TRUE(got.prefill_tps && got.decode_tps);
    EXPECT_NEAR(*got.prefill_tps, want.prefill.tokens_per_second,
                1e-6 * want.prefill.tokens_per_second);
    EXPECT_NEAR(*got.decode_tps, want.decode.tokens_per_second,
                1e-6 * want.decode.tokens_per_second);
    EXPECT_NEAR(*(*b)->At(depth).prefill_tps, *got.prefill_tps / kPredictionTolerance, 1e-9);
  }
  EXPECT_GT(*(*b)->Predicted(0).prefill_tps, *(*b)->Predicted(32768).prefill_tps);
  // After serve --apply: the prediction for the new N (slower: more on the CPU).
  auto moved = PredictServer(p, argv, 40, nullptr);
  ASSERT_TRUE(moved.ok());
  EXPECT_LT(*(*moved)->Predicted(0).decode_tps, *(*b)->Predicted(0).decode_tps);
}

TEST(PredictionTest, APlacementThatSpillsIsExpectedAtItsInVramSpeedWithANote) {
  // On a 12 GB card with 4 GiB held by others, all experts on the GPU spill.
  ServerPredictor p = Predictor("rtx4070-12g,ddr5-6000-2ch,8c16t");
  p.machine.reserve = int64_t{4} << 30;
  const ServerPredictor roomy = Predictor("rtx4070-12g,ddr5-6000-2ch,8c16t");
  const auto argv = SettingsFromArgv(
      {"llama-server", "-m", "x.gguf", "-ngl", "99", "--n-cpu-moe", "0", "-c", "8192"});
  std::vector<std::string> notes;
  auto b = PredictServer(p, argv, std::nullopt, &notes);
  ASSERT_TRUE(b.ok()) << b.error().message();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("more than the GPU's free memory"), std::string::npos) << notes[0];
  auto r = PredictServer(roomy, argv, std::nullopt, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(*(*b)->Predicted(4096).prefill_tps, *(*r)->Predicted(4096).prefill_tps, 1e-6);
}

nlohmann::json PlanJson() {
  using nlohmann::json;
  auto option = [](int n, json predicted) {
    return json{{"n_cpu_moe", n}, {"ngl", 99}, {"predicted", predicted}};
  };
  return json{
      {"command_argv", {"llama-server", "-m", "m.gguf", "--n-cpu-moe", "10"}},
      {"prediction",
       {{"machine", "what-if (RTX 4070)"}, {"target_depth", 16000}, {"calibrated", true}}},
      {"options",
       {option(10, {{"loads", false}, {"failure", "cudaMalloc failed"}}),
        option(
            11,
            {{"loads", true}, {"prefill_tps", 900.0}, {"decode_tps", 40.0}, {"spill_bytes", 100}}),
        option(12,
               {{"loads", true},
                {"prefill_tps", 800.0},
                {"decode_tps", 36.0},
                {"spill_bytes", 0},
                {"at_target", {{"loads", true}, {"prefill_tps", 400.0}, {"decode_tps", 24.0}}}}),
        option(13, {{"loads", true}, {"prefill_tps", 700.0}, {"decode_tps", 33.0}})}}};
}

TEST(PredictionTest, PlanPredictionsGiveTheCurveAtTheServersN) {
  std::vector<std::string> notes;
  auto b = BaselineFromPlanPrediction(PlanJson(), 12, "plan.json", &notes);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(notes.empty());
  EXPECT_DOUBLE_EQ(*(*b)->Predicted(0).prefill_tps, 800);
  EXPECT_DOUBLE_EQ(*(*b)->Predicted(16000).decode_tps, 24);
  EXPECT_NE((*b)->Describe().find("what-if (RTX 4070)"), std::string::npos);
  // N = 10 does not load and 11 spills: the nearest usable at or above is 12.
  auto n10 = BaselineFromPlanPrediction(PlanJson(), 10, "plan.json", &notes);
  ASSERT_TRUE(n10.ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("N=12"), std::string::npos) << notes[0];
  EXPECT_DOUBLE_EQ(*(*n10)->Predicted(0).prefill_tps, 800);
}

TEST(PredictionTest, FilesWithoutUsablePredictionsAreErrors) {
  EXPECT_FALSE(HasPlanPrediction(nlohmann::json{{"options", {{{"n_cpu_moe", 1}}}}}));
  EXPECT_FALSE(BaselineFromPlanPrediction(nlohmann::json::array(), 1, "x", nullptr).ok());
  auto j = PlanJson();
  j["options"] = {{{"n_cpu_moe", 3}, {"predicted", {{"loads", false}}}}};
  auto b = BaselineFromPlanPrediction(j, 3, "plan.json", nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("no predicted placement loads"), std::string::npos);
  // Default constants are not trusted.
  auto uncalibrated = PlanJson();
  uncalibrated["prediction"]["calibrated"] = false;
  auto u = BaselineFromPlanPrediction(uncalibrated, 12, "plan.json", nullptr);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message().find("moetune calibrate"), std::string::npos);
}

}  // namespace
}  // namespace moetune
