#include "report/tune_reader.h"

#include <gtest/gtest.h>

#include <fstream>

#include "report/analysis_report.h"
#include "report/tune_document.h"
#include "report/tune_test_data.h"
#include "util/test_temp_dir.h"

namespace moetune {
namespace {

using nlohmann::json;

const TuneReport& Tune() {
  static const TuneReport t = testing::FakeGpuTune();
  return t;
}

TEST(TuneReader, RoundTripGivesTheSameJson) {
  const json written = TuneJson(Tune());
  auto read = TuneReportFromJson(written);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(TuneJson(*read), written);
  // What the report draws survives: the pick, the memory map, the comparison.
  EXPECT_EQ(read->result.best, Tune().result.best);
  EXPECT_EQ(read->Command(), Tune().Command());
  ASSERT_TRUE(read->result.memory.has_value());
  EXPECT_EQ(read->result.memory->gpu.total(), Tune().result.memory->gpu.total());
  EXPECT_EQ(read->reserve, Tune().reserve);
  ASSERT_TRUE(read->result.versus_defaults.has_value());
  EXPECT_EQ(read->result.versus_defaults->defaults, Tune().result.versus_defaults->defaults);
  EXPECT_EQ(VersusDefaultsMeasurements(*read).results.size(),
            VersusDefaultsMeasurements(Tune()).results.size());
  EXPECT_EQ(read->result.analysis.cliffs.size(), Tune().result.analysis.cliffs.size());
  EXPECT_EQ(read->result.analysis.shape, Tune().result.analysis.shape);
}

TEST(TuneReader, RenderedAgainTheReportIsTheSame) {
  auto read = TuneReportFromJson(TuneJson(Tune()));
  ASSERT_TRUE(read.ok());
  Report a = TuneDocument(Tune(), {"moetune"});
  Report b = TuneDocument(*read, {"moetune"});
  a.generator = b.generator = "";
  EXPECT_EQ(RenderReport(a, ReportFormat::kMarkdown), RenderReport(b, ReportFormat::kMarkdown));
}

// Tunes saved before the pick and the defaults carried every setting: what
// they lack is taken from the measurements that agree with them.
TEST(TuneReader, OlderTunesAreCompletedFromTheirMeasurements) {
  json j = TuneJson(Tune());
  for (const char* k : {"model", "override_tensor", "ctx_size", "n_parallel", "fit", "rpc"})
    j["pick"].erase(k);
  for (const char* k : {"n_gpu_layers", "flash_attn", "type_k", "type_v", "load_mode"})
    j["versus_defaults"].erase(k);
  auto read = TuneReportFromJson(j);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->result.best.model, Tune().result.best.model);
  EXPECT_EQ(read->result.best.placement, Tune().result.best.placement);
  EXPECT_EQ(read->result.versus_defaults->defaults.placement,
            Tune().result.versus_defaults->defaults.placement);
  EXPECT_EQ(VersusDefaultsMeasurements(*read).results.size(), 8u);
}

TEST(TuneReader, AnalysisRoundTrip) {
  AnalysisReport ar;
  ar.analysis = Tune().result.analysis;
  const json j = AnalysisJson(ar);
  auto a = AnalysisFromJson(j);
  ASSERT_TRUE(a.ok()) << a.error().message();
  AnalysisReport again;
  again.analysis = *a;
  EXPECT_EQ(AnalysisJson(again), j);
}

TEST(TuneReader, WrongFieldsAreNamed) {
  EXPECT_FALSE(TuneReportFromJson(json::array()).ok());
  json j = TuneJson(Tune());
  j["ctx"] = "lots";
  auto bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("ctx should be an integer"), std::string::npos)
      << bad.error().message();
  j = TuneJson(Tune());
  j["analysis"]["curves"][0]["points"][0]["prefill_tps"]["sd"] = "wide";
  bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("analysis.curves[].points[].prefill_tps.sd"),
            std::string::npos)
      << bad.error().message();
  j = TuneJson(Tune());
  j["memory"]["gpu"]["weights"]["flux_capacitor"] = 1;
  EXPECT_FALSE(TuneReportFromJson(j).ok());
  j = TuneJson(Tune());
  j["measurements"][0] = 7;
  bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("measurements[0]"), std::string::npos);
  j = TuneJson(Tune());
  j.erase("command");
  bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("moetune tune --json"), std::string::npos);
  j = TuneJson(Tune());
  j["memory"]["headroom_bytes"] = 1e300;
  EXPECT_FALSE(TuneReportFromJson(j).ok());
  // The pick is a whole server configuration, every field checked.
  j = TuneJson(Tune());
  j["pick"]["flash_attn"] = "maybe";
  bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pick.flash_attn"), std::string::npos)
      << bad.error().message();
  j = TuneJson(Tune());
  j["versus_defaults"]["type_k"] = "q9_z";
  bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("versus_defaults.type_k"), std::string::npos)
      << bad.error().message();
  // Sizes beyond a pebibyte are refused: sums of them must not overflow.
  j = TuneJson(Tune());
  j["memory"]["gpu"]["kv_bytes"] = int64_t{1} << 60;
  bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("memory.gpu.kv_bytes"), std::string::npos)
      << bad.error().message();
}

TEST(TuneReader, FilesThatAreNotATune) {
  testing::TempDir dir;
  EXPECT_FALSE(ReadTuneReport(dir.File("missing.json")).ok());
  std::ofstream(dir.File("text.json")) << "not json";
  auto text = ReadTuneReport(dir.File("text.json"));
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message().find("text.json"), std::string::npos);
  std::ofstream(dir.File("bench.json")) << R"({"results": []})";
  EXPECT_FALSE(ReadTuneReport(dir.File("bench.json")).ok());
  EXPECT_FALSE(ReadTuneReport(dir.path()).ok());  // a directory
  std::ofstream(dir.File("tune.json")) << TuneJson(Tune()).dump();
  auto ok = ReadTuneReport(dir.File("tune.json"));
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->ctx, Tune().ctx);
}

}  // namespace
}  // namespace moetune
