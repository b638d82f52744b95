#include "report/analysis_report.h"

#include <gtest/gtest.h>

#include "report/command_documents.h"
#include "report/tune_report.h"
#include "report/tune_test_util.h"
#include "tune/points.h"

namespace moetune {
namespace {

Summary Speed(double mean, double sd, size_t n) {
  Summary s;
  s.n = n;
  s.mean = mean;
  s.stddev = sd;
  return s;
}

// A curve point as analyze builds it: its speeds and the workload objective.
CurvePoint Point(int n, const std::optional<Summary>& prefill, const std::optional<Summary>& decode,
                 const Workload& w) {
  CurvePoint p;
  p.n_cpu_moe = n;
  p.prefill = prefill;
  p.decode = decode;
  p.objective = WorkloadObjective(p.prefill, p.decode, w);
  return p;
}

// N=20 has prefill only (its decode was not measured); N=22 has both, N=24
// has a decode of two repetitions far apart.
AnalysisReport PartlyMeasured() {
  AnalysisReport r;
  r.options.workload = {"chat", 1024, 384};
  const Workload& w = r.options.workload;
  r.analysis.has_prefill = r.analysis.has_decode = true;
  r.analysis.curves = {{0,
                        {Point(20, Speed(600, 5, 3), std::nullopt, w),
                         Point(22, Speed(650, 5, 3), Speed(30, 0.5, 3), w),
                         Point(24, Speed(640, 5, 3), Speed(12, 15, 2), w)},
                        CurveShape::kFlat,
                        {}}};
  r.result_count = 92;
  return r;
}

TEST(AnalysisReport, AnUnmeasuredTimeToAnswerIsBlankNotZero) {
  const std::string text = AnalysisText(PartlyMeasured());
  // N=20's objective is its prefill speed alone: no time to answer to show.
  EXPECT_EQ(text.find("0.00 s"), std::string::npos) << text;
  EXPECT_NE(text.find("time to answer (chat)"), std::string::npos) << text;
  // N=22: 1024 / 650 + 384 / 30 = 14.38 s.
  EXPECT_NE(text.find("14.38 s"), std::string::npos) << text;
}

TEST(AnalysisReport, IntervalsInTheTextNeverGoBelowZero) {
  const std::string text = AnalysisText(PartlyMeasured());
  // N=24's decode: 12.0 t/s with a 95% interval that reaches far below zero.
  EXPECT_NE(text.find("12.0 (0.0-"), std::string::npos) << text;
  EXPECT_EQ(text.find("(-"), std::string::npos) << text;
}

TEST(AnalysisReport, ResultsNotFromFilesAreNotCountedAsZeroFiles) {
  AnalysisReport r = PartlyMeasured();
  EXPECT_EQ(ResultsOrigin(r), "92 result(s)");
  EXPECT_EQ(AnalysisText(r).find("0 file(s)"), std::string::npos);
  EXPECT_EQ(AnalyzeDocument(r, {}, {}).subtitle.find("0 file(s)"), std::string::npos);
  r.source = "measured by this tune";
  EXPECT_EQ(ResultsOrigin(r), "92 result(s) measured by this tune");
  r.files = {{"a.jsonl", "llama-bench jsonl", 60, 0}, {"b.jsonl", "llama-bench jsonl", 32, 0}};
  EXPECT_EQ(ResultsOrigin(r), "92 result(s) from 2 file(s)");
  EXPECT_NE(AnalyzeDocument(r, {}, {}).subtitle.find("92 result(s) from 2 file(s)"),
            std::string::npos);
}

TEST(AnalysisReport, TuneTextSaysItsResultsWereMeasuredByTheTune) {
  const TuneReport t = testing::FakeGpuTune();
  const std::string text = TuneText(t);
  EXPECT_EQ(text.find("from 0 file(s)"), std::string::npos) << text;
  EXPECT_NE(
      text.find(std::to_string(t.result.measurements.size()) + " result(s) measured by this tune"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace moetune
