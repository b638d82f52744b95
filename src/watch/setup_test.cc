#include "watch/setup.h"

#include <gtest/gtest.h>

#include "speed/speed_test_util.h"
#include "tune/tune_reader.h"

namespace moetune {
namespace {

const std::vector<std::string> kCommand = {
    "llama-server", "-m", "m.gguf", "-ngl", "99", "--n-cpu-moe", "30", "-c", "8192", "-fit", "off"};

TunedFile Tuned(bool analysis, bool prediction) {
  TunedFile f;
  f.path = "tuned.json";
  f.command_argv = kCommand;
  if (analysis) {
    f.analysis = AnalysisFromJson(nlohmann::json{{"curves",
                                                  {{{"depth", 0},
                                                    {"points",
                                                     {{{"n_cpu_moe", 30},
                                                       {"prefill_tps", {{"mean", 300.0}}},
                                                       {"decode_tps", {{"mean", 20.0}}}}}}}}}})
                     .value();
  }
  if (prediction) {
    f.prediction = nlohmann::json{
        {"prediction", {{"calibrated", true}}},
        {"options",
         {{{"n_cpu_moe", 30},
           {"predicted", {{"loads", true}, {"prefill_tps", 600.0}, {"decode_tps", 30.0}}}}}}};
  }
  return f;
}

ServerPredictor Predictor() {
  ServerPredictor p;
  p.model = std::make_shared<const ModelInfo>(SynthModelInfo("qwen3moe"));
  p.machine = PresetMachine("rtx4070-12g,ddr5-6000-2ch,8c16t");
  return p;
}

TEST(SetupTest, MeasuredThenPlannedPredictionThenTheSpeedModelThenNothing) {
  const ServerPredictor p = Predictor();
  std::vector<std::string> notes;
  auto measured = BaselineFor(Tuned(true, true), 30, kCommand, &p, &notes);
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->Kind(), "measured");
  auto planned = BaselineFor(Tuned(false, true), 30, kCommand, &p, &notes);
  ASSERT_TRUE(planned);
  EXPECT_EQ(planned->Kind(), "predicted");
  EXPECT_DOUBLE_EQ(*planned->At(0).prefill_tps, 600.0 / kPredictionTolerance);
  auto model = BaselineFor(Tuned(false, false), 30, kCommand, &p, &notes);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->Kind(), "predicted");
  EXPECT_NE(model->Describe().find("speed model"), std::string::npos);
  EXPECT_FALSE(BaselineFor(Tuned(false, false), 30, kCommand, nullptr, &notes));
  EXPECT_FALSE(BaselineFor(std::nullopt, 30, {}, &p, &notes));
  EXPECT_TRUE(notes.empty());
}

TEST(SetupTest, AnUnpredictableCommandIsANoteNotAFailure) {
  const ServerPredictor p = Predictor();
  std::vector<std::string> notes;
  EXPECT_FALSE(
      BaselineFor(std::nullopt, std::nullopt, {"llama-server", "-m", "m.gguf"}, &p, &notes));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("--fit"), std::string::npos) << notes[0];
}

}  // namespace
}  // namespace moetune
