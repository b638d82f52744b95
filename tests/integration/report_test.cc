// Integration: `--report` of analyze, plan and bench opened in headless
// Chromium. For each report: the script ran under the Content-Security-Policy,
// the browser printed no console message (a blocked request would be one), the
// page asked the network for nothing (Chromium's own net log), the charts are
// in the DOM with the expected number of points, and screenshots at desktop
// and phone widths show a rendered page, in light and dark mode.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "chromium.h"
#include "png_image.h"
#include "support.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string Fixture(const std::string& name) {
  return std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/sweeps/" + name;
}

TEST(ReportHtml, AnalyzeCliff) {
  TempDir dir;
  const std::string html = dir.File("cliff.html");
  auto r = RunCommand({MoetuneBinary(), "analyze", Fixture("cliff.jsonl"), "--report", html}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 9 placements in two panels; three beyond the cliff are rejected.
  CheckReport(html, {{{"ncurve", 18}}, {{"ncurve", 0}}, 1}, "analyze-cliff");
  const std::string text = ReadText(html);
  EXPECT_EQ(CountMatches(text, "class=\"pt c0 rejected\" data-chart=\"ncurve\""), 6u);
  EXPECT_EQ(CountMatches(text, "class=\"marker mk-cliff\""), 1u);
  EXPECT_NE(text.find("--n-cpu-moe 25"), std::string::npos);
}

TEST(ReportHtml, AnalyzeMonotonicOverflow) {
  TempDir dir;
  const std::string html = dir.File("monotonic.html");
  auto r =
      RunCommand({MoetuneBinary(), "analyze", Fixture("monotonic.jsonl"), "--report", html}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CheckReport(html, {{{"ncurve", 14}}, {}, 1}, "analyze-monotonic");
  EXPECT_NE(ReadText(html).find("every split overflows"), std::string::npos);
}

TEST(ReportHtml, AnalyzeFailedPlacements) {
  TempDir dir;
  const std::string html = dir.File("failed.html");
  auto r = RunCommand(
      {MoetuneBinary(), "analyze", Fixture("failed_placements.json"), "--report", html}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 5 placements measured, 2 failed to load (out of memory), in two panels.
  CheckReport(html, {{{"ncurve", 10}}, {{"ncurve", 4}}, 1}, "analyze-failed");
  EXPECT_NE(ReadText(html).find("cudaMalloc failed: out of memory"), std::string::npos);
}

TEST(ReportHtml, AnalyzeCpuOnlyEngine) {
  TempDir dir;
  const std::string html = dir.File("cpu.html");
  auto r =
      RunCommand({MoetuneBinary(), "analyze", Fixture("cpu_only.jsonl"), "--report", html}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CheckReport(html, {{{"ncurve", 10}}, {}, 1}, "analyze-cpu-only");
  EXPECT_NE(ReadText(html).find("no placement effect"), std::string::npos);
}

TEST(ReportHtml, AnalyzeLongContextThreadsAndBatches) {
  TempDir dir;
  const std::string html = dir.File("long.html");
  auto r = RunCommand(
      {MoetuneBinary(), "analyze", Fixture("long_context.jsonl"), "--ctx", "32K", "--report", html},
      60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // N curve (7 placements), depth (3 placements x 3 depths, two panels),
  // threads (4 values, two panels), micro-batch (3 values of prefill; decode only at 512).
  CheckReport(html, {{{"ncurve", 14}, {"depth", 18}, {"cmp1", 8}, {"cmp2", 4}}, {}, 4},
              "analyze-long-context");
  const std::string text = ReadText(html);
  EXPECT_EQ(CountMatches(text, "class=\"pt c0 rejected\" data-chart=\"depth\""),
            1u);  // N=24 at 32K
  EXPECT_NE(text.find(">32K</text>"), std::string::npos);
}

TEST(ReportHtml, PlanOfASynthesizedModel) {
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  auto s = RunCommand(
      {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model}, 300);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string html = dir.File("plan.html");
  auto r = RunCommand({MoetuneBinary(), "plan", model, "--vram", "72MiB", "--margin", "16MiB",
                       "--host-ram", "8GiB", "--report", html},
                      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 8 layers: N = 0..8 on the memory chart, and the memory map of the pick.
  CheckReport(html, {{{"gpu-per-n", 9}}, {}, 2}, "plan");
  const std::string text = ReadText(html);
  EXPECT_GE(CountMatches(text, "<g class=\"seg seg-experts\""), 2);  // GPU and host
  EXPECT_EQ(CountMatches(text, "<g class=\"seg seg-kv\""), 1u);
  EXPECT_EQ(CountMatches(text, "<g class=\"seg seg-margin\""), 1u);
  // The Markdown rendering of the same plan.
  const std::string md = dir.File("plan.md");
  r = RunCommand(
      {MoetuneBinary(), "plan", model, "--vram", "72MiB", "--margin", "16MiB", "--report", md},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string mdtext = ReadText(md);
  EXPECT_EQ(mdtext.rfind("# moetune plan: m.gguf", 0), 0u);
  EXPECT_NE(mdtext.find("```sh\nllama-server -m "), std::string::npos);
  EXPECT_NE(mdtext.find("| device"), std::string::npos);
  EXPECT_EQ(mdtext.find("<svg"), std::string::npos);
}

TEST(ReportHtml, BenchWithTheRealEngine) {
  auto engine = EngineDir();
  ASSERT_TRUE(engine.has_value()) << "llama.cpp not found: run scripts/setup-engine.sh";
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  auto s = RunCommand(
      {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model}, 300);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string html = dir.File("bench.html");
  auto r = RunCommand(
      {MoetuneBinary(), "bench", model, "--llama-dir", engine->string(), "--ncmoe", "0,4", "-t",
       "1", "-p", "16", "-n", "4", "-r", "2", "--no-progress", "--report", html},
      600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 2 placements x (pp16, tg4): the results chart and the N curve.
  CheckReport(html, {{{"results", 4}, {"ncurve", 4}}, {{"results", 0}}, 2}, "bench");
  EXPECT_NE(ReadText(html).find("llama-bench"), std::string::npos);  // how to reproduce
}

TEST(ReportHtml, DarkModeIsDark) {
  ASSERT_FALSE(ChromiumBinary().empty())
      << "chromium is not installed: run scripts/install-deps.sh";
  TempDir dir;
  const std::string html = dir.File("cliff.html");
  ASSERT_EQ(RunCommand({MoetuneBinary(), "analyze", Fixture("cliff.jsonl"), "--report", html}, 60)
                .exit_code,
            0);
  auto img = Screenshot(html, 1280, 900, true, dir, "analyze-cliff-dark");
  ASSERT_TRUE(img.has_value());
  const ImageStats s = Analyze(*img);
  EXPECT_LT(s.mean_luminance, 60);
  EXPECT_GE(s.distinct_colors, 12u);
}

// A page without the report's content fails the image check: the thresholds
// tell a rendered report from a blank or unstyled page.
TEST(ReportHtml, BlankPageFailsTheImageCheck) {
  ASSERT_FALSE(ChromiumBinary().empty())
      << "chromium is not installed: run scripts/install-deps.sh";
  TempDir dir;
  std::ofstream(dir.File("blank.html"))
      << "<!DOCTYPE html><html><body><p>moetune</p></body></html>";
  auto img = Screenshot(dir.File("blank.html"), 1280, 900, false, dir, "blank");
  ASSERT_TRUE(img.has_value());
  const ImageStats s = Analyze(*img);
  EXPECT_LT(s.non_background, 0.04);
}

// The checks above would be worthless if they could not see a request: a page
// with an image from the network shows a CSP console error with the policy,
// and a network request in the net log without it.
TEST(ReportHtml, DetectorsSeeARequest) {
  ASSERT_FALSE(ChromiumBinary().empty())
      << "chromium is not installed: run scripts/install-deps.sh";
  TempDir dir;
  const std::string html = dir.File("cliff.html");
  ASSERT_EQ(RunCommand({MoetuneBinary(), "analyze", Fixture("cliff.jsonl"), "--report", html}, 60)
                .exit_code,
            0);
  std::string text = ReadText(html);
  const std::string probe = "<img src=\"http://127.0.0.1:9/probe.png\" alt=\"\">";
  std::string with_csp = text;
  with_csp.insert(with_csp.find("<body>") + 6, probe);
  std::ofstream(dir.File("probe-csp.html")) << with_csp;
  const PageLoad blocked = Load(dir.File("probe-csp.html"), dir);
  ASSERT_FALSE(blocked.console.empty());
  EXPECT_NE(blocked.console.front().find("Content Security Policy"), std::string::npos)
      << blocked.console.front();
  EXPECT_TRUE(blocked.requests.empty());  // blocked before it reached the network
  std::string without_csp = with_csp;
  const size_t meta = without_csp.find("<meta http-equiv=\"Content-Security-Policy\"");
  ASSERT_NE(meta, std::string::npos);
  without_csp.erase(meta, without_csp.find('>', meta) + 1 - meta);
  std::ofstream(dir.File("probe-open.html")) << without_csp;
  TempDir other;
  const PageLoad open = Load(dir.File("probe-open.html"), other);
  ASSERT_EQ(open.requests.size(), 1u);
  EXPECT_EQ(open.requests.front(), "http://127.0.0.1:9/probe.png");
}

}  // namespace
}  // namespace moetune::itest
