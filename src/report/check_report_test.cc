#include "report/check_report.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

PlanCheck Sample(bool context_ok) {
  PlanCheck c;
  c.n_cpu_moe = 4;
  c.ngl = 99;
  c.device_kind = "RPC";
  CheckRow r;
  r.device = "RPC0";
  r.side = "gpu";
  r.predicted_model = r.engine_model = 100 << 20;
  r.predicted_context = 10 << 20;
  r.engine_context = context_ok ? 10 << 20 : 11 << 20;
  r.predicted_compute = r.engine_compute = 50 << 20;
  r.model_ok = r.compute_ok = true;
  r.context_ok = context_ok;
  c.rows.push_back(r);
  return c;
}

TEST(CheckReport, DisagreementIsMarkedInBothFormats) {
  const PlanCheck bad = Sample(/*context_ok=*/false);
  const std::string text = PlanCheckText(bad);
  EXPECT_NE(text.find(" !"), std::string::npos) << text;
  EXPECT_NE(text.find("Agreement: NO"), std::string::npos) << text;
  EXPECT_NE(text.find("context 1%, compute 15%"), std::string::npos) << text;
  const auto j = PlanCheckJson(bad);
  EXPECT_FALSE(j["agrees"].get<bool>());
  EXPECT_FALSE(j["devices"][0]["context"]["within_tolerance"].get<bool>());
  EXPECT_EQ(j["devices"][0]["context"]["difference_bytes"].get<int64_t>(), -(1 << 20));
  EXPECT_DOUBLE_EQ(j["tolerances"]["compute"].get<double>(), kCheckComputeTolerance);
}

TEST(CheckReport, TheHeadNamesTheCheckedPlacementsFlags) {
  PlanCheck c = Sample(/*context_ok=*/true);
  c.placement.n_cpu_moe = -1;
  c.placement.devices = {{"RPC0", 20}, {"RPC1", 29}};
  const std::string text = PlanCheckText(c);
  EXPECT_NE(text.find("-dev RPC0,RPC1 -ts 20,29"), std::string::npos) << text;
  EXPECT_EQ(text.find("--n-cpu-moe"), std::string::npos) << text;
}

TEST(CheckReport, AgreementSaysSo) {
  const PlanCheck good = Sample(/*context_ok=*/true);
  EXPECT_NE(PlanCheckText(good).find("within tolerance"), std::string::npos);
  EXPECT_EQ(PlanCheckText(good).find(" !"), std::string::npos);
  EXPECT_TRUE(PlanCheckJson(good)["agrees"].get<bool>());
}

}  // namespace
}  // namespace moetune
