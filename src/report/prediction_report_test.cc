#include "report/prediction_report.h"

#include <gtest/gtest.h>

#include "speed/plan_prediction.h"
#include "speed/test_speed.h"

namespace moetune {
namespace {

// The JSON and text exporters of a plan prediction (the prediction itself is
// tested in speed/plan_prediction_test.cc).
TEST(PredictionReport, JsonAndTextNameTheBestSafeOption) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const MachineSpec spec = PresetMachine("rtx4070-12g,ddr5-6000-2ch,8c16t");
  PlanRequest req;
  req.vram_free = spec.accel->vram_free;
  req.ctx.n_ctx = 32768;
  const Plan plan = PlanPlacement(m.gguf, m.arch, m.weights, req).value();
  auto p = PredictPlan(m, plan, req, spec, CalibrationConstants{});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->best.has_value());
  const auto& best = p->options[*p->best];
  nlohmann::json j = {{"options", nlohmann::json::array()}};
  for (size_t i = 0; i < plan.options.size(); ++i) j["options"].push_back(nlohmann::json::object());
  AddPlanPredictionJson(plan, *p, &j);
  const auto& pj = j["options"][*p->best]["predicted"];
  EXPECT_GT(pj["prefill_tps"].get<double>(), 0);
  EXPECT_GT(pj["decode_tps"].get<double>(), 0);
  EXPECT_TRUE(pj["binding"].is_string());
  EXPECT_EQ(j["predicted_best"]["n_cpu_moe"], best.n_cpu_moe);
  EXPECT_NE(PlanPredictionText(plan, *p).find("predicted best safe"), std::string::npos);
}

}  // namespace
}  // namespace moetune
