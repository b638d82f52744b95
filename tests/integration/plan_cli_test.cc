// Integration: `moetune plan` as a user runs it: what it prints is one
// configuration, the command carries exactly the planned memory-shaping flags
// (the same ones plan --check passes to llama-fit-params), nothing runnable is
// printed when nothing fits, and the exit codes say what happened
// (0 planned, 1 error, 3 nothing fits, 4 the check disagrees).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/engine_info.h"
#include "model/model_info.h"
#include "plan/check.h"
#include "plan/placement.h"
#include "support.h"

namespace moetune::itest {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

class PlanCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = EngineDir();
    ASSERT_TRUE(engine_.has_value()) << "llama.cpp not found: run scripts/setup-engine.sh";
  }
  // A preset's real shape, header only (the dry run reads no weights).
  std::string Model(const std::string& preset, const std::string& scale = "full") {
    std::string path = dir_.File(preset + "-" + scale + ".gguf");
    if (!fs::exists(path)) {
      auto r = RunCommand({MoetuneBinary(), "synth", "--preset", preset, "--scale", scale,
                           "--quant", "q4_k_m", "--sparse", "-o", path},
                          120);
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return path;
  }
  CommandResult Plan(std::vector<std::string> args) {
    args.insert(args.begin(), {MoetuneBinary(), "plan"});
    args.insert(args.end(), {"--host-ram", "1TiB", "--llama-dir", engine_->string()});
    return RunCommand(args, 300);
  }
  static json Json(const CommandResult& r) {
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }
  std::optional<fs::path> engine_;
  TempDir dir_;
};

TEST_F(PlanCliTest, NothingFitsPrintsNoCommandAndExits3) {
  const std::string m = Model("qwen3moe");
  auto r = Plan({m, "--vram", "2GiB", "--ctx", "256K", "--json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const json j = Json(r);
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_TRUE(j["command"].is_null());
  EXPECT_TRUE(j["command_argv"].is_null());
  EXPECT_GT(j["shortfall_bytes"].get<int64_t>(), 0);
  EXPECT_NE(r.err.find("nothing fits"), std::string::npos) << r.err;
  auto t = Plan({m, "--vram", "2GiB", "--ctx", "256K"});
  EXPECT_EQ(t.exit_code, 3);
  EXPECT_EQ(t.out.find("llama-server -m"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("No command: nothing fits"), std::string::npos) << t.out;
  // A dense model: layers, not experts.
  auto d = Plan({Model("llama"), "--vram", "64MiB", "--margin", "0"});
  EXPECT_EQ(d.exit_code, 3) << d.err;
  EXPECT_EQ(d.out.find("expert"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("layers"), std::string::npos) << d.out;
}

// No GPU (--vram 0) is a normal case, not "nothing fits": every layer on the
// host, -ngl 0 and no --n-cpu-moe, said once; llama.cpp's own dry run of that
// command agrees (this machine's engine has no GPU either).
TEST_F(PlanCliTest, NoGpuPlansEveryLayerOnTheHost) {
  const std::string m = Model("qwen3moe", "tiny");
  auto r = Plan({m, "--vram", "0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = Json(r);
  EXPECT_TRUE(j["host_only"].get<bool>());
  EXPECT_TRUE(j["fits"].get<bool>());
  EXPECT_EQ(j["gpu"]["total_bytes"], 0) << j["gpu"].dump();
  const auto cmd = j["command_argv"].get<std::vector<std::string>>();
  auto ngl = std::find(cmd.begin(), cmd.end(), "-ngl");
  ASSERT_NE(ngl, cmd.end()) << j["command"];
  ASSERT_NE(ngl + 1, cmd.end());
  EXPECT_EQ(*(ngl + 1), "0");
  EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "--n-cpu-moe"), cmd.end()) << j["command"];
  auto t = Plan({m, "--vram", "0"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("-ngl 0"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("n-cpu-moe"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("GPU budget"), std::string::npos) << t.out;
  size_t said = 0;
  for (size_t at = t.out.find("no GPU"); at != std::string::npos; at = t.out.find("no GPU", at + 1))
    ++said;
  EXPECT_EQ(said, 1u) << t.out;
  auto c = Plan({m, "--vram", "0", "--check", "--json"});
  EXPECT_EQ(c.exit_code, 0) << c.err << c.out;
}

// The command and the dry run come from one set of memory-shaping flags.
TEST_F(PlanCliTest, CheckPassesExactlyTheCommandsMemoryFlags) {
  const std::string m = Model("qwen35moe");
  auto r = Plan({m, "--vram", "12GiB", "--ctx", "16K", "--parallel", "4", "--ubatch", "1024",
                 "--batch", "4096", "--ctk", "q8_0", "--ctv", "q8_0", "--check", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = Json(r);
  const auto cmd = j["command_argv"].get<std::vector<std::string>>();
  const auto engine = j["check"]["engine_command"].get<std::vector<std::string>>();
  ASSERT_GT(cmd.size(), 5u);
  // llama-server -m MODEL <flags> -fit off
  const std::vector<std::string> flags(cmd.begin() + 3, cmd.end() - 2);
  EXPECT_NE(std::search(engine.begin(), engine.end(), flags.begin(), flags.end()), engine.end())
      << "server: " << j["command"] << "\nengine: " << json(engine).dump();
  for (const char* f : {"-c", "-np", "-ub", "-b", "-ctk", "-ctv", "-fa", "-ngl", "--n-cpu-moe"})
    EXPECT_NE(std::find(flags.begin(), flags.end(), f), flags.end()) << f;
  EXPECT_TRUE(j["check"]["agrees"].get<bool>()) << j["check"].dump(2);
  // Four slots without -kvu: one cache of ctx/4 per slot, said so.
  EXPECT_EQ(std::find(cmd.begin(), cmd.end(), "-kvu"), cmd.end());
  EXPECT_EQ(j["context"]["n_ctx_per_slot"].get<int64_t>(), 4096);
  EXPECT_EQ(j["context"]["slots"], "4 slots x 4096 tokens, one cache per slot (no -kvu)");
}

TEST_F(PlanCliTest, SharedCacheIsPlannedAndItsCheckRefusedClearly) {
  const std::string m = Model("gpt-oss-20b");
  auto r = Plan({m, "--vram", "12GiB", "--ctx", "32K", "--parallel", "4", "--kvu", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = Json(r);
  const auto cmd = j["command_argv"].get<std::vector<std::string>>();
  auto np = std::find(cmd.begin(), cmd.end(), "-np");
  ASSERT_NE(np, cmd.end());
  EXPECT_EQ(*(np + 1), "4");
  EXPECT_NE(std::find(cmd.begin(), cmd.end(), "-kvu"), cmd.end());
  EXPECT_EQ(j["context"]["n_ctx_per_slot"].get<int64_t>(), 32768);
  auto t = Plan({m, "--vram", "12GiB", "--ctx", "32K", "--parallel", "4", "--kvu"});
  EXPECT_NE(t.out.find("4 slots sharing one 32768-token cache (-kvu)"), std::string::npos) << t.out;
  // This engine's llama-fit-params has no -kvu: the check says so instead of
  // checking another layout.
  auto c = Plan({m, "--vram", "12GiB", "--ctx", "32K", "--parallel", "4", "--kvu", "--check"});
  EXPECT_EQ(c.exit_code, 1) << c.out;
  EXPECT_NE(c.err.find("-kvu"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("llama-fit-params"), std::string::npos) << c.err;
}

// An engine whose dry run reports a different context: the check disagrees
// and plan exits 4 (issue 8).
TEST_F(PlanCliTest, DisagreementExits4) {
  TempDir fake;
  for (const char* tool : {"llama-bench", "llama-server", "llama-cli"}) {
    std::ofstream f(fake.File(tool));
    f << "#!/bin/sh\nexec '" << (*engine_ / tool).string() << "' \"$@\"\n";
  }
  {
    std::ofstream f(fake.File("llama-fit-params"));
    f << "#!/bin/sh\n'" << (*engine_ / "llama-fit-params").string()
      << "' \"$@\" | awk 'NF == 4 { $3 = $3 * 2 + 64 } { print }'\n";
  }
  for (const auto& e : fs::directory_iterator(fake.path()))
    fs::permissions(e.path(), fs::perms::owner_all);
  auto r = RunCommand({MoetuneBinary(), "plan", Model("qwen3moe"), "--vram", "12GiB", "--check",
                       "--json", "--llama-dir", fake.path().string()},
                      300);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const json j = Json(r);
  EXPECT_FALSE(j["check"]["agrees"].get<bool>());
}

// Given part 2 of a split model, the command names part 1 (the engine loads
// the other parts from it).
TEST_F(PlanCliTest, SplitModelCommandNamesPartOne) {
  const std::string m = dir_.File("tiny.gguf");
  auto s = RunCommand({MoetuneBinary(), "synth", "--preset", "qwen3moe", "-o", m}, 120);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const std::string prefix = dir_.File("split");
  auto sp = RunCommand(
      {(*engine_ / "llama-gguf-split").string(), "--split", "--split-max-tensors", "40", m, prefix},
      120);
  ASSERT_EQ(sp.exit_code, 0) << sp.err;
  const std::string part1 = prefix + "-00001-of-00003.gguf";
  const std::string part2 = prefix + "-00002-of-00003.gguf";
  ASSERT_TRUE(fs::exists(part2)) << sp.out;
  auto r = Plan({part2, "--vram", "8GiB", "--check", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = Json(r);
  EXPECT_EQ(j["command_argv"][2], part1);
  const auto engine = j["check"]["engine_command"].get<std::vector<std::string>>();
  EXPECT_EQ(*(std::find(engine.begin(), engine.end(), "-m") + 1), part1);
}

// A check of the reference engine agrees on every device; another engine
// version may disagree only on compute buffers, moetune's the larger, and the
// check says so.
void ExpectCheckAgrees(const CommandResult& r, const json& c, const std::string& what,
                       bool reference_engine) {
  if (reference_engine || r.exit_code == 0) {
    ASSERT_EQ(r.exit_code, 0) << what << ": " << r.err;
    EXPECT_TRUE(c["agrees"].get<bool>()) << what << ": " << c.dump(2);
    return;
  }
  ASSERT_EQ(r.exit_code, 4) << what << ": " << r.err;
  for (const json& d : c["devices"]) {
    EXPECT_TRUE(d["model"]["within_tolerance"].get<bool>()) << what << ": " << d.dump();
    EXPECT_TRUE(d["context"]["within_tolerance"].get<bool>()) << what << ": " << d.dump();
    EXPECT_GE(d["compute"]["difference_bytes"].get<int64_t>(), 0) << what << ": " << d.dump();
  }
  EXPECT_NE(c["notes"].dump().find("smaller compute buffers"), std::string::npos) << c.dump(2);
}

// plan --check --rpc: the engine's dry run with a real second device (the
// engine's ggml-rpc-server on loopback) checks the device/host split of the
// printed placement, for several --n-cpu-moe and a fine fill. On the engine
// whose compute buffers the rules follow every cell agrees; another version
// (0.4.0 reserves smaller compute buffers) may disagree only on compute
// buffers, moetune's the larger, and the check says so.
TEST_F(PlanCliTest, CheckWithRpcComparesTheSplitPerDevice) {
  DiscoveryOptions o;
  o.llama_dir = engine_->string();
  auto discovered = DiscoverEngine(o);
  ASSERT_TRUE(discovered.ok()) << discovered.error().message();
  const bool reference_engine = discovered->version == kComputeRulesEngineVersion;
  RpcServer rpc(*engine_);
  ASSERT_FALSE(rpc.endpoint().empty()) << rpc.Log();
  const std::string m = Model("qwen3moe");
  auto info = LoadModelInfo(m);
  ASSERT_TRUE(info.ok());
  // A budget whose headroom holds part of the next layer's experts: a fine fill.
  PlanRequest req;
  req.vram_free = 12LL << 30;
  req.ctx.n_ctx = 8192;
  auto base = PlanPlacement(info->gguf, info->arch, info->weights, req);
  ASSERT_TRUE(base.ok() && base->smallest_fitting);
  const PlacementOption& b = base->options[*base->smallest_fitting];
  const int64_t fine_vram =
      req.vram_free - b.headroom +
      info->weights.layers[static_cast<size_t>(b.n_cpu_moe - 1)].experts() * 4 / 10;
  std::set<int> seen;
  bool fine_filled = false;
  for (const std::string& vram : {std::string("6GiB"), std::string("12GiB"),
                                  std::to_string(fine_vram), std::string("40GiB")}) {
    auto r =
        Plan({m, "--vram", vram, "--ctx", "8192", "--check", "--rpc", rpc.endpoint(), "--json"});
    const json j = Json(r);
    const json& c = j["check"];
    ExpectCheckAgrees(r, c, vram, reference_engine);
    ASSERT_EQ(c["devices"].size(), 2u) << c.dump(2);
    EXPECT_EQ(c["devices"][0]["device"], "RPC0");
    EXPECT_EQ(c["devices"][1]["device"], "Host");
    EXPECT_EQ(c["compute_rule"], "RPC");
    seen.insert(j["n_cpu_moe"].get<int>());
    const auto engine = c["engine_command"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(engine.begin(), engine.end(), "--rpc"), engine.end());
    if (!j["override_tensors"].empty()) {
      fine_filled = true;
      EXPECT_NE(std::find(engine.begin(), engine.end(), "-ot"), engine.end());
    }
  }
  EXPECT_GE(seen.size(), 3u);
  EXPECT_TRUE(fine_filled);
}

// Several devices (issue: several GPUs and RPC hosts): `plan --vram A,B[,C]
// --rpc ...` splits a full-size shape over two and three real RPC devices
// (ggml-rpc-server on loopback, the engine's own per-device buffers) with
// -dev, -ts as layer counts and one -ot rule for the experts on the CPU; the
// engine's dry run of that exact command agrees with moetune's memory map on
// every device (weights and context 1%, compute 15%).
TEST_F(PlanCliTest, CheckAcrossTwoAndThreeRpcDevices) {
  DiscoveryOptions o;
  o.llama_dir = engine_->string();
  auto discovered = DiscoverEngine(o);
  ASSERT_TRUE(discovered.ok()) << discovered.error().message();
  const bool reference_engine = discovered->version == kComputeRulesEngineVersion;
  RpcServer r0(*engine_), r1(*engine_), r2(*engine_);
  ASSERT_FALSE(r0.endpoint().empty() || r1.endpoint().empty() || r2.endpoint().empty());
  const std::string m = Model("qwen3moe");
  for (const auto& [vram, rpc] : std::vector<std::pair<std::string, std::string>>{
           {"10GiB,6GiB", r0.endpoint() + "," + r1.endpoint()},
           {"7GiB,5GiB,4GiB", r0.endpoint() + "," + r1.endpoint() + "," + r2.endpoint()}}) {
    const size_t n = static_cast<size_t>(std::count(vram.begin(), vram.end(), ',')) + 1;
    auto r = Plan({m, "--vram", vram, "--ctx", "8192", "--check", "--rpc", rpc, "--json"});
    const json j = Json(r);
    const json& c = j["check"];
    ExpectCheckAgrees(r, c, vram, reference_engine);
    // Every device in the plan and in the check, in the plan's -dev order (the
    // engine's, or another that holds more: the last device holds the head).
    ASSERT_EQ(j["devices"].size(), n) << j.dump(2);
    ASSERT_EQ(c["devices"].size(), n + 1) << c.dump(2);
    std::set<std::string> seen;
    for (size_t d = 0; d < n; ++d) {
      EXPECT_EQ(c["devices"][d]["device"], j["devices"][d]["device"]);
      seen.insert(j["devices"][d]["device"].get<std::string>());
      EXPECT_GE(j["devices"][d]["headroom_bytes"].get<int64_t>(), 0);
      EXPECT_GT(j["devices"][d]["layers"].get<int>(), 0);
    }
    for (size_t d = 0; d < n; ++d) EXPECT_EQ(seen.count("RPC" + std::to_string(d)), 1u);
    if (j["devices"][0]["device"] != "RPC0" || (n > 2 && j["devices"][1]["device"] != "RPC1")) {
      bool said = false;
      for (const auto& note : j["notes"])
        said = said || note.get<std::string>().find("-dev") != std::string::npos;
      EXPECT_TRUE(said) << "another order than the engine's without a note: " << j["notes"].dump();
    }
    EXPECT_EQ(c["devices"][n]["device"], "Host");
    // The experts that stay on the CPU come from more than the first device.
    const auto engine = c["engine_command"].get<std::vector<std::string>>();
    for (const char* flag : {"-dev", "-ts", "--rpc", "-ot"})
      EXPECT_NE(std::find(engine.begin(), engine.end(), flag), engine.end()) << flag;
    EXPECT_EQ(j["command"].get<std::string>().find("--n-cpu-moe"), std::string::npos);
  }
  // More servers than sizes is refused by name.
  auto bad = Plan({m, "--vram", "10GiB,6GiB", "--rpc",
                   r0.endpoint() + "," + r1.endpoint() + "," + r2.endpoint(), "--check"});
  EXPECT_EQ(bad.exit_code, 1) << bad.err;
  EXPECT_NE(bad.err.find("--rpc names 3 servers for the 2 devices"), std::string::npos) << bad.err;
}

// A local GPU and an RPC host: --vram gives the local GPU's size first (the
// engine lists its own devices first), then the server's; the plan uses them
// in llama.cpp's model order, the RPC device first, so that the output head
// and its logits stay on the local GPU.
TEST_F(PlanCliTest, ALocalGpuAndAnRpcHost) {
  auto r = Plan({Model("qwen3moe"), "--vram", "10GiB,6GiB", "--rpc", "192.0.2.7:50052", "--ctx",
                 "8192", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = Json(r);
  ASSERT_EQ(j["devices"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["devices"][0]["device"], "RPC0");
  EXPECT_EQ(j["devices"][0]["free_bytes"].get<int64_t>(), int64_t{6} << 30);
  EXPECT_EQ(j["devices"][1]["device"], "CUDA0");
  EXPECT_EQ(j["devices"][1]["free_bytes"].get<int64_t>(), int64_t{10} << 30);
  const std::string command = j["command"].get<std::string>();
  EXPECT_NE(command.find("-dev RPC0,CUDA0"), std::string::npos) << command;
  EXPECT_NE(command.find("--rpc 192.0.2.7:50052"), std::string::npos) << command;
}

TEST_F(PlanCliTest, ReserveBeyondTheVramNamesBothValues) {
  auto r = Plan({Model("qwen3moe"), "--vram", "4GiB", "--reserve", "6GiB"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("6.00 GiB"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4.00 GiB"), std::string::npos) << r.err;
}

TEST_F(PlanCliTest, RefusesWhatTheEngineRefusesWithItsReason) {
  auto mla = Plan({Model("deepseek2"), "--vram", "24GiB", "--ctk", "q8_0", "--ctv", "f16"});
  EXPECT_EQ(mla.exit_code, 1);
  EXPECT_NE(mla.err.find("does not support different K and V cache types"), std::string::npos)
      << mla.err;
  auto v = Plan({Model("qwen3moe"), "--vram", "24GiB", "--fa", "off", "--ctv", "q8_0"});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.err.find("quantized V cache requires flash_attn"), std::string::npos) << v.err;
}

// Issue 8: the micro-batch is clamped to the context as llama.cpp does, and
// absurd sizes are computed without wrapping.
TEST_F(PlanCliTest, MicroBatchIsClampedAndHugeValuesDoNotWrap) {
  const std::string m = Model("qwen3moe");
  auto big =
      Plan({m, "--vram", "24GiB", "--ctx", "512", "--ubatch", "4096", "--batch", "4096", "--json"});
  auto same = Plan({m, "--vram", "24GiB", "--ctx", "512", "--json"});
  ASSERT_EQ(big.exit_code, 0) << big.err;
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(Json(big)["gpu"]["compute_bytes"], Json(same)["gpu"]["compute_bytes"]);
  EXPECT_EQ(Json(big)["context"]["n_ubatch"], 512);
  auto huge =
      Plan({m, "--vram", "24GiB", "--ctx", "1000000000", "--ubatch", "2147483647", "--json"});
  EXPECT_EQ(huge.exit_code, 3) << huge.err;
  const json h = Json(huge);
  EXPECT_GT(h["options"][0]["gpu"]["kv_bytes"].get<int64_t>(), int64_t{1} << 40);
}

// GPU memory described one way (docs/cli.md "GPU memory"): --vram-used is a
// flag; a preset's total with --vram-used and --vram with --vram-used are the
// same budget and the same N; --reserve comes off once; the budget and the
// source of each figure are printed first.
TEST_F(PlanCliTest, OneGpuMemoryModelWhicheverWayTheCardIsDescribed) {
  const std::string m = Model("qwen3moe");
  auto preset = Plan({m, "--ctx", "32K", "--machine", "rtx3060-12g", "--vram-used", "1.7GiB",
                      "--reserve", "512MiB", "--json"});
  ASSERT_EQ(preset.exit_code, 0) << preset.err;
  auto flags = Plan({m, "--ctx", "32K", "--vram", "12GiB", "--vram-used", "1.7GiB", "--reserve",
                     "512MiB", "--json"});
  ASSERT_EQ(flags.exit_code, 0) << flags.err;
  EXPECT_EQ(Json(preset)["n_cpu_moe"], Json(flags)["n_cpu_moe"]) << preset.out << flags.out;
  EXPECT_EQ(flags.err.rfind("moetune: GPU budget 9.80 GiB = 12.00 GiB total (--vram) - 1.70 GiB "
                            "held by other programs (--vram-used) - 512.0 MiB kept free "
                            "(--reserve)",
                            0),
            0u)
      << flags.err;
  EXPECT_NE(preset.err.find("12.00 GiB total (--machine rtx3060-12g)"), std::string::npos)
      << preset.err;
  // The preset's idle-desktop share is an assumption, named, and replaced
  // (never added to) by --vram-used.
  auto assumed = Plan({m, "--ctx", "32K", "--machine", "rtx3060-12g", "--json"});
  ASSERT_EQ(assumed.exit_code, 0) << assumed.err;
  EXPECT_NE(assumed.err.find("assumed for an idle desktop"), std::string::npos) << assumed.err;
  // Impossible figures are refused by name.
  auto bad = Plan({m, "--vram", "8GiB", "--vram-used", "9GiB"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--vram-used 9.00 GiB is more than the GPU's total memory"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace moetune::itest
