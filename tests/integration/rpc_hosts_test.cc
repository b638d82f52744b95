// RPC hosts that misbehave (issue 20, item 7), with the real moetune and the
// real llama.cpp: a host where nothing listens, one that drops every
// connection (a blackhole), one that answers garbage, one that accepts and
// says nothing, a real ggml-rpc-server killed in the middle of a bench, and
// one whose memory runs out (issue 20, item 4). Each ends within seconds with
// an error or a failed measurement that names the host, and leaves no
// process behind (TinyModelSuite::TearDown).

#include <signal.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/rpc_host_test_util.h"
#include "support.h"

namespace moetune::itest {
namespace {

using Clock = std::chrono::steady_clock;
using moetune::testing::BlackholeHost;
using moetune::testing::FakeRpcHost;

class RpcHostsTest : public TinyModelSuite {
 protected:
  static void SetUpTestSuite() { SetUpModel("rpc_hosts.gguf"); }

  // A short bench on the host; `seconds` how long it took.
  CommandResult Bench(const std::string& endpoint, double* seconds) const {
    const auto t0 = Clock::now();
    CommandResult r = RunCommand({MoetuneBinary(), "bench", model_, "--llama-dir", info_->dir,
                                  "--rpc", endpoint, "-p", "16", "-n", "0", "-r", "1"},
                                 120);
    *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return r;
  }

  // The command failed in time, naming the host and `what`.
  static void ExpectRefused(const CommandResult& r, double seconds, const std::string& endpoint,
                            const std::string& what) {
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_LT(seconds, 30.0);
    EXPECT_NE(r.err.find("RPC host " + endpoint), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  }
};

TEST_F(RpcHostsTest, NothingListeningIsNamedBeforeTheEngineStarts) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string ep = "127.0.0.1:" + std::to_string(port);
  double s = 0;
  const CommandResult r = Bench(ep, &s);
  ExpectRefused(r, s, ep, "connection refused");
  EXPECT_NE(r.err.find("ggml-rpc-server -H 127.0.0.1 -p " + std::to_string(port)),
            std::string::npos)
      << r.err;
}

TEST_F(RpcHostsTest, ABlackholeCostsTheStatedTimeoutNotTheKernels) {
  BlackholeHost hole;
  ASSERT_TRUE(hole.ok());
  double s = 0;
  const CommandResult r = Bench(hole.endpoint(), &s);
  ExpectRefused(r, s, hole.endpoint(), "no answer to the connection within 5 s");
}

TEST_F(RpcHostsTest, GarbageIsNamedWithWhatItSaid) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kGarbage);
  double s = 0;
  const CommandResult r = Bench(host.endpoint(), &s);
  ExpectRefused(r, s, host.endpoint(), "not a ggml-rpc-server's hello");
  EXPECT_NE(r.err.find("HTTP/1.1 400"), std::string::npos) << r.err;
}

TEST_F(RpcHostsTest, AHostThatNeverAnswersFailsAtTheTimeout) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kSilent);
  double s = 0;
  const CommandResult r = Bench(host.endpoint(), &s);
  ExpectRefused(r, s, host.endpoint(), "did not answer the hello within 5 s");
}

TEST_F(RpcHostsTest, PlanCheckNamesTheHostToo) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kGarbage);
  const auto t0 = Clock::now();
  const CommandResult r = RunCommand({MoetuneBinary(), "plan", model_, "--check", "--llama-dir",
                                      info_->dir, "--rpc", host.endpoint(), "--vram", "8GiB"},
                                     120);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ExpectRefused(r, s, host.endpoint(), "not a ggml-rpc-server's hello");
}

// serve --from a command with --rpc: the host is checked before llama-server starts.
TEST_F(RpcHostsTest, ServeNamesTheHostBeforeStartingTheServer) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kSilent);
  ASSERT_TRUE(host.ok());
  TempDir dir;
  const std::string from = dir.File("from.json");
  {
    std::ofstream f(from);
    f << nlohmann::json{{"command_argv",
                         {"llama-server", "-m", model_, "-ngl", "99", "--rpc", host.endpoint()}}}
             .dump();
  }
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const auto t0 = Clock::now();
  const CommandResult r = RunCommand({MoetuneBinary(), "serve", model_, "--from", from,
                                      "--llama-dir", info_->dir, "--port", std::to_string(port)},
                                     120);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ExpectRefused(r, s, host.endpoint(), "did not answer the hello within 5 s");
}

// A real ggml-rpc-server killed while llama-bench uses it: the measurement
// fails as rpc_host naming the host (llama.cpp itself says only "Remote RPC
// server crashed or returned malformed response"), bench ends, and nothing
// it started is left.
TEST_F(RpcHostsTest, AServerKilledMidRunFailsTheMeasurementByName) {
  RpcServer rpc(info_->dir);
  ASSERT_FALSE(rpc.endpoint().empty()) << rpc.Log();
  TempDir out;
  SpawnOptions s;
  s.argv = {MoetuneBinary(),
            "bench",
            model_,
            "--llama-dir",
            info_->dir,
            "--rpc",
            rpc.endpoint(),
            "-p",
            "64",
            "-n",
            "4000",
            "-r",
            "3",
            "--json",
            "-o",
            out.File("bench.json")};
  s.stdout_mode = OutputMode::kDiscard;
  s.stderr_mode = OutputMode::kFile;
  s.stderr_file = out.File("bench.err");
  auto bench = ChildProcess::Spawn(s);
  ASSERT_TRUE(bench.ok()) << bench.error().message();
  // Past moetune's own check (one connection) into the engine's use of the host.
  ASSERT_TRUE(LogShows(rpc, "Accepted client connection", 60)) << rpc.Log();
  std::this_thread::sleep_for(std::chrono::seconds(4));
  ASSERT_GT(rpc.pid(), 0);
  ASSERT_EQ(::kill(rpc.pid(), SIGKILL), 0);
  const auto status = (*bench)->Pump(Clock::now() + std::chrono::seconds(120), nullptr, nullptr);
  ASSERT_TRUE(status.has_value()) << "bench did not end within 120 s of the host's death";
  std::ifstream in(out.File("bench.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  bool named = false;
  for (const auto& r : j.value("results", nlohmann::json::array())) {
    if (!r.contains("failure")) continue;
    EXPECT_EQ(r["failure"].value("kind", ""), "rpc_host") << r.dump();
    EXPECT_EQ(r["failure"].value("rpc_host", ""), rpc.endpoint()) << r.dump();
    named = named || r["failure"].value("message", "").find("RPC host " + rpc.endpoint()) !=
                         std::string::npos;
  }
  EXPECT_TRUE(named) << text;
}

// A device that runs out of memory for real: a ggml-rpc-server under
// `ulimit -v` 64 MiB cannot take the 135 MiB of weights -ngl 99 puts on it.
// It refuses the buffer and stays up, as a GPU without free memory does: that
// measurement fails as oom_device naming the server, with the fix, and -ngl 0
// on the same server is measured; bench reports both (a failed measurement is
// data, and tune keeps it as a verdict: JournalTest).
TEST_F(RpcHostsTest, ADeviceThatRunsOutOfMemoryFailsItsMeasurementByName) {
  TempDir dir;
  const std::string model = dir.File("rpc_oom.gguf");
  const CommandResult synth =
      RunCommand({MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "small", "--layers",
                  "4", "--quant", "q4_k_m", "--sparse", "-o", model},
                 120);
  ASSERT_EQ(synth.exit_code, 0) << synth.err;
  RpcServer rpc(info_->dir, int64_t{64} << 20);
  ASSERT_FALSE(rpc.endpoint().empty()) << rpc.Log();
  const auto t0 = Clock::now();
  const CommandResult r = RunCommand(
      {MoetuneBinary(), "bench", model, "--llama-dir", info_->dir, "--rpc", rpc.endpoint(), "--ngl",
       "99,0", "-p", "16", "-n", "0", "-r", "1", "--json", "-o", dir.File("bench.json")},
      300);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 120.0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << "one configuration failed: " << r.err;
  std::ifstream in(dir.File("bench.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text << r.err;
  ASSERT_EQ(j["results"].size(), 2u) << text;
  for (const auto& res : j["results"]) {
    if (res["n_gpu_layers"] == 0) {
      EXPECT_TRUE(res["ok"].get<bool>()) << res.dump();
      EXPECT_GT(res["tokens_per_second"]["mean"].get<double>(), 0) << res.dump();
      continue;
    }
    ASSERT_TRUE(res.contains("failure")) << res.dump();
    const auto& f = res["failure"];
    EXPECT_EQ(f.value("kind", ""), "oom_device") << f.dump();
    EXPECT_EQ(f.value("rpc_host", ""), rpc.endpoint()) << f.dump();
    const std::string message = f.value("message", "");
    EXPECT_NE(message.find("ggml-rpc-server " + rpc.endpoint() + " ran out of memory"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("-ts"), std::string::npos) << "the fix: " << message;
  }
  // The server refused the buffer itself and is still there.
  EXPECT_NE(rpc.Log().find("-> failed"), std::string::npos) << rpc.Log();
  EXPECT_FALSE(ProcessGone(rpc.pid(), 0)) << rpc.Log();
}

}  // namespace
}  // namespace moetune::itest
