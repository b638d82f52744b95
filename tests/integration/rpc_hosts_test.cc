// RPC hosts that misbehave (issue 20, item 7), with the real moetune and the
// real llama.cpp: a host where nothing listens, one that drops every
// connection (a blackhole), one that answers garbage, one that accepts and
// says nothing, and a real ggml-rpc-server killed in the middle of a bench.
// Each ends within seconds with an error or a failed measurement that names
// the host, and leaves no process behind (TinyModelSuite::TearDown).

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

// Waits until the server's log shows `text` (a client connected).
bool LogShows(const RpcServer& rpc, const std::string& text, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    if (rpc.Log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
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

}  // namespace
}  // namespace moetune::itest
