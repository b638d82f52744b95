// Integration: `plan --emit server|env|ini|compose` against the real engine.
// Every format parses back to the plan's command; the environment names are
// the ones the installed llama-server lists; the installed llama-server reads
// the preset (router mode shows the arguments it derives from it) and the
// environment (the running server reports the model, context and slots).
#include "report/emit.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "config/server_argv.h"
#include "engine/engine_info.h"
#include "engine/server_test_util.h"
#include "report/emit_test_util.h"
#include "report/report_blocks.h"
#include "support.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

class EmitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = fs::absolute(dir_->File("emit model.gguf")).string();
    const auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }

  // The plan's command line; `slots` adds four slots sharing one cache (-np 4 -kvu).
  static std::vector<std::string> Plan(bool slots, std::vector<std::string> tail) {
    std::vector<std::string> argv = {MoetuneBinary(), "plan",  model_,  "--vram", "72MiB",
                                     "--margin",      "16MiB", "--ctx", "3072"};
    if (slots) argv.insert(argv.end(), {"--parallel", "4", "--kvu"});
    argv.insert(argv.end(), tail.begin(), tail.end());
    return argv;
  }

  // The plan's command (from --json), with the model path made absolute as --emit writes it.
  static std::vector<std::string> PlanArgv(bool slots = false) {
    const auto r = RunCommand(Plan(slots, {"--json"}), 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded()) return {};
    auto argv = j["command_argv"].get<std::vector<std::string>>();
    for (size_t i = 1; i + 1 < argv.size(); ++i) {
      if (argv[i] == "-m") argv[i + 1] = fs::absolute(argv[i + 1]).lexically_normal().string();
    }
    return argv;
  }

  static std::string Emit(const std::string& format, bool slots = false) {
    const auto r = RunCommand(Plan(slots, {"--emit", format}), 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  static std::vector<std::string> RouterArgv(bool slots);
  static std::pair<json, json> ServeFromEnvironment(bool slots);

  static inline TempDir* dir_ = nullptr;
  static inline std::string model_;
};

TEST_F(EmitTest, EveryFormatParsesBackToThePlansCommand) {
  const auto argv = PlanArgv();
  ASSERT_GT(argv.size(), 10u);
  // The plan's command is the one writer's: it reads back and is written again the same.
  EXPECT_EQ(ServerArgv(ParseServerArgv(argv).config), argv);
  EXPECT_EQ(testing::ShellWords(Emit("server")), argv);
  EXPECT_EQ(testing::ArgvFromEnv(Emit("env")), argv);
  std::string section;
  EXPECT_EQ(testing::ArgvFromIni(Emit("ini"), &section), argv);
  EXPECT_EQ(section, "emit model");
  auto compose = ComposeServerArgv(ParseServerArgv(argv).config);
  ASSERT_TRUE(compose.ok());
  EXPECT_EQ(testing::ArgvFromCompose(Emit("compose")), *compose);
}

TEST_F(EmitTest, EveryFormatNamesTheEngineVersion) {
  auto engine = EngineDir();
  ASSERT_TRUE(engine.has_value()) << "llama.cpp not found: run scripts/setup-engine.sh";
  DiscoveryOptions o;
  o.llama_dir = engine->string();
  auto info = DiscoverEngine(o);
  ASSERT_TRUE(info.ok()) << info.error().message();
  ASSERT_FALSE(info->version_line.empty());
  const std::string version = EngineVersionText(*info);  // "llama.cpp 0.7.0 (build 11669, ...)"
  for (const char* f : {"server", "env", "ini", "compose"}) {
    EXPECT_NE(Emit(f).find(version), std::string::npos) << f << " lacks '" << version << "'";
  }
}

TEST_F(EmitTest, EnvironmentNamesAreTheInstalledServers) {
  auto engine = EngineDir();
  ASSERT_TRUE(engine.has_value());
  const auto r = RunCommand({(*engine / "llama-server").string(), "--help"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Option blocks: a line starting with '-' and its indented continuation lines.
  std::map<std::string, std::string> blocks;  // long name -> block text
  std::istringstream lines(r.out + r.err);
  std::string current;
  std::vector<std::string> names;
  auto flush = [&] {
    for (const auto& n : names) blocks[n] = current;
    names.clear();
    current.clear();
  };
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] == '-') {
      flush();
      std::istringstream words(line);
      for (std::string w; words >> w;) {
        if (w.empty() || w[0] != '-') break;
        if (w.back() == ',') w.pop_back();
        names.push_back(w);
      }
    }
    current += line + "\n";
  }
  flush();
  for (const auto& f : Flags()) {
    if (!f.TakenBy(kToolServer)) continue;
    // Flags of older builds (before -lm), read from their command lines, never written.
    if (f.id == FlagId::kNoMmap || f.id == FlagId::kMlock) continue;
    auto it = blocks.find(f.long_name);
    ASSERT_NE(it, blocks.end()) << f.long_name << " is not in llama-server --help";
    EXPECT_NE(it->second.find(f.spelling), std::string::npos) << it->second;
    if (f.env != nullptr) {
      EXPECT_NE(it->second.find(std::string("(env: ") + f.env + ")"), std::string::npos)
          << it->second;
    } else if (std::string_view(f.long_name).rfind("--no-", 0) != 0) {
      // A "--no-" twin shares its positive flag's variable (set to false).
      EXPECT_EQ(it->second.find("(env:"), std::string::npos) << it->second;
    }
  }
}

// The arguments the installed llama-server's router derives from the emitted
// preset (less what the router controls itself), made canonical.
std::vector<std::string> EmitTest::RouterArgv(bool slots) {
  auto engine = EngineDir();
  if (!engine) return {"(no engine)"};
  const std::string ini = dir_->File(slots ? "preset-slots.ini" : "preset.ini");
  std::ofstream(ini) << Emit("ini", slots);
  auto free_port = FindFreeLoopbackPort();
  if (!free_port.ok()) return {"(no free port)"};
  const int port = *free_port;
  BackgroundProcess router({(*engine / "llama-server").string(), "--models-preset", ini, "--host",
                            "127.0.0.1", "--port", std::to_string(port)},
                           dir_->File(slots ? "router-slots.log" : "router.log"));
  if (!router.started()) return {"(router did not start)"};
  const std::string body = WaitForGet(port, "/models", 60);
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.contains("data")) return {"(no /models answer)", body};
  // The router lists the preset with the arguments it will start the model with.
  std::vector<std::string> args;
  for (const auto& m : j["data"]) {
    if (m.value("id", "") == "emit model")
      args = m["status"]["args"].get<std::vector<std::string>>();
  }
  if (args.empty()) return {"(preset not listed)", body};
  // Leave out what the router itself controls: its program, host, port, alias, log colours.
  std::vector<std::string> model_args = {"llama-server"};
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--host" || args[i] == "--port" || args[i] == "--alias" ||
        args[i] == "--log-colors") {
      ++i;
      continue;
    }
    model_args.push_back(args[i]);
  }
  const ParsedServerCommand p = ParseServerArgv(model_args);
  if (!p.other.empty() || !p.invalid.empty() || !p.not_understood.empty())
    return {"(arguments moetune does not write: " + ShellJoin(model_args) + ")"};
  return ServerArgv(p.config);
}

// Starts the installed llama-server with only the emitted environment
// (`env NAME=value ... llama-server`) and returns its /props and /slots.
std::pair<json, json> EmitTest::ServeFromEnvironment(bool slots) {
  auto engine = EngineDir();
  if (!engine) return {};
  std::vector<std::string> argv = {"/usr/bin/env"};
  const std::string text = Emit("env", slots);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    const auto value = testing::ShellWords(line.substr(eq + 1));
    EXPECT_EQ(value.size(), 1u) << line;
    if (eq == std::string::npos || value.size() != 1) return {};
    argv.push_back(line.substr(0, eq) + "=" + value[0]);
  }
  auto free_port = FindFreeLoopbackPort();
  if (!free_port.ok()) return {};
  const int port = *free_port;
  argv.insert(argv.end(), {"LLAMA_ARG_HOST=127.0.0.1", "LLAMA_ARG_PORT=" + std::to_string(port),
                           (*engine / "llama-server").string()});
  BackgroundProcess server(argv, dir_->File(slots ? "env-server-slots.log" : "env-server.log"));
  if (!server.started() || WaitForGet(port, "/health", 120).empty()) return {};
  return {json::parse(WaitForGet(port, "/props", 10), nullptr, false),
          json::parse(WaitForGet(port, "/slots", 10), nullptr, false)};
}

TEST_F(EmitTest, InstalledServerReadsThePreset) {
  ASSERT_TRUE(EngineDir().has_value());
  EXPECT_EQ(RouterArgv(false), PlanArgv());
}

TEST_F(EmitTest, InstalledServerReadsTheEnvironment) {
  ASSERT_TRUE(EngineDir().has_value());
  ASSERT_EQ(testing::ArgvFromEnv(Emit("env")), PlanArgv());
  const auto [props, slots] = ServeFromEnvironment(false);
  ASSERT_TRUE(props.is_object()) << "llama-server did not become healthy";
  EXPECT_EQ(props["model_path"], model_);
  EXPECT_EQ(props["total_slots"], 1);  // -np 1 (the server's own default is 4 slots)
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 3072);
}

// Four slots sharing one cache (-np 4 -kvu, a switch without a value): every
// format carries it, and the installed server reads it from the preset and
// from the environment (each slot then sees the whole context, not a quarter).
TEST_F(EmitTest, SharedCacheSlotsInEveryFormat) {
  ASSERT_TRUE(EngineDir().has_value());
  const auto argv = PlanArgv(true);
  ASSERT_NE(std::find(argv.begin(), argv.end(), "-kvu"), argv.end())
      << ::testing::PrintToString(argv);
  EXPECT_EQ(testing::ShellWords(Emit("server", true)), argv);
  const std::string env = Emit("env", true);
  EXPECT_NE(env.find("\nLLAMA_ARG_KV_UNIFIED=true\n"), std::string::npos) << env;
  EXPECT_EQ(testing::ArgvFromEnv(env), argv);
  const std::string ini = Emit("ini", true);
  EXPECT_NE(ini.find("\nkv-unified = true\n"), std::string::npos) << ini;
  EXPECT_EQ(testing::ArgvFromIni(ini), argv);
  auto compose = ComposeServerArgv(ParseServerArgv(argv).config);
  ASSERT_TRUE(compose.ok());
  EXPECT_EQ(testing::ArgvFromCompose(Emit("compose", true)), *compose);
  EXPECT_EQ(RouterArgv(true), argv);
  const auto [props, slots] = ServeFromEnvironment(true);
  ASSERT_TRUE(props.is_object()) << "llama-server did not become healthy";
  EXPECT_EQ(props["total_slots"], 4);
  ASSERT_TRUE(slots.is_array());
  ASSERT_EQ(slots.size(), 4u);
  for (const auto& s : slots) EXPECT_EQ(s["n_ctx"], 3072) << s.dump();  // one shared cache
}

TEST_F(EmitTest, BadOptionsAreABadCommandLine) {
  auto both = RunCommand(
      {MoetuneBinary(), "plan", model_, "--vram", "72MiB", "--emit", "env", "--json"}, 60);
  EXPECT_EQ(both.exit_code, 2) << both.err;
  auto bad = RunCommand({MoetuneBinary(), "plan", model_, "--vram", "72MiB", "--emit", "yaml"}, 60);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("compose"), std::string::npos) << bad.err;
  auto pdf = RunCommand(
      {MoetuneBinary(), "plan", model_, "--vram", "72MiB", "--report", dir_->File("r.pdf")}, 60);
  EXPECT_EQ(pdf.exit_code, 2);
  EXPECT_NE(pdf.err.find(".html"), std::string::npos) << pdf.err;
  EXPECT_FALSE(fs::exists(dir_->File("r.pdf")));
  auto analyze = RunCommand({MoetuneBinary(), "analyze", model_, "--report", "x.txt"}, 60);
  EXPECT_EQ(analyze.exit_code, 2);
}

}  // namespace
}  // namespace moetune::itest
