#include "report/curve_figures.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <regex>

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

Summary Speed(double mean, std::optional<double> sd = 1.0, size_t n = 3) {
  Summary s;
  s.n = n;
  s.mean = mean;
  s.stddev = sd;
  return s;
}

CurvePoint Point(int n, std::optional<double> prefill, std::optional<double> decode) {
  CurvePoint p;
  p.n_cpu_moe = n;
  if (prefill) p.prefill = Speed(*prefill);
  if (decode) p.decode = Speed(*decode);
  return p;
}

// N=20 measured at depths 0, 8K and 32K but not at 16K; N=22 at all four;
// at 8K N=22 has prefill only.
Analysis DepthsWithAGap() {
  Analysis a;
  a.has_prefill = a.has_decode = true;
  a.curves = {{0, {Point(20, 600, 30), Point(22, 650, 32)}, CurveShape::kFlat, {}},
              {8192, {Point(20, 560, 28), Point(22, 610, std::nullopt)}, CurveShape::kFlat, {}},
              {16384, {Point(22, 560, 26)}, CurveShape::kFlat, {}},
              {32768, {Point(20, 450, 22), Point(22, 480, 23)}, CurveShape::kFlat, {}}};
  return a;
}

// The coordinate pairs of each polyline of colour `color` in `svg`.
std::vector<size_t> PolylinePoints(const std::string& svg, const std::string& color) {
  std::vector<size_t> out;
  const std::regex re("<polyline class=\"line " + color + "\" points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back(Count((*it)[1], ","));
  return out;
}

TEST(DepthFigure, LinesJoinMeasuredDepthsOnly) {
  const auto f = DepthFigure(DepthsWithAGap(), 32768);
  ASSERT_TRUE(f.has_value());
  // N=20 (c0): 0-8K is a line, 16K a gap, 32K a lone point, in both panels.
  EXPECT_EQ(PolylinePoints(f->svg, "c0"), (std::vector<size_t>{2, 2})) << f->svg;
  // N=22 (c1): prefill joins all four depths; decode was not measured at 8K,
  // so depth 0 stands alone and 16K-32K is a line.
  EXPECT_EQ(PolylinePoints(f->svg, "c1"), (std::vector<size_t>{4, 2})) << f->svg;
  // No point stands for a depth that was not measured.
  EXPECT_EQ(f->svg.find("data-series=\"N=20\" data-x=\"16384.0\""), std::string::npos);
  EXPECT_EQ(Count(f->svg, "data-series=\"N=20\""), 6u);  // 3 depths x 2 panels
  EXPECT_EQ(Count(f->svg, "data-series=\"N=22\""), 7u);  // 4 + 3
  EXPECT_NE(f->caption.find("gap"), std::string::npos);
}

TEST(DepthFigure, AFailedDepthIsACrossThatBreaksTheLine) {
  Analysis a = DepthsWithAGap();
  CurvePoint failed;
  failed.n_cpu_moe = 20;
  failed.failure = "out of memory";
  a.curves[2].points.insert(a.curves[2].points.begin(), failed);
  const auto f = DepthFigure(a, 32768);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(PolylinePoints(f->svg, "c0"), (std::vector<size_t>{2, 2})) << f->svg;
  EXPECT_EQ(Count(f->svg, "class=\"pt-failed\""), 2u);
  bool row = false;
  for (const auto& r : f->data.rows) row = row || r.back() == "fails to run: out of memory";
  EXPECT_TRUE(row);
}

TEST(ComparisonFigure, ZoomedAxisSaysWhereItStarts) {
  DimensionComparison c;
  c.dimension = Dimension::kThreads;
  c.n_cpu_moe = 25;
  c.entries = {{4, Speed(630), Speed(30), std::nullopt, Standing::kBest},
               {8, Speed(610), Speed(29), std::nullopt, Standing::kTied}};
  c.chosen = 4;
  const Figure f = ComparisonFigure(c, "cmp1");
  // Zoomed in on the intervals (from 600, not 0): both panels say so.
  EXPECT_EQ(Count(f.svg, "class=\"axis-break\""), 2u) << f.svg;
  EXPECT_EQ(Count(f.svg, "text-anchor=\"start\">axis starts at "), 2u);
}

TEST(NCurveFigure, IntervalsNeverGoBelowZero) {
  Analysis a;
  a.has_prefill = a.has_decode = true;
  // Two repetitions far apart: the 95% interval of the mean reaches far below zero.
  CurvePoint p = Point(20, 600, 12);
  p.decode = Speed(12, 15, 2);
  a.curves = {{0, {p, Point(22, 650, 30)}, CurveShape::kFlat, {}}};
  const auto f = NCurveFigure(a);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->data.rows[0][4].rfind("0.0-", 0), 0u) << f->data.rows[0][4];
  for (const auto& row : f->data.rows) {
    for (const auto& cell : row) EXPECT_TRUE(cell.empty() || cell.front() != '-') << cell;
  }
  EXPECT_EQ(f->svg.find("CI -"), std::string::npos);
  EXPECT_NE(f->svg.find("95% CI 0.0-"), std::string::npos);
}

TEST(NCurveFigure, SketchSaysWhereItsScaleStarts) {
  const Analysis a = Analyze(Fixture("cliff.jsonl"), {});
  const auto f = NCurveFigure(a);
  ASSERT_TRUE(f.has_value());
  ASSERT_EQ(f->sketch.size(), 2u);
  // The cliff fixture's prefill runs from about 95 t/s: not from zero, and said.
  double lowest = 1e9;
  for (const auto& p : a.curves.front().points) {
    if (p.prefill) lowest = std::min(lowest, p.prefill->mean);
  }
  ASSERT_GT(lowest, 50);
  EXPECT_NE(f->sketch[0].find(fmt::format("(scale from {:.1f}, not from 0)", lowest)),
            std::string::npos)
      << f->sketch[0];
  EXPECT_NE(f->sketch[1].find(", not from 0)"), std::string::npos) << f->sketch[1];
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
