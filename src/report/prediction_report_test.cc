#include "report/prediction_report.h"

#include <gtest/gtest.h>

#include "report/command_documents.h"
#include "report/html_document.h"
#include "report/markdown_document.h"
#include "report/uncertainty_report.h"
#include "speed/plan_prediction.h"
#include "speed/speed_test_util.h"

namespace moetune {
namespace {

// The JSON and text exporters of a plan prediction (the prediction itself is
// tested in speed/plan_prediction_test.cc).
TEST(PredictionReport, JsonAndTextNameTheBestSafeOption) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const MachineSpec spec = PresetMachine("rtx4070-12g,ddr5-6000-2ch,8c16t");
  PlanRequest req;
  req.vram_free = spec.accel()->vram_free;
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

// Every uncalibrated prediction shows its band, the word "uncalibrated" and how
// to calibrate, in text, JSON and the report; a calibrated one says so.
TEST(PredictionReport, EveryOutputFormShowsTheBand) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const MachineSpec spec = PresetMachine("rtx4070-12g,ddr5-6000-2ch,8c16t");
  PlanRequest req;
  req.vram_free = spec.accel()->vram_free;
  req.ctx.n_ctx = 32768;
  const Plan plan = PlanPlacement(m.gguf, m.arch, m.weights, req).value();
  auto p = PredictPlan(m, plan, req, spec, CalibrationConstants{});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->best.has_value());
  const PredictionUncertainty u = UncalibratedUncertainty();
  ASSERT_FALSE(p->uncertainty.calibrated);
  ASSERT_LE(u.prefill.low, 1.0);
  ASSERT_GT(u.prefill.high, 1.0);
  ASSERT_LT(u.decode.low, 1.0);
  ASSERT_GT(u.decode.high, 1.0);
  const auto& best = p->options[*p->best];
  const std::string pp_range = BandRange(best.target.prefill.tokens_per_second, u.prefill);
  const std::string tg_range = BandRange(best.target.decode.tokens_per_second, u.decode);

  // Text.
  const std::string text = PlanPredictionText(plan, *p);
  EXPECT_NE(text.find("uncalibrated"), std::string::npos) << text;
  EXPECT_NE(text.find(pp_range), std::string::npos) << text;
  EXPECT_NE(text.find(tg_range), std::string::npos) << text;
  EXPECT_NE(text.find("moetune calibrate MODEL"), std::string::npos) << text;
  EXPECT_NE(text.find("--measurements"), std::string::npos) << text;

  // JSON: the plan's prediction, every option and the best.
  nlohmann::json j = {{"options", nlohmann::json::array()}};
  for (size_t i = 0; i < plan.options.size(); ++i) j["options"].push_back(nlohmann::json::object());
  AddPlanPredictionJson(plan, *p, &j);
  const auto& uj = j["prediction"]["uncertainty"];
  EXPECT_EQ(uj["calibrated"], false);
  EXPECT_DOUBLE_EQ(uj["prefill_band"][0].get<double>(), u.prefill.low);
  EXPECT_DOUBLE_EQ(uj["decode_band"][1].get<double>(), u.decode.high);
  EXPECT_NE(uj["how_to_calibrate"].get<std::string>().find("moetune calibrate"), std::string::npos);
  const auto& oj = j["options"][*p->best]["predicted"];
  EXPECT_EQ(oj["calibrated"], false);
  EXPECT_DOUBLE_EQ(oj["prefill_tps_range"][0].get<double>(),
                   best.depth0.prefill.tokens_per_second * u.prefill.low);
  EXPECT_DOUBLE_EQ(j["predicted_best"]["decode_tps_range"][1].get<double>(),
                   best.target.decode.tokens_per_second * u.decode.high);

  // The report (Markdown and HTML): the predicted curve's table and caption.
  PlanDocumentExtras extras;
  for (const auto& o : p->options) {
    if (o.target.loads)
      extras.predicted.push_back(
          {o.n_cpu_moe, o.target.prefill.tokens_per_second, o.target.decode.tokens_per_second});
  }
  extras.uncertainty = p->uncertainty;
  const Report doc = PlanDocument(m, plan, req, extras);
  for (const std::string& out : {RenderMarkdown(doc), RenderHtml(doc)}) {
    EXPECT_NE(out.find("uncalibrated " + pp_range), std::string::npos);
    EXPECT_NE(out.find("uncalibrated " + tg_range), std::string::npos);
    EXPECT_NE(out.find("moetune calibrate MODEL"), std::string::npos);
  }

  // Calibrated constants say so and drop the advice.
  CalibrationRecord rec;
  rec.hostname = "box";
  rec.created_at = "2026-12-01T00:00:00Z";
  rec.median_error = 0.04;
  rec.points.resize(9);
  PlanPredictionOptions o;
  o.uncertainty = CalibratedUncertainty(rec);
  auto c = PredictPlan(m, plan, req, spec, CalibrationConstants{}, o);
  ASSERT_TRUE(c.ok());
  const std::string ctext = PlanPredictionText(plan, *c);
  EXPECT_EQ(ctext.find("uncalibrated"), std::string::npos) << ctext;
  EXPECT_NE(ctext.find("calibrated (calibrated on box"), std::string::npos) << ctext;
  nlohmann::json cj = {{"options", nlohmann::json::array()}};
  AddPlanPredictionJson(plan, *c, &cj);
  EXPECT_EQ(cj["prediction"]["uncertainty"]["calibrated"], true);
  EXPECT_FALSE(cj["prediction"]["uncertainty"].contains("how_to_calibrate"));
}

}  // namespace
}  // namespace moetune
