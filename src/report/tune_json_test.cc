#include <gtest/gtest.h>

#include <fstream>

#include "report/analysis_report.h"
#include "report/tune_document.h"
#include "report/tune_test_util.h"
#include "report/verdict_text.h"
#include "tune/tune_reader.h"
#include "util/temp_dir_test_util.h"

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
  ASSERT_TRUE(read->result.versus_ollama.has_value());
  EXPECT_EQ(read->result.versus_ollama->defaults, Tune().result.versus_ollama->defaults);
  EXPECT_EQ(read->result.versus_ollama->default_seconds_ctx,
            Tune().result.versus_ollama->default_seconds_ctx);
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

// One rejection of each kind, with its figures.
std::vector<Rejection> EveryRejectionKind() {
  std::vector<Rejection> out(5);
  out[0].n_cpu_moe = 8;
  out[0].kind = RejectionKind::kFailed;
  out[0].failure = "oom_device: cudaMalloc failed";
  out[1].n_cpu_moe = 10;
  out[1].kind = RejectionKind::kBeyondCliff;
  out[1].cliff = {12, 11, 0.18};
  out[2].n_cpu_moe = 11;
  out[2].kind = RejectionKind::kCollapses;
  out[2].depth = 32768;
  out[2].ratio = 0.15;
  out[2].reference_n = 14;
  out[2].reference_ratio = 0.64;
  out[3].n_cpu_moe = 12;
  out[3].kind = RejectionKind::kInferredAtDepth;
  out[3].depth = 15360;
  out[3].reference_n = 13;
  out[3].trouble = DepthTrouble::kCollapses;
  out[4].n_cpu_moe = 13;
  out[4].kind = RejectionKind::kFailsAtDepth;
  out[4].depth = 15360;
  out[4].failure = "oom_device: kv cache";
  return out;
}

void ExpectSameRejection(const Rejection& a, const Rejection& b) {
  EXPECT_EQ(a.n_cpu_moe, b.n_cpu_moe);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.failure, b.failure);
  EXPECT_EQ(a.cliff.n_cpu_moe_safe, b.cliff.n_cpu_moe_safe);
  EXPECT_EQ(a.cliff.n_cpu_moe_collapsed, b.cliff.n_cpu_moe_collapsed);
  EXPECT_DOUBLE_EQ(a.cliff.prefill_ratio, b.cliff.prefill_ratio);
  EXPECT_EQ(a.depth, b.depth);
  EXPECT_DOUBLE_EQ(a.ratio, b.ratio);
  EXPECT_EQ(a.reference_n, b.reference_n);
  EXPECT_DOUBLE_EQ(a.reference_ratio, b.reference_ratio);
  EXPECT_EQ(a.trouble, b.trouble);
}

// The reasons people read are rendered from kinds and figures; a reader gets
// the kinds and figures back and never reads the sentences.
TEST(TuneReader, RejectionsComeBackAsKindsWithFiguresNotProse) {
  AnalysisReport ar;
  ar.analysis.rejected = EveryRejectionKind();
  json j = AnalysisJson(ar);
  for (auto& r : j["rejected"]) r["reason"] = "nonsense that nobody parses";
  auto a = AnalysisFromJson(j);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->rejected.size(), ar.analysis.rejected.size());
  for (size_t i = 0; i < a->rejected.size(); ++i) {
    ExpectSameRejection(a->rejected[i], ar.analysis.rejected[i]);
    EXPECT_EQ(RejectionReason(a->rejected[i]), RejectionReason(ar.analysis.rejected[i]));
  }
  EXPECT_EQ(j["rejected"][1]["kind"], "beyond_cliff");
  // A kind that is not one is an error that names the field.
  j["rejected"][1]["kind"] = "beyond the cliff";
  auto bad = AnalysisFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("rejected[].kind"), std::string::npos)
      << bad.error().message();
}

// Files written before kinds and figures were recorded keep their sentences.
TEST(TuneReader, OlderFilesKeepTheirReasonsAsWritten) {
  json j = TuneJson(Tune());
  ASSERT_FALSE(j["analysis"]["rejected"].empty());
  for (auto& r : j["analysis"]["rejected"]) {
    r.erase("kind");
    r["reason"] = "written by an older moetune";
  }
  j["analysis"]["recommendation"].erase("read_on");
  j["analysis"]["recommendation"]["reason"] = "an older reason";
  auto read = TuneReportFromJson(j);
  ASSERT_TRUE(read.ok()) << read.error().message();
  for (const auto& r : read->result.analysis.rejected) {
    EXPECT_EQ(r.kind, RejectionKind::kRecorded);
    EXPECT_EQ(RejectionReason(r), "written by an older moetune");
  }
  EXPECT_EQ(read->result.analysis.recommendation.rule, Tune().result.analysis.recommendation.rule);
  EXPECT_EQ(RecommendationReason(read->result.analysis.recommendation), "an older reason");
  EXPECT_EQ(TuneJson(*read)["analysis"]["rejected"][0]["kind"], "recorded");
}

// The figures of the step back (safe neighbour, a proven edge stepped past)
// come back typed, so the reason renders the same.
TEST(TuneReader, StepBackFiguresRoundTrip) {
  TuneReport t = Tune();
  Recommendation& r = t.result.analysis.recommendation;
  r.stepped_from = SteppedFrom{19, 31744, DepthTrouble::kFails};
  r.proven_edge = ProvenEdge{20, 0.034};
  const json written = TuneJson(t);
  auto read = TuneReportFromJson(written);
  ASSERT_TRUE(read.ok()) << read.error().message();
  const Recommendation& back = read->result.analysis.recommendation;
  ASSERT_TRUE(back.stepped_from);
  EXPECT_EQ(back.stepped_from->n_cpu_moe, 19);
  EXPECT_EQ(back.stepped_from->depth, 31744);
  EXPECT_EQ(back.stepped_from->trouble, DepthTrouble::kFails);
  ASSERT_TRUE(back.proven_edge && back.proven_edge->gain);
  EXPECT_EQ(back.proven_edge->n_cpu_moe, 20);
  EXPECT_DOUBLE_EQ(*back.proven_edge->gain, 0.034);
  EXPECT_EQ(RecommendationReason(back), RecommendationReason(r));
  EXPECT_EQ(TuneJson(*read), written);
}

// The pick a placement proven at the target context replaced comes back
// typed; a figure of the wrong type is an error that names it.
TEST(TuneReader, ProvenAtTargetFiguresRoundTrip) {
  TuneReport t = Tune();
  Recommendation& r = t.result.analysis.recommendation;
  r.rule = RecommendationRule::kProvenAtTarget;
  r.unproven_pick = 24;
  r.unproven_headroom = -(int64_t{2} << 30);
  const json written = TuneJson(t);
  auto read = TuneReportFromJson(written);
  ASSERT_TRUE(read.ok()) << read.error().message();
  const Recommendation& back = read->result.analysis.recommendation;
  EXPECT_EQ(back.rule, RecommendationRule::kProvenAtTarget);
  EXPECT_EQ(back.unproven_pick, 24);
  EXPECT_EQ(back.unproven_headroom, -(int64_t{2} << 30));
  EXPECT_EQ(RecommendationReason(back), RecommendationReason(r));
  EXPECT_NE(RecommendationReason(back).find("N=24"), std::string::npos);
  EXPECT_EQ(TuneJson(*read), written);
  json bad = written;
  bad["analysis"]["recommendation"]["unproven_pick"]["headroom_bytes"] = "lots";
  auto refused = TuneReportFromJson(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("headroom_bytes"), std::string::npos)
      << refused.error().message();
}

TEST(TuneReader, DecisionsAndComparisonsComeBackTyped) {
  auto read = TuneReportFromJson(TuneJson(Tune()));
  ASSERT_TRUE(read.ok()) << read.error().message();
  ASSERT_EQ(read->result.decisions.size(), Tune().result.decisions.size());
  for (size_t i = 0; i < read->result.decisions.size(); ++i) {
    EXPECT_EQ(read->result.decisions[i].phase, Tune().result.decisions[i].phase);
    EXPECT_EQ(DecisionEvidence(read->result.decisions[i]),
              DecisionEvidence(Tune().result.decisions[i]));
  }
  ASSERT_EQ(read->result.comparisons.size(), Tune().result.comparisons.size());
  ASSERT_FALSE(read->result.comparisons.empty());
  EXPECT_EQ(read->result.comparisons.front().dimension, Dimension::kThreads);
  EXPECT_EQ(read->result.comparisons.front().chosen, Tune().result.comparisons.front().chosen);
  // A tune written before it carried its comparisons: the tuner's reading
  // of its measurements, the same as the tuner's own.
  json j = TuneJson(Tune());
  j.erase("comparisons");
  auto older = TuneReportFromJson(j);
  ASSERT_TRUE(older.ok()) << older.error().message();
  ASSERT_EQ(older->result.comparisons.size(), Tune().result.comparisons.size());
  for (size_t i = 0; i < older->result.comparisons.size(); ++i) {
    EXPECT_EQ(ComparisonJson(older->result.comparisons[i]),
              ComparisonJson(Tune().result.comparisons[i]));
  }
  j = TuneJson(Tune());
  j["decisions"][0]["phase"] = "warm-up";
  auto bad = TuneReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("decisions[].phase"), std::string::npos)
      << bad.error().message();
}

// A phase that could not decide comes back with its figures, and renders the
// same rule; files written before it (no "undecided") read as decided.
TEST(TuneReader, AnUndecidedPhaseComesBackTyped) {
  TuneReport t = Tune();
  ASSERT_FALSE(t.result.decisions.empty());
  Decision& d = t.result.decisions.back();
  d.undecided = Undecided{"-t 16", "prefill", 3.5, 180.25, 9, "-t 8"};
  const json written = TuneJson(t);
  auto read = TuneReportFromJson(written);
  ASSERT_TRUE(read.ok()) << read.error().message();
  const Decision& back = read->result.decisions.back();
  ASSERT_TRUE(back.undecided.has_value());
  EXPECT_EQ(back.undecided->candidate, "-t 16");
  EXPECT_EQ(back.undecided->repetitions, 9);
  EXPECT_DOUBLE_EQ(back.undecided->high, 180.25);
  EXPECT_EQ(DecisionRule(back), DecisionRule(d));
  EXPECT_EQ(written["decisions"].back()["rule"], DecisionRule(d));
  EXPECT_EQ(TuneJson(*read), written);
  json older = written;
  for (auto& x : older["decisions"]) x.erase("undecided");
  auto old_read = TuneReportFromJson(older);
  ASSERT_TRUE(old_read.ok()) << old_read.error().message();
  EXPECT_FALSE(old_read->result.decisions.back().undecided.has_value());
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
