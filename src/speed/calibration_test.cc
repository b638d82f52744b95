#include "speed/calibration.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace moetune {
namespace {

TEST(CalibrationRecord, RoundTripsThroughJson) {
  CalibrationRecord r;
  r.constants.cpu_matmul_efficiency = 0.33;
  r.constants.thread_efficiency_decode = -0.4;  // a loaded machine
  r.fitted = {"cpu_matmul_efficiency", "thread_efficiency_decode"};
  r.created_at = "2026-12-01T00:00:00Z";
  r.engine_version = "version: 0.7.0 (build 11669, commit Debian)";
  r.engine_build = 11669;
  r.model_path = "/m.gguf";
  r.median_error = 0.04;
  CalibrationPoint p;
  p.label = "pp256";
  p.measured_tps = 100;
  p.predicted_tps = 97;
  p.spread = 0.08;
  p.rounds = 2;
  p.unstable = true;
  r.points.push_back(p);
  r.uncertainty.held_out_folds = 9;
  r.uncertainty.held_out_prefill = 0.07;
  r.uncertainty.held_out_decode = 0.12;
  r.uncertainty.spread_max = 0.08;
  r.uncertainty.other_cores_max = 0.3;
  auto back = CalibrationRecordFromJson(CalibrationRecordToJson(r));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_DOUBLE_EQ(back->constants.cpu_matmul_efficiency, 0.33);
  EXPECT_DOUBLE_EQ(back->constants.thread_efficiency_decode, -0.4);
  EXPECT_EQ(back->fitted, r.fitted);
  EXPECT_EQ(back->engine_build, 11669);
  ASSERT_EQ(back->points.size(), 1u);
  EXPECT_DOUBLE_EQ(back->points[0].predicted_tps, 97);
  EXPECT_DOUBLE_EQ(back->points[0].spread, 0.08);
  EXPECT_EQ(back->points[0].rounds, 2);
  EXPECT_TRUE(back->points[0].unstable);
  EXPECT_EQ(back->uncertainty.held_out_folds, 9);
  EXPECT_DOUBLE_EQ(back->uncertainty.held_out_prefill, 0.07);
  EXPECT_DOUBLE_EQ(back->uncertainty.held_out_decode, 0.12);
  EXPECT_DOUBLE_EQ(back->uncertainty.spread_max, 0.08);
  EXPECT_EQ(back->uncertainty.other_cores_max, 0.3);
  // A record written before the check has none (folds 0) and no load figure.
  auto j = CalibrationRecordToJson(r);
  j.erase("uncertainty");
  auto old = CalibrationRecordFromJson(j);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->uncertainty.held_out_folds, 0);
  EXPECT_FALSE(old->uncertainty.other_cores_max.has_value());
  // A mistyped field is named.
  j["uncertainty"] = {{"held_out_decode", "high"}};
  auto bad = CalibrationRecordFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("held_out_decode"), std::string::npos)
      << bad.error().message();
}

TEST(CalibrationConstants, MissingKeysKeepDefaultsAndBadValuesNameTheKey) {
  auto c = CalibrationConstantsFromJson({{"cpu_bw_efficiency", 0.5}, {"unknown_key", 3}});
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->cpu_bw_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(c->handover_us, CalibrationConstants{}.handover_us);
  for (const auto& bad : {nlohmann::json{{"handover_us", -1}}, nlohmann::json{{"handover_us", "x"}},
                          nlohmann::json{{"thread_efficiency_prefill", -3}}}) {
    auto r = CalibrationConstantsFromJson(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find(bad.begin().key()), std::string::npos);
  }
  EXPECT_FALSE(CalibrationRecordFromJson(nlohmann::json::array()).ok());
  EXPECT_FALSE(CalibrationRecordFromJson({{"constants", 3}}).ok());
}

TEST(CalibrationRecord, MistypedFieldsAreNamedNeverThrown) {
  CalibrationRecord r;
  r.points.push_back(CalibrationPoint{});
  const nlohmann::json good = CalibrationRecordToJson(r);
  // value() threw on these, and 1e300 as an int was undefined behaviour.
  for (const auto& [key, value, field] :
       std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
           {"/points/0/threads", 1e300, "calibration.points[0].threads"},
           {"/points/0/threads", "four", "calibration.points[0].threads"},
           {"/points/0/measured_tps", -3, "calibration.points[0].measured_tps"},
           {"/engine_build", "11669", "calibration.engine_build"},
           {"/fitted", "all", "calibration.fitted"},
           {"/points", 7, "calibration.points"}}) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(key)] = value;
    auto back = CalibrationRecordFromJson(j);
    ASSERT_FALSE(back.ok()) << key;
    EXPECT_NE(back.error().message().find("'" + field + "'"), std::string::npos)
        << back.error().message();
    EXPECT_NE(back.error().message().find("moetune calibrate"), std::string::npos);
  }
}

}  // namespace
}  // namespace moetune
