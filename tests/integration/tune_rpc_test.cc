// Integration: `moetune tune --rpc` with the real
// engine across the device of a real ggml-rpc-server on loopback (issue 20,
// items 6 and 7): every measurement and the pick join the server, the
// placement is searched on the device's own budget, and a server that dies
// in the middle of a tune is a failed measurement naming it, not a hang; no
// process is left behind (TinyModelSuite::TearDown).

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// The tiny model's GPU total is about 33 MiB with every expert on the device
// and 21 MiB with none (plan); tune keeps llama.cpp's 1 GiB margin, so this
// budget fits the experts of about five of its eight layers on the device.
constexpr const char* kDeviceBudget = "1054MiB";

class TuneRpcTest : public TinyModelSuite {
 protected:
  static void SetUpTestSuite() { SetUpModel("tune_rpc.gguf"); }

  std::vector<std::string> Tune(const std::string& endpoint, const std::string& out) const {
    // A short workload (prompts under 512 tokens: no micro-batch phase), one
    // thread count, two repetitions; two minutes at most (a whole tune of
    // this model over the device takes about four on two busy cores).
    return {MoetuneBinary(),
            "tune",
            model_,
            "--ctx",
            "1024",
            "--workload",
            "256:64",
            "-r",
            "2",
            "--threads",
            "2",
            "--budget",
            "2",
            "--no-journal",
            "--llama-dir",
            info_->dir,
            "--rpc",
            endpoint,
            "--vram",
            kDeviceBudget,
            "--json",
            "-o",
            out,
            "--no-progress"};
  }

  static json ReadJson(const std::string& path) {
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return json::parse(text, nullptr, false);
  }
};

TEST_F(TuneRpcTest, TunesAcrossTheDeviceOfAnRpcServer) {
  RpcServer rpc(info_->dir);
  ASSERT_FALSE(rpc.endpoint().empty()) << rpc.Log();
  TempDir out;
  const CommandResult r = RunCommand(Tune(rpc.endpoint(), out.File("tune.json")), 900);
  ASSERT_FALSE(r.timed_out) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = ReadJson(out.File("tune.json"));
  ASSERT_FALSE(j.is_discarded()) << r.err;
  // The pick joins the server, and the printed command says so.
  EXPECT_EQ(j["pick"]["rpc"], json::array({rpc.endpoint()})) << j["pick"].dump();
  const json& cmd = j["command"];
  const auto at = std::find(cmd.begin(), cmd.end(), json("--rpc"));
  ASSERT_NE(at, cmd.end()) << cmd.dump();
  ASSERT_NE(at + 1, cmd.end()) << cmd.dump();
  EXPECT_EQ(*(at + 1), rpc.endpoint()) << cmd.dump();
  EXPECT_NE(j["reproduce"].dump().find("--rpc " + rpc.endpoint()), std::string::npos)
      << j["reproduce"].dump();
  // The placement was searched on the device's budget: several N measured,
  // every one of them over the server.
  std::set<int> ns;
  for (const json& m : j["measurements"]) {
    EXPECT_EQ(m.value("rpc", json::array()), json::array({rpc.endpoint()})) << m.dump();
    if (m.contains("n_cpu_moe") && m["n_cpu_moe"].is_number()) ns.insert(m["n_cpu_moe"].get<int>());
    EXPECT_FALSE(m.contains("failure")) << m.dump();
  }
  EXPECT_GE(ns.size(), 2u) << j["measurements"].dump();
  bool placement = false, order = false;
  for (const json& d : j["decisions"]) {
    placement = placement || d["phase"] == "placement";
    order = order || d["phase"] == "expert order";
  }
  EXPECT_TRUE(placement) << j["decisions"].dump();
  // Which end of the layers keeps its experts on the CPU is measured on the
  // device wherever the pick keeps some, not all, of them there (when the
  // two minutes reach that far: a busy two-core runner may not).
  const int n = j["pick"].value("n_cpu_moe", 0);
  if (!j["budget_exhausted"].get<bool>()) {
    if (n > 0 && n < 8) {
      EXPECT_TRUE(order) << "N=" << n << ": " << j["decisions"].dump();
    }
    EXPECT_TRUE(j["versus_defaults"].is_object()) << j.dump();
  }
  // The server's device memory, not the (absent) local GPU's, was the budget.
  EXPECT_NE(r.err.find("RPC0"), std::string::npos) << r.err;
}

TEST_F(TuneRpcTest, AServerThatDiesMidTuneIsAFailedMeasurementNamingIt) {
  RpcServer rpc(info_->dir);
  ASSERT_FALSE(rpc.endpoint().empty()) << rpc.Log();
  TempDir out;
  SpawnOptions s;
  s.argv = Tune(rpc.endpoint(), out.File("tune.json"));
  s.stdout_mode = OutputMode::kDiscard;
  s.stderr_mode = OutputMode::kFile;
  s.stderr_file = out.File("tune.err");
  auto tune = ChildProcess::Spawn(s);
  ASSERT_TRUE(tune.ok()) << tune.error().message();
  // Past moetune's own check and a few of the engine's runs on the host.
  ASSERT_TRUE(LogShows(rpc, "Accepted client connection", 120)) << rpc.Log();
  std::this_thread::sleep_for(std::chrono::seconds(8));
  ASSERT_GT(rpc.pid(), 0);
  ASSERT_EQ(::kill(rpc.pid(), SIGKILL), 0);
  const auto t0 = Clock::now();
  const auto status = (*tune)->Pump(Clock::now() + std::chrono::seconds(600), nullptr, nullptr);
  ASSERT_TRUE(status.has_value()) << "tune did not end within 600 s of the host's death";
  // Each run that still tries the host fails at moetune's check before the
  // engine starts (5 s), not at the engine's minutes-long wait.
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 400.0);
  const json j = ReadJson(out.File("tune.json"));
  std::ifstream err_in(out.File("tune.err"));
  const std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(j.is_discarded()) << err;
  int named = 0;
  for (const json& m : j["measurements"]) {
    if (!m.contains("failure")) continue;
    EXPECT_EQ(m["failure"].value("kind", ""), "rpc_host") << m.dump();
    EXPECT_EQ(m["failure"].value("rpc_host", ""), rpc.endpoint()) << m.dump();
    named +=
        m["failure"].value("message", "").find("RPC host " + rpc.endpoint()) != std::string::npos;
  }
  EXPECT_GT(named, 0) << j["measurements"].dump();
}

}  // namespace
}  // namespace moetune::itest
