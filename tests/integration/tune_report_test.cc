// Integration: the report and the configuration of a tune. Recorded tunes
// (tests/fixtures/tune/: a real one of this machine's CPU-only engine, and the
// simulated engine's on a what-if RTX 4070 with a cliff, collapses at depth and
// placements that fail to load) are rendered by `moetune report`, as is the
// Tuner's run on a handwritten GPU machine, and opened in headless Chromium;
// every emitted format parses back to the tuned command; a real
// `tune --report --emit env` writes a report and a configuration that the
// installed llama-server runs.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "chromium.h"
#include "config/server_argv.h"
#include "plan/launch.h"
#include "report/emit.h"
#include "report/emit_test_util.h"
#include "report/svg_chart.h"
#include "report/tune_document.h"
#include "report/tune_test_util.h"
#include "support.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string TuneFixture(const std::string& name) {
  return std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/tune/" + name;
}

// The command a recorded tune gives, with the model path made absolute (from
// this folder, as --emit does).
std::vector<std::string> RecordedCommand(const std::string& path) {
  const json j = json::parse(ReadText(path), nullptr, false);
  if (j.is_discarded() || !j.contains("command")) return {};
  auto argv = j["command"].get<std::vector<std::string>>();
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i] == "-m") argv[i + 1] = fs::absolute(argv[i + 1]).lexically_normal().string();
  }
  // In the one writer's form (config/server_argv.h): what every format carries.
  const ParsedServerCommand p = ParseServerArgv(argv);
  if (!p.other.empty() || !p.invalid.empty() || !p.not_understood.empty()) return {};
  return ServerArgv(p.config);
}

// Every emitted format of `source` (a recorded tune, or a `tune` command line
// ending in --emit) parses back to `argv`.
void ExpectEveryFormatParsesBack(const std::vector<std::string>& prefix,
                                 const std::vector<std::string>& argv) {
  ASSERT_GT(argv.size(), 10u);
  auto emit = [&](const std::string& format) {
    std::vector<std::string> cmd = prefix;
    cmd.insert(cmd.end(), {"--emit", format});
    const auto r = RunCommand(cmd, 120);
    EXPECT_EQ(r.exit_code, 0) << format << ": " << r.err;
    return r.out;
  };
  EXPECT_EQ(testing::ShellWords(emit("server")), argv);
  EXPECT_EQ(testing::ArgvFromEnv(emit("env")), argv);
  EXPECT_EQ(testing::ArgvFromIni(emit("ini")), argv);
  auto compose = ComposeServerArgv(ParseServerArgv(argv).config);
  ASSERT_TRUE(compose.ok());
  EXPECT_EQ(testing::ArgvFromCompose(emit("compose")), *compose);
}

TEST(TuneReportHtml, RecordedTuneOfACpuOnlyEngine) {
  TempDir dir;
  const std::string fixture = TuneFixture("cpu-only-tiny.json");
  const std::string html = dir.File("tune.html");
  auto r = RunCommand({MoetuneBinary(), "report", fixture, "--report", html}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No curve over N (no GPU: placement does not change speed); the pick at
  // two depths; threads 1 and 2; tuned and defaults on 4 tests.
  CheckReport(html, {{{"depth", 4}, {"cmp1", 4}, {"versus", 8}}, {}, 3}, "tune-cpu-only");
  const std::string text = ReadText(html);
  EXPECT_NE(text.find("Placement was not measured: the engine has no GPU device"),
            std::string::npos);
  EXPECT_NE(text.find("x faster than llama.cpp&#39;s defaults"), std::string::npos);
  // The recorded command, written again by the one argv writer (its flag order).
  EXPECT_NE(text.find("llama-server -m qwen3moe-tiny.gguf -ngl 99 --n-cpu-moe 8 -c 1024 -np 1 "
                      "-ub 512 -b 2048 -fa on -t 1 -fit off"),
            std::string::npos);
  // The same tune as Markdown, and as text (what `tune` printed).
  const std::string md = dir.File("tune.md");
  r = RunCommand({MoetuneBinary(), "report", fixture, "--report", md}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadText(md).find("```sh\nllama-server -m qwen3moe-tiny.gguf"), std::string::npos);
  EXPECT_NE(r.out.find("Run this:"), std::string::npos);
}

// The simulated engine's tunes of a full-scale model on a what-if RTX 4070
// (tests/fixtures/tune/README.md): a cliff and collapses at depth with silent
// spill, placements that fail to load with strict allocation.
TEST(TuneReportHtml, RecordedSimulatedTuneWithACliff) {
  TempDir dir;
  const std::string html = dir.File("silent.html");
  auto r = RunCommand(
      {MoetuneBinary(), "report", TuneFixture("sim-rtx4070-silent-spill.json"), "--report", html},
      60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 13 placements at depth 0; 6 of them at 3 depths; threads 7/8/16; -ub 512/1024; the
  // memory map; tuned against defaults on 4 tests.
  CheckReport(html,
              {{{"ncurve", 26}, {"depth", 36}, {"cmp1", 6}, {"cmp2", 4}, {"versus", 8}}, {}, 6},
              "tune-sim-silent");
  const std::string text = ReadText(html);
  EXPECT_EQ(CountMatches(text, "class=\"marker mk-cliff\""), 1u);
  EXPECT_GE(CountMatches(text, "class=\"pt c[0-9] rejected\" data-chart=\"depth\""), 1u);
  EXPECT_NE(text.find("SIMULATED"), std::string::npos);
  EXPECT_NE(text.find("--n-cpu-moe 22"), std::string::npos);
}

TEST(TuneReportHtml, RecordedSimulatedTuneWithFailedPlacements) {
  TempDir dir;
  const std::string html = dir.File("strict.html");
  auto r = RunCommand(
      {MoetuneBinary(), "report", TuneFixture("sim-rtx4070-strict.json"), "--report", html}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 13 placements at depth 0, 4 of which failed to load (a cross in each panel).
  CheckReport(html, {{{"ncurve", 18}, {"cmp1", 6}, {"cmp2", 4}, {"versus", 8}}, {{"ncurve", 8}}, 6},
              "tune-sim-strict");
  EXPECT_NE(ReadText(html).find("oom_device"), std::string::npos);
}

TEST(TuneReportHtml, SimulatedTuneWithACliffAndFailedPlacements) {
  const TuneReport t = testing::FakeGpuTune();
  const Analysis& a = t.result.analysis;
  ASSERT_FALSE(a.curves.empty());
  ASSERT_FALSE(a.cliffs.empty());
  size_t ok_n = 0, failed_n = 0;
  for (const auto& p : a.curves.front().points) (p.failed() ? failed_n : ok_n)++;
  ASSERT_GT(failed_n, 0u);
  size_t depth_points = 0;  // every N measured at two depths or more, in two panels
  std::map<int, std::set<int>> depths;
  for (const auto& c : a.curves) {
    for (const auto& p : c.points) {
      if (!p.failed()) depths[p.n_cpu_moe].insert(c.depth);
    }
  }
  for (const auto& [n, ds] : depths) depth_points += ds.size() >= 2 ? 2 * ds.size() : 0;
  TempDir dir;
  const std::string html = dir.File("sim.html");
  std::ofstream(html) << RenderReport(TuneDocument(t, {"moetune", "tune"}), ReportFormat::kHtml);
  // N curve (prefill and decode), long context, threads 2/4/8, micro-batch
  // 512/1024, the memory map, tuned against defaults.
  CheckReport(
      html,
      {{{"ncurve", 2 * ok_n}, {"depth", depth_points}, {"cmp1", 6}, {"cmp2", 4}, {"versus", 8}},
       {{"ncurve", 2 * failed_n}},
       6},
      "tune-simulated");
  const std::string text = ReadText(html);
  EXPECT_EQ(CountMatches(text, "class=\"marker mk-cliff\""), 1u);
  EXPECT_EQ(CountMatches(text, "<g class=\"seg seg-kv\""), 1u);
  EXPECT_NE(text.find("SIMULATED"), std::string::npos);
}

TEST(TuneEmitCli, EveryFormatOfARecordedTuneParsesBackToItsCommand) {
  for (const char* name :
       {"cpu-only-tiny.json", "sim-rtx4070-silent-spill.json", "sim-rtx4070-strict.json"}) {
    SCOPED_TRACE(name);
    const std::string fixture = TuneFixture(name);
    ExpectEveryFormatParsesBack({MoetuneBinary(), "report", fixture}, RecordedCommand(fixture));
  }
}

TEST(TuneEmitCli, BadValuesAreACommandLineError) {
  const std::string fixture = TuneFixture("cpu-only-tiny.json");
  TempDir dir;
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"--emit", "yaml"}, {"--report", dir.File("r.pdf")}, {"--emit", "env", "--json"}}) {
    std::vector<std::string> argv = {MoetuneBinary(), "report", fixture};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << " " << extra[1] << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(dir.File("r.pdf")));
  // tune refuses them before measuring anything.
  auto t = RunCommand({MoetuneBinary(), "tune", dir.File("none.gguf"), "--ctx", "1024", "--emit",
                       "yaml", "--no-journal"},
                      60);
  EXPECT_EQ(t.exit_code, 2) << t.err;
  EXPECT_NE(t.err.find("compose"), std::string::npos) << t.err;
  // Files that are not a tune's JSON are a failed command that says so.
  auto sweep = RunCommand({MoetuneBinary(), "report",
                           std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/sweeps/cliff.jsonl"},
                          60);
  EXPECT_EQ(sweep.exit_code, 1);
  EXPECT_NE(sweep.err.find("moetune tune --json"), std::string::npos) << sweep.err;
  auto missing = RunCommand({MoetuneBinary(), "report", dir.File("missing.json")}, 60);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("missing.json"), std::string::npos) << missing.err;
}

// A tune's JSON is untrusted: terminal escapes in its strings never reach the
// terminal or the report as raw control bytes.
TEST(TuneEmitCli, HostileTextInARecordedTune) {
  json j = json::parse(ReadText(TuneFixture("cpu-only-tiny.json")));
  const std::string hostile = "\x1b[2J\x1b]0;owned\x07\u009b31m";
  j["engine"] = hostile;
  j["machine"] = hostile;
  j["notes"].push_back(hostile);
  j["decisions"][0]["evidence"] = hostile;
  TempDir dir;
  std::ofstream(dir.File("hostile.json")) << j.dump();
  auto r = RunCommand(
      {MoetuneBinary(), "report", dir.File("hostile.json"), "--report", dir.File("h.html")}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& text : {r.out, r.err, ReadText(dir.File("h.html"))}) {
    EXPECT_EQ(text.find('\x1b'), std::string::npos);
    EXPECT_EQ(text.find('\x07'), std::string::npos);
    EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos);
  }
  EXPECT_NE(r.out.find("owned"), std::string::npos);  // the text itself is kept
}

// A real tune writes its report; run again with the same journal it measures
// nothing and emits the configuration, which the installed llama-server runs
// as given (the environment form, the only one that needs no flags at all).
TEST(TuneEmitCli, RealTuneReportsAndEmitsARunnableConfiguration) {
  auto engine = EngineDir();
  ASSERT_TRUE(engine.has_value()) << "llama.cpp not found: run scripts/setup-engine.sh";
  TempDir dir;
  std::string error;
  const std::string model = SynthModel(dir.File("tuned model.gguf"), "qwen3moe", "tiny", &error);
  ASSERT_FALSE(model.empty()) << error;
  const std::vector<std::string> tune = {
      MoetuneBinary(), "tune",     model, "--ctx",        "1024", "--workload",
      "256:64",        "-r",       "2",   "--threads",    "1,2",  "--journal",
      dir.File("j"),   "--budget", "10",  "--no-progress"};
  std::vector<std::string> first = tune;
  first.insert(first.end(),
               {"--json", "-o", dir.File("tune.json"), "--report", dir.File("t.html")});
  auto r = RunCommand(first, 900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = ReadText(dir.File("t.html"));
  EXPECT_NE(html.find("<h2 id=\"verdict-h\">Verdict</h2>"), std::string::npos);
  const std::vector<std::string> argv = RecordedCommand(dir.File("tune.json"));
  ASSERT_FALSE(argv.empty());
  // The verdict shows the tuned command (HTML-escaped: the model's name has a space).
  const auto command = json::parse(ReadText(dir.File("tune.json")))["command"];
  EXPECT_NE(html.find(XmlEscape(ShellJoin(command.get<std::vector<std::string>>()))),
            std::string::npos);
  // Again with --emit: nothing measured (the journal has it all), same command.
  ExpectEveryFormatParsesBack(tune, argv);
  std::vector<std::string> again = tune;
  again.insert(again.end(), {"--json"});
  const json j = json::parse(RunCommand(again, 300).out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["measured"], 0);

  std::vector<std::string> env_run = {"/usr/bin/env"};
  std::vector<std::string> with_env = tune;
  with_env.insert(with_env.end(), {"--emit", "env"});
  std::istringstream lines(RunCommand(with_env, 300).out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    const auto value = testing::ShellWords(line.substr(eq + 1));
    ASSERT_EQ(value.size(), 1u) << line;
    env_run.push_back(line.substr(0, eq) + "=" + value[0]);
  }
  const int port = FreePort();
  ASSERT_GT(port, 0);
  env_run.insert(env_run.end(),
                 {"LLAMA_ARG_HOST=127.0.0.1", "LLAMA_ARG_PORT=" + std::to_string(port),
                  (*engine / "llama-server").string()});
  BackgroundProcess server(env_run, dir.File("server.log"));
  ASSERT_TRUE(server.started());
  ASSERT_FALSE(WaitForGet(port, "/health", 120).empty())
      << "llama-server did not start with the tuned environment: "
      << ReadText(dir.File("server.log"));
  const json props = json::parse(WaitForGet(port, "/props", 10), nullptr, false);
  ASSERT_FALSE(props.is_discarded());
  EXPECT_EQ(props["model_path"], fs::absolute(model).lexically_normal().string());
  EXPECT_EQ(props["total_slots"], 1);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 1024);
}

}  // namespace
}  // namespace moetune::itest
