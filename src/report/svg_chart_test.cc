#include "report/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>

#include "report/svg_bars.h"

namespace moetune {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every attribute value that should be a number parses as a finite number.
void ExpectFiniteNumbers(const std::string& svg) {
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  static const std::regex attr(R"re(\b(x|y|x1|y1|x2|y2|cx|cy|r|width|height)="([^"]*)")re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), attr); it != std::sregex_iterator();
       ++it) {
    const std::string v = (*it)[2];
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    EXPECT_TRUE(end && *end == '\0' && std::isfinite(d)) << (*it)[0];
  }
}

TEST(NiceTicks, RoundSteps) {
  auto t = NiceTicks(0, 637.7, 5);
  EXPECT_DOUBLE_EQ(t.step, 100);
  EXPECT_DOUBLE_EQ(t.min, 0);
  EXPECT_DOUBLE_EQ(t.max, 700);
  EXPECT_EQ(t.values.size(), 8u);
  t = NiceTicks(20, 36, 6);
  EXPECT_DOUBLE_EQ(t.step, 2);
  EXPECT_DOUBLE_EQ(t.values.front(), 20);
  EXPECT_DOUBLE_EQ(t.values.back(), 36);
  t = NiceTicks(0.013, 0.042, 4);
  EXPECT_DOUBLE_EQ(t.step, 0.01);
  EXPECT_NEAR(t.min, 0.01, 1e-12);
  EXPECT_NEAR(t.max, 0.05, 1e-12);
}

TEST(NiceTicks, DegenerateAndNonFiniteInput) {
  auto t = NiceTicks(5, 5);
  EXPECT_LT(t.min, 5);
  EXPECT_GT(t.max, 5);
  t = NiceTicks(0, 0);
  EXPECT_LE(t.min, 0);
  EXPECT_GT(t.max, 0);
  t = NiceTicks(std::nan(""), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isfinite(t.min) && std::isfinite(t.max) && t.max > t.min);
  t = NiceTicks(10, -10);  // reversed
  EXPECT_LE(t.min, -10);
  EXPECT_GE(t.max, 10);
}

TEST(LinearScale, MapsAndFlips) {
  LinearScale y(0, 100, 200, 0);  // SVG y grows downwards
  EXPECT_DOUBLE_EQ(y(0), 200);
  EXPECT_DOUBLE_EQ(y(100), 0);
  EXPECT_DOUBLE_EQ(y(25), 150);
  EXPECT_DOUBLE_EQ(y(std::nan("")), 200);
  LinearScale flat(3, 3, 10, 20);
  EXPECT_DOUBLE_EQ(flat(3), 15);
}

TEST(FormatTick, Formats) {
  EXPECT_EQ(FormatTick(32768, 8192, AxisFormat::kTokens), "32K");
  EXPECT_EQ(FormatTick(0, 8192, AxisFormat::kTokens), "0");
  EXPECT_EQ(FormatTick(100, 50, AxisFormat::kTokens), "100");
  EXPECT_EQ(FormatTick(2.5, 0.5, AxisFormat::kNumber), "2.5");
  EXPECT_EQ(FormatTick(600, 100, AxisFormat::kNumber), "600");
  EXPECT_EQ(FormatTick(8.0 * 1073741824.0, 2.0 * 1073741824.0, AxisFormat::kGiB), "8");
  EXPECT_EQ(FormatTick(-0.0, 1, AxisFormat::kNumber), "0");
  EXPECT_EQ(FormatTick(512.0 * 1048576.0, 256.0 * 1048576.0, AxisFormat::kMiB), "512");
}

ChartSpec Spec() {
  ChartSpec s;
  s.id = "t";
  s.title = "Prefill & decode <tokens/s>";
  s.description = "a \"test\" chart";
  s.x_label = "N";
  ChartPanel pp{"Prefill", "tokens/s", AxisFormat::kNumber, true, {}, {}};
  ChartSeries m{"measured", 0, false, true, true, {}};
  m.points.push_back({20, 94.7, 93.5, 95.9, PointMark::kRejected, "beyond the cliff"});
  m.points.push_back({24, 637.7, 630.0, 645.0, PointMark::kNormal, ""});
  m.points.push_back({25, 627.0, 620.0, 634.0, PointMark::kPick, ""});
  m.points.push_back({26, std::nullopt, std::nullopt, std::nullopt, PointMark::kFailed, "OOM"});
  pp.series.push_back(m);
  ChartSeries pred{"predicted", 1, true, false, true, {}};
  pred.points.push_back({20, 100.0, {}, {}, PointMark::kNormal, ""});
  pred.points.push_back({26, 600.0, {}, {}, PointMark::kNormal, ""});
  pp.series.push_back(pred);
  ChartPanel tg{"Decode", "tokens/s", AxisFormat::kNumber, true, {}, {{30, "limit"}}};
  ChartSeries d{"measured", 0, false, true, true, {}};
  d.points.push_back({20, 24.2, {}, {}, PointMark::kNormal, ""});
  d.points.push_back({24, 31.0, {}, {}, PointMark::kNormal, ""});
  tg.series.push_back(d);
  s.panels = {pp, tg};
  s.markers = {{23.5, "cliff", VerticalMarker::Kind::kCliff},
               {25, "pick", VerticalMarker::Kind::kPick}};
  return s;
}

TEST(SvgChart, PointsErrorBarsAndMarkers) {
  const std::string svg = RenderSvgChart(Spec());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("role=\"img\""), std::string::npos);
  EXPECT_NE(svg.find("viewBox=\"0 0 560.0"), std::string::npos);
  // 3 + 2 measured points with a y; the failed one is a cross.
  EXPECT_EQ(Count(svg, "<g class=\"pt "), 5u);
  EXPECT_EQ(Count(svg, "class=\"pt-failed\""), 1u);
  EXPECT_EQ(Count(svg, " rejected\""), 1u);
  EXPECT_EQ(Count(svg, " pick\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"ring\""), 1u);
  // Three error bars of three lines each (decode points have no interval).
  EXPECT_EQ(Count(svg, "class=\"err c0\""), 9u);
  EXPECT_EQ(Count(svg, "class=\"line c1 dashed\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"marker mk-cliff\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"marker mk-pick\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"limit\""), 1u);
  EXPECT_EQ(Count(svg, "data-panel="), 2u);
  // Point positions: x ascending, the higher value higher up.
  EXPECT_NE(svg.find("data-x=\"24.0\" data-y=\"637.7\""), std::string::npos);
  ExpectFiniteNumbers(svg);
}

// One panel of three points between 600 and 640 tokens/s.
ChartSpec NarrowRangeSpec(bool from_zero) {
  ChartSpec s;
  s.id = "z";
  s.x_label = "threads";
  ChartPanel p{"Prefill", "tokens/s", AxisFormat::kNumber, from_zero, {}, {}};
  ChartSeries m{"measured", 0, false, true, true, {}};
  m.points.push_back({0, 610.0, {}, {}, PointMark::kNormal, ""});
  m.points.push_back({1, 640.0, {}, {}, PointMark::kNormal, ""});
  m.points.push_back({2, 620.0, {}, {}, PointMark::kNormal, ""});
  p.series.push_back(m);
  s.panels = {p};
  return s;
}

TEST(SvgChart, ValueAxisStartsAtZeroUnlessItSaysItIsCut) {
  // From zero: a tick at 0 and no break mark.
  const std::string whole = RenderSvgChart(NarrowRangeSpec(true));
  EXPECT_NE(whole.find("text-anchor=\"end\">0</text>"), std::string::npos) << whole;
  EXPECT_EQ(whole.find("axis-break"), std::string::npos);
  EXPECT_EQ(whole.find("axis starts at"), std::string::npos);
  // Zoomed in on the data: the axis starts above zero, and the chart says so
  // with a break mark on the axis and the value it starts at.
  const std::string cut = RenderSvgChart(NarrowRangeSpec(false));
  EXPECT_EQ(cut.find("text-anchor=\"end\">0</text>"), std::string::npos) << cut;
  EXPECT_EQ(Count(cut, "class=\"axis-break\""), 1u) << cut;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cut, m, std::regex(R"re(>axis starts at ([0-9]+) tokens/s<)re")))
      << cut;
  const double start = std::stod(m[1]);
  EXPECT_GT(start, 0);
  EXPECT_LE(start, 610);
  ExpectFiniteNumbers(cut);
}

TEST(SvgChart, AGapBreaksTheLineAndDrawsNothing) {
  ChartSpec s;
  s.id = "g";
  s.x_label = "depth";
  ChartPanel p{"Prefill", "tokens/s", AxisFormat::kNumber, true, {}, {}};
  ChartSeries m{"N=20", 0, false, true, true, {}};
  m.points.push_back({0, 600.0, {}, {}, PointMark::kNormal, ""});
  m.points.push_back({8192, 550.0, {}, {}, PointMark::kNormal, ""});
  m.points.push_back({16384, std::nullopt, {}, {}, PointMark::kGap, ""});
  m.points.push_back({32768, 400.0, {}, {}, PointMark::kNormal, ""});
  p.series.push_back(m);
  s.panels = {p};
  const std::string svg = RenderSvgChart(s);
  // One line, 0 to 8192; the point at 32768 stands alone; nothing at 16384.
  EXPECT_EQ(Count(svg, "<polyline"), 1u) << svg;
  std::smatch line;
  ASSERT_TRUE(std::regex_search(svg, line, std::regex(R"re(<polyline[^>]*points="([^"]*)")re")));
  EXPECT_EQ(Count(line[1], ","), 2u) << line[1];
  EXPECT_EQ(svg.find("data-x=\"16384.0\""), std::string::npos) << svg;
  EXPECT_EQ(Count(svg, "<g class=\"pt "), 3u);
  EXPECT_EQ(Count(svg, "pt-failed"), 0u);
}

TEST(SvgChart, SharedAxisAlignsPanels) {
  const std::string svg = RenderSvgChart(Spec());
  // N=24 sits at the same x in both panels: collect the cx of points with data-x 24.
  std::regex pt(R"re(data-x="24\.0"[^>]*>.*?<circle class="dot c0" cx="([0-9.]+)")re");
  std::vector<std::string> xs;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), pt); it != std::sregex_iterator();
       ++it)
    xs.push_back((*it)[1]);
  ASSERT_EQ(xs.size(), 2u) << svg;
  EXPECT_EQ(xs[0], xs[1]);
}

TEST(SvgChart, TextIsEscaped) {
  ChartSpec s = Spec();
  s.panels[0].series[0].points[0].note = "<script>alert('x')</script> & \"q\"";
  s.x_label = "a < b";
  const std::string svg = RenderSvgChart(s);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"),
            std::string::npos);
  EXPECT_NE(svg.find("Prefill &amp; decode &lt;tokens/s&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">a &lt; b</text>"), std::string::npos);
  EXPECT_EQ(XmlEscape(std::string("a\x01\x1b"
                                  "b\n",
                                  5)),
            "ab\n");
}

TEST(SvgChart, NonFiniteDataNeverReachesTheSvg) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  ChartSpec s;
  s.id = "bad";
  ChartPanel p{"P", "t/s", AxisFormat::kNumber, true, {}, {{nan, "nan limit"}}};
  ChartSeries series{"s", 0, false, true, true, {}};
  series.points.push_back({nan, 1.0, {}, {}, PointMark::kNormal, ""});
  series.points.push_back({1, inf, {}, {}, PointMark::kNormal, ""});
  series.points.push_back({2, 5.0, -inf, nan, PointMark::kNormal, ""});
  series.points.push_back({3, 7.0, {}, {}, PointMark::kNormal, ""});
  p.series.push_back(series);
  s.panels.push_back(p);
  s.markers.push_back({inf, "m", VerticalMarker::Kind::kNote});
  s.x_ticks.push_back({nan, "t"});
  const std::string svg = RenderSvgChart(s);
  ExpectFiniteNumbers(svg);
  EXPECT_EQ(Count(svg, "<g class=\"pt "), 2u);  // x=2 and x=3
  // Empty charts render too.
  ChartSpec empty;
  empty.id = "empty";
  ExpectFiniteNumbers(RenderSvgChart(empty));
  empty.panels.push_back(ChartPanel{});
  ExpectFiniteNumbers(RenderSvgChart(empty));
}

TEST(SvgChart, TokenAxisTicksAtRoundKs) {
  ChartSpec s;
  s.id = "depth";
  s.x_format = AxisFormat::kTokens;
  ChartPanel p{"Prefill", "t/s", AxisFormat::kNumber, true, {}, {}};
  ChartSeries series{"N=24", 0, false, true, true, {}};
  for (double d : {0.0, 8192.0, 32768.0})
    series.points.push_back({d, 100.0, {}, {}, PointMark::kNormal, ""});
  p.series.push_back(series);
  s.panels.push_back(p);
  const std::string svg = RenderSvgChart(s);
  EXPECT_NE(svg.find(">32K</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">8K</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">5000</text>"), std::string::npos);
}

TEST(SvgChart, ByteAxesTickAtRoundUnits) {
  ChartSpec s;
  s.id = "mem";
  ChartPanel p{"GPU", "MiB", AxisFormat::kMiB, true, {}, {}};
  ChartSeries series{"total", 0, false, true, true, {}};
  series.points.push_back({0, 61.0 * 1048576, {}, {}, PointMark::kNormal, ""});
  series.points.push_back({8, 48.0 * 1048576, {}, {}, PointMark::kNormal, ""});
  p.series.push_back(series);
  s.panels.push_back(p);
  const std::string svg = RenderSvgChart(s);
  EXPECT_NE(svg.find(">60</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">20</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">57</text>"), std::string::npos);
}

TEST(SvgChart, OrdinalTicksUseTheGivenLabels) {
  ChartSpec s = Spec();
  s.x_ticks = {{20, "twenty"}, {26, "twenty-six"}, {99, "outside"}};
  s.x_min = 19;
  s.x_max = 27;
  const std::string svg = RenderSvgChart(s);
  EXPECT_NE(svg.find(">twenty</text>"), std::string::npos);
  EXPECT_NE(svg.find(">twenty-six</text>"), std::string::npos);
  EXPECT_EQ(svg.find("outside"), std::string::npos);
}

TEST(SvgBars, SegmentsScaleAndCapacity) {
  StackedBarSpec s;
  s.id = "mem";
  s.title = "Memory";
  s.rows.push_back({"GPU <0>",
                    int64_t{12} << 30,
                    {{"experts", int64_t{6} << 30, "experts"},
                     {"KV", int64_t{2} << 30, "kv"},
                     {"nothing", 0, "state"},
                     {"negative", -5, "compute"},
                     {"headroom", int64_t{4} << 30, "free"}}});
  s.rows.push_back({"Host", 0, {{"experts", int64_t{24} << 30, "experts"}}});
  const std::string svg = RenderStackedBars(s);
  EXPECT_EQ(Count(svg, "<g class=\"seg "), 4u);
  EXPECT_EQ(Count(svg, "class=\"capacity\""), 1u);
  EXPECT_NE(svg.find("GPU &lt;0&gt;"), std::string::npos);
  EXPECT_NE(svg.find("data-bytes=\"6442450944\""), std::string::npos);
  EXPECT_NE(svg.find(">100%</text>"), std::string::npos);
  EXPECT_NE(svg.find("experts: 6.00 GiB"), std::string::npos) << svg;
  // Each bar at its own scale: the GPU's experts fill half of its 12 GiB, the
  // host's 24 GiB of experts the whole host bar.
  std::regex rect(R"re(<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)")re");
  std::vector<double> widths;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator();
       ++it)
    widths.push_back(std::stod((*it)[2]));
  ASSERT_EQ(widths.size(), 4u);
  EXPECT_NEAR(widths[0] * 2, widths[3], 1.0);
  EXPECT_NEAR(widths[0] + widths[1] + widths[2], widths[3], 1.0);  // 6 + 2 + 4 = 12 GiB
  ExpectFiniteNumbers(svg);
}

}  // namespace
}  // namespace moetune
