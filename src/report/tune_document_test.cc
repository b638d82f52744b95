#include "report/tune_document.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "report/emit_test_util.h"
#include "report/tune_report.h"
#include "report/tune_test_util.h"
#include "tune/space.h"

namespace moetune {
namespace {

using testing::FakeGpuTune;

size_t Count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

const Section* FindSection(const Report& r, const std::string& id) {
  for (const auto& s : r.sections) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

std::vector<std::string> SectionIds(const Report& r) {
  std::vector<std::string> ids;
  for (const auto& s : r.sections) ids.push_back(s.id);
  return ids;
}

// The tune that every test here reads: run once (the Tuner on the fake machine).
const TuneReport& Tune() {
  static const TuneReport t = FakeGpuTune();
  return t;
}

TEST(TuneDocument, FakeMachineHasTheShapesToDraw) {
  const TuneResult& r = Tune().result;
  // The search found the cliff and kept to its safe side, one layer more conservative.
  ASSERT_FALSE(r.analysis.cliffs.empty());
  EXPECT_EQ(r.analysis.cliffs.front().n_cpu_moe_safe, testing::FakeGpuMachine::kFits);
  EXPECT_EQ(r.best.placement.n_cpu_moe, testing::FakeGpuMachine::kFits + 1);
  EXPECT_EQ(r.best.threads, 4);
  size_t failed = 0;
  for (const auto& m : r.measurements) failed += m.ok() ? 0 : 1;
  EXPECT_GT(failed, 0u);
  ASSERT_TRUE(r.versus_defaults);
}

TEST(TuneDocument, SectionsInOrderWithTheVerdictFirst) {
  const Report doc = TuneDocument(Tune(), {"moetune", "tune", "x.gguf", "--report", "t.html"});
  EXPECT_EQ(SectionIds(doc), (std::vector<std::string>{"verdict", "n-curve", "depth", "threads",
                                                       "memory", "defaults", "ollama", "decisions",
                                                       "machine", "raw", "reproduce"}));
  EXPECT_EQ(doc.title, "moetune tune (SIMULATED): Fake-MoE-A3B-Q4_K_M.gguf");
  const auto& v = std::get<VerdictBlock>(doc.sections.front().blocks.front());
  EXPECT_EQ(v.command, Tune().Command());
  EXPECT_NE(v.headline.find("--n-cpu-moe 13 -t 4"), std::string::npos) << v.headline;
  // All experts on the CPU (llama.cpp's fit here) is far slower than the tuned split.
  EXPECT_NE(v.speedup.find("x faster than llama.cpp's defaults on the chat workload with the "
                           "context filled to 16384 tokens"),
            std::string::npos)
      << v.speedup;
  EXPECT_FALSE(v.reason.empty());
  EXPECT_EQ(v.banner.rfind("SIMULATED", 0), 0u) << v.banner;
}

// A simulated tune says so as loudly as it gives its verdict, in every
// rendering: the title, a banner in the headline's own style, the text.
TEST(TuneDocument, SimulatedIsAsProminentAsTheVerdict) {
  const Report doc = TuneDocument(Tune(), {});
  const std::string html = RenderReport(doc, ReportFormat::kHtml);
  EXPECT_NE(html.find("<h1>moetune tune (SIMULATED): "), std::string::npos);
  const size_t verdict = html.find("<div class=\"verdict\"");
  const size_t banner = html.find("<p class=\"headline banner\">SIMULATED: ");
  const size_t headline = html.find("<p class=\"headline\">Run llama-server with ");
  ASSERT_NE(verdict, std::string::npos);
  ASSERT_NE(banner, std::string::npos) << html.substr(verdict, 600);
  ASSERT_NE(headline, std::string::npos);
  EXPECT_LT(verdict, banner);
  EXPECT_LT(banner, headline);
  const std::string md = RenderReport(doc, ReportFormat::kMarkdown);
  const size_t md_banner = md.find("**SIMULATED: ");
  ASSERT_NE(md_banner, std::string::npos) << md.substr(0, 400);
  EXPECT_LT(md_banner, md.find("**Run llama-server with "));
  EXPECT_EQ(md.rfind("# moetune tune (SIMULATED): ", 0), 0u);
  // The text: the banner and the word on the line that gives the command.
  const std::string text = TuneText(Tune());
  const size_t run = text.find("Run this (SIMULATED):");
  ASSERT_NE(run, std::string::npos) << text;
  EXPECT_LT(text.find("\nSIMULATED: measured on the simulated engine"), run);
  // A measured tune shows none of it.
  TuneReport measured = Tune();
  measured.simulated = false;
  const Report real = TuneDocument(measured, {});
  EXPECT_EQ(RenderReport(real, ReportFormat::kHtml).find("SIMULATED"), std::string::npos);
  EXPECT_NE(TuneText(measured).find("Run this:"), std::string::npos);
}

// The defaults' row says what llama.cpp's fit placed (its -ot rules keep the
// experts of the last layers on the CPU), not "--n-cpu-moe 0".
TEST(TuneDocument, DefaultsRowShowsWhatTheFitPlaced) {
  TuneReport t = Tune();
  ASSERT_TRUE(t.result.versus_defaults);
  t.result.versus_defaults->defaults = LlamaDefaults(t.model_path, nullptr, 24, 10);
  const Report doc = TuneDocument(t, {});
  const Section* defaults = FindSection(doc, "defaults");
  ASSERT_NE(defaults, nullptr);
  const KeyValues* kv = nullptr;
  for (const auto& b : defaults->blocks) kv = kv ? kv : std::get_if<KeyValues>(&b);
  ASSERT_NE(kv, nullptr);
  std::string experts;
  for (const auto& [k, v] : kv->items) {
    EXPECT_NE(k, "--n-cpu-moe");
    if (k == "experts on the CPU") experts = v;
  }
  EXPECT_EQ(experts,
            "layers 0-12 (--n-cpu-moe 13) tuned; layers 14-23 (fit's -ot) by llama.cpp's defaults");
  EXPECT_EQ(experts.find(", 0 by"), std::string::npos);
}

TEST(TuneDocument, OllamasSplitIsComparedInTheReportAndTheText) {
  const Report doc = TuneDocument(Tune(), {"moetune", "tune", "x.gguf"});
  const Section* ollama = nullptr;
  for (const auto& s : doc.sections) {
    if (s.id == "ollama") ollama = &s;
  }
  ASSERT_NE(ollama, nullptr);
  const auto* table = std::get_if<DocTable>(&ollama->blocks.at(1));
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->header.at(2), "Ollama's split");
  ASSERT_EQ(table->rows.size(), 2u);
  // The fake machine runs whole CPU layers far slower: the pick wins.
  EXPECT_NE(table->rows[0].at(3), "");
  const std::string text = TuneText(Tune());
  EXPECT_NE(text.find("Against Ollama's split of the same GPU, at the full context: "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("with Ollama's split: "), std::string::npos) << text;
  EXPECT_NE(text.find("(Ollama's automatic offload: whole layers on the GPU, 20 of 24; measured "
                      "in the same run)"),
            std::string::npos)
      << text;
}

TEST(TuneDocument, ChartsCarryTheCliffFailuresComparisonsAndDefaults) {
  const std::string html = RenderReport(TuneDocument(Tune(), {}), ReportFormat::kHtml);
  EXPECT_EQ(Count(html, "class=\"marker mk-cliff\""), 1u);
  // Failed placements: a cross in each panel (prefill and decode) per failed N.
  std::set<int> failed_n;
  for (const auto& m : Tune().result.measurements) {
    if (!m.ok() && m.config.n_depth == 0) failed_n.insert(m.config.placement.n_cpu_moe);
  }
  ASSERT_FALSE(failed_n.empty());
  EXPECT_EQ(Count(html, "<g class=\"pt-failed\" data-chart=\"ncurve\""), 2 * failed_n.size());
  EXPECT_NE(html.find("cudaMalloc failed: out of memory"), std::string::npos);
  // Threads 2, 4, 8 with intervals, prefill and decode panels; 4 is chosen.
  const auto& cmps = Tune().result.comparisons;
  ASSERT_FALSE(cmps.empty());
  EXPECT_EQ(cmps.front().dimension, Dimension::kThreads);
  EXPECT_EQ(cmps.front().entries.size(), 3u);
  EXPECT_EQ(cmps.front().chosen, 4);
  EXPECT_EQ(Count(html, "<g class=\"pt [^\"]*\" data-chart=\"cmp1\""), 6u);
  // Tuned against defaults: 2 configurations x 4 tests (prefill, decode, empty and deep).
  const auto d = VersusDefaultsMeasurements(Tune());
  EXPECT_EQ(d.results.size(), 8u);
  EXPECT_EQ(std::count(d.labels.begin(), d.labels.end(), "tuned"), 4);
  EXPECT_EQ(Count(html, "<g class=\"pt [^\"]*\" data-chart=\"versus\""), 8u);
  // The memory map of the pick: GPU and host bars, the margin and the reserve.
  EXPECT_EQ(Count(html, "<g class=\"seg seg-margin\""), 1u);
  EXPECT_EQ(Count(html, "<g class=\"seg seg-others\""), 1u);
}

TEST(TuneDocument, DecisionsListEveryPhaseAndTheCurveReading) {
  const Report doc = TuneDocument(Tune(), {});
  const auto& table = std::get<DecisionTable>(FindSection(doc, "decisions")->blocks.front());
  std::set<std::string> what;
  for (const auto& d : table.decisions) what.insert(d.what);
  for (const char* phase :
       {"placement", "long context", "threads", "micro-batch", "cliff", "rejected"}) {
    EXPECT_TRUE(what.count(phase)) << phase;
  }
  const std::string md = RenderReport(doc, ReportFormat::kMarkdown);
  EXPECT_EQ(md.rfind("# moetune tune (SIMULATED): Fake-MoE-A3B-Q4\\_K\\_M.gguf", 0), 0u)
      << md.substr(0, 80);
  EXPECT_NE(md.find("```sh\nllama-server -m /models/Fake-MoE-A3B-Q4_K_M.gguf"), std::string::npos);
  EXPECT_EQ(md.find("<svg"), std::string::npos);
}

TEST(TuneDocument, WithoutAGpuPlacementIsNotDrawn) {
  TuneSpace s = testing::FakeGpuSpace();
  s.placement_matters = false;
  s.fixed_n = 20;
  s.headroom = {};
  TuneReport t = FakeGpuTune(s);
  t.result.memory.reset();
  t.vram_budget = 0;
  t.reserve = 0;
  const Report doc = TuneDocument(t, {});
  const Section* curve = FindSection(doc, "n-curve");
  ASSERT_NE(curve, nullptr);
  ASSERT_EQ(curve->blocks.size(), 1u);
  EXPECT_NE(std::get<Paragraph>(curve->blocks.front()).text.find("does not change speed"),
            std::string::npos);
  EXPECT_EQ(FindSection(doc, "memory"), nullptr);
  const auto& v = std::get<VerdictBlock>(doc.sections.front().blocks.front());
  EXPECT_NE(v.reason.find("no GPU device"), std::string::npos) << v.reason;
}

// Every flag a tune writes (-ot, -ctk/-ctv, -fa, -lm, -np, -fit) survives
// every format, which parses back to the command.
TEST(TuneEmit, EveryFormatParsesBackToTheTunedCommand) {
  TuneReport t = Tune();
  ServerConfig& c = t.result.best;
  c.model = "/models/Fake MoE.gguf";
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 13;
  c.placement.overrides = {{"blk\\.(1[0-2])\\.ffn_.*_exps", "CPU"}};
  c.ctx_size = 16384;
  c.threads = 4;
  c.n_ubatch = 1024;
  c.n_batch = 2048;
  c.flash_attn = FlashAttn::kOn;
  c.type_k = c.type_v = ggml_type::kQ8_0;
  c.load_mode = LoadMode::kNone;
  c.n_parallel = 1;
  c.fit = Switch::kOff;
  const std::vector<std::string> command = t.Command();
  const std::vector<std::string> canon = {"llama-server",
                                          "-m",
                                          "/models/Fake MoE.gguf",
                                          "-ngl",
                                          "99",
                                          "--n-cpu-moe",
                                          "13",
                                          "-ot",
                                          "blk\\.(1[0-2])\\.ffn_.*_exps=CPU",
                                          "-c",
                                          "16384",
                                          "-np",
                                          "1",
                                          "-ub",
                                          "1024",
                                          "-b",
                                          "2048",
                                          "-fa",
                                          "on",
                                          "-ctk",
                                          "q8_0",
                                          "-ctv",
                                          "q8_0",
                                          "-t",
                                          "4",
                                          "-fit",
                                          "off",
                                          "-lm",
                                          "none"};
  EXPECT_EQ(command, canon);
  auto emit = [&](EmitFormat f) {
    auto e = TuneEmit(t, f);
    EXPECT_TRUE(e.ok()) << EmitFormatName(f) << ": " << (e.ok() ? "" : e.error().message());
    return e.ok() ? *e : std::string();
  };
  EXPECT_EQ(testing::ShellWords(emit(EmitFormat::kServer)), canon);
  EXPECT_EQ(testing::ArgvFromEnv(emit(EmitFormat::kEnv)), canon);
  std::string section;
  EXPECT_EQ(testing::ArgvFromIni(emit(EmitFormat::kIni), &section), canon);
  EXPECT_EQ(section, "Fake MoE");
  EXPECT_EQ(testing::ArgvFromCompose(emit(EmitFormat::kCompose)), *ComposeServerArgv(c));
  for (auto f : {EmitFormat::kServer, EmitFormat::kEnv, EmitFormat::kIni, EmitFormat::kCompose}) {
    const std::string text = emit(f);
    EXPECT_NE(text.find("tuned by moetune"), std::string::npos) << text;
    EXPECT_NE(text.find("tuned with " + t.engine), std::string::npos) << text;
    EXPECT_NE(text.find("SIMULATED"), std::string::npos) << text;
  }
}

TEST(TuneEmit, RelativeModelBecomesAbsoluteAndMissingVariablesAreErrors) {
  TuneReport t = Tune();
  ServerConfig c = UnsetServerConfig();
  c.model = "models/m.gguf";
  c.threads = 4;
  c.kv_unified = Switch::kOff;  // -no-kvu: no variable of its own
  t.result.best = c;
  auto server = TuneEmit(t, EmitFormat::kServer);
  ASSERT_TRUE(server.ok());
  const std::string abs = (std::filesystem::current_path() / "models/m.gguf").string();
  EXPECT_EQ(testing::ShellWords(*server),
            (std::vector<std::string>{"llama-server", "-m", abs, "-no-kvu", "-ub", "512", "-b",
                                      "2048", "-t", "4"}));
  auto env = TuneEmit(t, EmitFormat::kEnv);
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message().find("-no-kvu has no LLAMA_ARG_"), std::string::npos);
  EXPECT_TRUE(TuneEmit(t, EmitFormat::kIni).ok());
  t.result.best.model.clear();
  EXPECT_FALSE(TuneEmit(t, EmitFormat::kServer).ok());
}

TEST(TuneEmit, VersionOfTheEngineItWasTunedWith) {
  TuneReport t;
  t.engine = "version: 0.7.0 (build 11669, commit Debian) at /usr/bin";
  EXPECT_EQ(TuneEngineVersion(t), "llama.cpp 0.7.0 (build 11669, commit Debian)");
  t.engine = "simulated: RTX 4070";
  EXPECT_EQ(TuneEngineVersion(t), "simulated: RTX 4070");
}

}  // namespace
}  // namespace moetune
