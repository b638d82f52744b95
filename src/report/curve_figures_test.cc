#include "report/curve_figures.h"

#include <gtest/gtest.h>

#include "report/command_documents.h"
#include "report/report_blocks.h"
#include "tune/measurements.h"

namespace moetune {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<RunResult> Fixture(const std::string& name) {
  auto r = LoadMeasurements({std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/sweeps/" + name});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? r->results : std::vector<RunResult>{};
}

TEST(NCurveFigure, CliffSweep) {
  const auto results = Fixture("cliff.jsonl");
  const Analysis a = Analyze(results, {});
  auto f = NCurveFigure(a);
  ASSERT_TRUE(f.has_value());
  // 9 placements, prefill and decode.
  EXPECT_EQ(Count(f->svg, "<g class=\"pt "), 18u);
  EXPECT_EQ(Count(f->svg, "class=\"marker mk-cliff\""), 1u);
  EXPECT_EQ(Count(f->svg, "class=\"marker mk-pick\""), 1u);
  // N=20, 22, 23 lie beyond the cliff: rejected in both panels; N=25 is the pick.
  EXPECT_EQ(Count(f->svg, " rejected\""), 6u);
  EXPECT_EQ(Count(f->svg, " pick\""), 2u);
  EXPECT_NE(f->svg.find("data-x=\"25.0\" data-y=\"627.0\""), std::string::npos);
  EXPECT_EQ(f->data.rows.size(), 9u);
  EXPECT_NE(f->caption.find("cliff"), std::string::npos);
  ASSERT_EQ(f->sketch.size(), 2u);
  EXPECT_NE(f->sketch[0].find("▁▁▁███▇▇▆"), std::string::npos) << f->sketch[0];
}

TEST(NCurveFigure, PredictedCurveIsDashed) {
  const Analysis a = Analyze(Fixture("cliff.jsonl"), {});
  NCurveOptions o;
  o.predicted = {{20, 100.0, 25.0}, {28, 600.0, 29.0}, {40, 400.0, 20.0}};
  auto f = NCurveFigure(a, o);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(Count(f->svg, "class=\"line c1 dashed\""), 2u);
  EXPECT_EQ(f->data.rows.size(), 10u);  // N=40 is predicted only
  EXPECT_EQ(f->data.header.size(), 8u);
  // Nothing measured and nothing predicted: no figure.
  EXPECT_FALSE(NCurveFigure(Analysis{}).has_value());
}

TEST(ComparisonFigure, ChosenValueIsHighlighted) {
  DimensionComparison c;
  c.dimension = Dimension::kThreads;
  c.n_cpu_moe = 25;
  Summary s;
  s.n = 5;
  s.mean = 30;
  s.stddev = 0.5;
  c.entries = {{4, s, s, std::nullopt, Standing::kTied}, {8, s, s, std::nullopt, Standing::kBest}};
  c.chosen = 4;
  Figure f = ComparisonFigure(c, "cmp1");
  EXPECT_EQ(Count(f.svg, "<g class=\"pt "), 4u);
  EXPECT_EQ(Count(f.svg, " pick\""), 2u);
  EXPECT_NE(f.svg.find(">8</text>"), std::string::npos);
  ASSERT_EQ(f.data.rows.size(), 2u);
  EXPECT_EQ(f.data.row_class[0], "pick");
}

TEST(AnalysisServerCommand, UsesTheMeasuredSettings) {
  const auto results = Fixture("cliff.jsonl");
  const Analysis a = Analyze(results, {});
  const auto argv = AnalysisServerCommand(a, results, 32768);
  const std::vector<std::string> expected = {"llama-server", "-m",  "qwen3-30b-a3b-q4_k_m.gguf",
                                             "-ngl",         "99",  "--n-cpu-moe",
                                             "25",           "-c",  "32768",
                                             "-ub",          "512", "-b",
                                             "2048",         "-fa", "on",
                                             "-t",           "8"};
  EXPECT_EQ(argv, expected);
  EXPECT_TRUE(AnalysisServerCommand(Analysis{}, results, std::nullopt).empty());
}

TEST(AnalyzeDocument, HasTheSectionsOfTheIssue) {
  const auto results = Fixture("cliff.jsonl");
  AnalysisReport r;
  r.analysis = Analyze(results, r.options);
  r.result_count = results.size();
  const Report doc = AnalyzeDocument(r, results, {"moetune", "analyze", "cliff.jsonl"});
  std::vector<std::string> ids;
  for (const auto& s : doc.sections) ids.push_back(s.id);
  EXPECT_EQ(ids.front(), "verdict");
  for (const char* want : {"n-curve", "decisions", "inputs", "raw", "reproduce"})
    EXPECT_NE(std::find(ids.begin(), ids.end(), want), ids.end()) << want;
  const auto& verdict = std::get<VerdictBlock>(doc.sections.front().blocks.front());
  EXPECT_NE(verdict.headline.find("--n-cpu-moe 25"), std::string::npos);
  EXPECT_EQ(CountFigures(doc), 1u);
}

}  // namespace
}  // namespace moetune
