// Integration: the two KV layouts llama-server uses with several slots (one
// cache per slot, the default with an explicit -np; one shared cache with
// -kvu), checked against llama-server itself: llama-fit-params has no -kvu,
// so the server is started on a small model and its own log gives the KV
// cache, the recurrent state and the compute buffer it allocated (llama-server
// reserves its graph for one output per slot, ReserveOutputs::kPerSequence).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "engine/engine_info.h"
#include "model/compute_buffers.h"
#include "model/memory_map.h"
#include "model/model_info.h"
#include "plan/check.h"
#include "support.h"

namespace moetune::itest {
namespace {

struct ServerSizes {
  double kv_mib = 0;     // llama_kv_cache (+ the SWA cache) size lines
  double state_mib = 0;  // llama_memory_recurrent size line
  double compute_mib = -1;
  std::string log;
};

// Starts llama-server, waits for its compute buffer line, stops it.
ServerSizes RunServer(const std::filesystem::path& engine, const std::string& model,
                      const std::vector<std::string>& flags) {
  ServerSizes s;
  TempDir dir;
  const std::string log = dir.File("server.log");
  std::vector<std::string> argv = {
      (engine / "llama-server").string(), "-m", model, "--host", "127.0.0.1", "--port",
      std::to_string(FreePort()),         "-t", "2",   "-v",     "-fit",      "off"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  static const std::regex kKv(R"((llama_kv_cache|llama_memory_recurrent): size = +([0-9.]+) MiB)");
  static const std::regex kCompute(R"(sched_reserve: +CPU compute buffer size = +([0-9.]+) MiB)");
  {
    BackgroundProcess server(argv, log);
    for (int i = 0; i < 600 && server.Running(); ++i) {
      std::ifstream f(log);
      std::stringstream text;
      text << f.rdbuf();
      if (text.str().find("compute buffer size") != std::string::npos &&
          text.str().find("srv ") != std::string::npos)
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }  // stopped here
  std::ifstream f(log);
  std::string line;
  while (std::getline(f, line)) {
    s.log += line + "\n";
    std::smatch m;
    if (std::regex_search(line, m, kKv)) {
      (m[1] == "llama_kv_cache" ? s.kv_mib : s.state_mib) += std::stod(m[2]);
    }
    if (std::regex_search(line, m, kCompute) && s.compute_mib < 0) s.compute_mib = std::stod(m[1]);
  }
  return s;
}

struct Layout {
  int n_seq;
  bool unified;
  bool fa;
};

class ServerMemoryTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ServerMemoryTest, PredictionsMatchTheServerForBothLayouts) {
  const auto engine = EngineDir();
  ASSERT_TRUE(engine.has_value()) << "llama.cpp not found: run scripts/setup-engine.sh";
  DiscoveryOptions o;
  o.llama_dir = engine->string();
  auto discovered = DiscoverEngine(o);
  ASSERT_TRUE(discovered.ok()) << discovered.error().message();
  const bool reference_engine = discovered->version == kComputeRulesEngineVersion;
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  auto s = RunCommand({MoetuneBinary(), "synth", "--preset", GetParam(), "--scale", "small",
                       "--layers", "4", "--sparse", "-o", model},
                      120);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto info = LoadModelInfo(model);
  ASSERT_TRUE(info.ok()) << info.error().message();
  for (const Layout& l : {Layout{4, false, true}, Layout{4, true, true}, Layout{3, true, false}}) {
    ContextParams cp;
    cp.n_ctx = 8192;
    cp.n_seq = l.n_seq;
    cp.kv_unified = l.unified;
    cp.flash_attn = l.fa;
    cp.reserve_outputs = ReserveOutputs::kPerSequence;
    std::vector<std::string> flags = {
        "-c", "8192", "-np", std::to_string(l.n_seq), "-fa", l.fa ? "on" : "off"};
    flags.push_back(l.unified ? "-kvu" : "-no-kvu");
    const ServerSizes got = RunServer(*engine, model, flags);
    const std::string where = std::string(GetParam()) + " -np " + std::to_string(l.n_seq) +
                              (l.unified ? " -kvu" : " (one cache per slot)");
    ASSERT_GE(got.compute_mib, 0) << where << "\n"
                                  << got.log.substr(got.log.size() > 3000 ? got.log.size() - 3000
                                                                          : 0);
    auto cm = ComputeContextMemory(info->arch, cp);
    ASSERT_TRUE(cm.ok());
    auto compute = EstimateHostOnlyCompute(info->gguf, info->arch, cp);
    ASSERT_TRUE(compute.ok());
    constexpr double kMiB = 1 << 20;
    // The server prints two decimals: agreement to that precision.
    EXPECT_NEAR(static_cast<double>(cm->kv_bytes) / kMiB, got.kv_mib, 0.01) << where;
    EXPECT_NEAR(static_cast<double>(cm->state_bytes) / kMiB, got.state_mib, 0.01) << where;
    if (reference_engine) {
      EXPECT_NEAR(static_cast<double>(*compute) / kMiB, got.compute_mib, 0.01) << where;
    } else {
      // Another version's compute buffers differ (0.4.0: mostly smaller,
      // docs/engine.md): within the band plan --check promises.
      EXPECT_NEAR(static_cast<double>(*compute) / kMiB, got.compute_mib,
                  kCheckComputeTolerance * got.compute_mib)
          << where << " (" << discovered->Describe() << ")";
    }
  }
}

// gpt-oss: sliding-window layers (their cache holds n_seq windows when
// unified); qwen35moe: recurrent state per slot; qwen3moe: plain attention.
INSTANTIATE_TEST_SUITE_P(Presets, ServerMemoryTest,
                         ::testing::Values("gpt-oss-20b", "qwen35moe", "qwen3moe"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (auto& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace moetune::itest
