// Integration: `moetune watch` against the real llama-server (with and
// without --metrics), against things that are not a llama-server, and on logs
// that are not logs; every bad value is a usage error naming the flag.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <filesystem>

#include "watch_support.h"

namespace moetune::itest {
namespace {

class WatchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->File("tiny.gguf");
    const auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }

  // A llama-server started by someone else (the test), on `port`.
  std::unique_ptr<BackgroundProcess> StartServer(int port, bool metrics,
                                                 const std::string& log) const {
    auto dir = EngineDir();
    if (!dir) return nullptr;
    std::vector<std::string> argv = {(*dir / "llama-server").string(),
                                     "-m",
                                     model_,
                                     "--host",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(port),
                                     "-c",
                                     "2048",
                                     "-np",
                                     "1",
                                     "-t",
                                     "1",
                                     "-ncmoe",
                                     "0",
                                     "-fit",
                                     "off"};
    if (metrics) argv.push_back("--metrics");
    auto p = std::make_unique<BackgroundProcess>(argv, log);
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(1, 0);
    const bool up = WaitFor(
        [&] {
          auto r = c.Get("/health");
          return r && r->status == 200;
        },
        120);
    return up ? std::move(p) : nullptr;
  }

  static TempDir* dir_;
  static std::string model_;
};

TempDir* WatchTest::dir_ = nullptr;
std::string WatchTest::model_;

TEST_F(WatchTest, OnceOnARunningServer) {
  TempDir tmp;
  const int port = FreePort();
  auto server = StartServer(port, true, tmp.File("server.log"));
  ASSERT_TRUE(server) << "llama-server did not start";
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  const auto r = RunCommand(
      {MoetuneBinary(), "watch", url, "--once", "--interval", "0.5", "--json", "--no-gpu"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  { std::ofstream(tmp.File("out.jsonl")) << r.out; }
  const auto start = Events(tmp.File("out.jsonl"), "start");
  ASSERT_EQ(start.size(), 1u);
  // The process was found by its port, and its command line read.
  EXPECT_TRUE(start[0]["pid"].is_number()) << start[0].dump();
  EXPECT_EQ(start[0]["settings"]["n_cpu_moe"], "0");
  EXPECT_EQ(start[0]["ctx_per_slot"], 2048);
  const auto samples = Events(tmp.File("out.jsonl"), "sample");
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_GT(samples[0]["process"]["rss_bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(Events(tmp.File("out.jsonl"), "alarm").empty());
  // Text mode (not a terminal): one line per sample.
  const auto text = RunCommand({MoetuneBinary(), "watch", url, "--once", "--interval", "0.2"}, 60);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("idle; slots 0/1 busy"), std::string::npos) << text.out;
}

TEST_F(WatchTest, OtherSettingsThanTunedExitWithTheirCode) {
  TempDir tmp;
  const int port = FreePort();
  auto server = StartServer(port, true, tmp.File("server.log"));
  ASSERT_TRUE(server);
  const std::string plan = tmp.File("plan.json");
  std::ofstream(plan) << nlohmann::json{
      {"command_argv",
       {"llama-server", "-m", model_, "-ncmoe", "3", "-c", "2048", "-np", "1", "-t", "1", "-fit",
        "off"}}}.dump();
  const auto r = RunCommand({MoetuneBinary(), "watch", "http://127.0.0.1:" + std::to_string(port),
                             "--from", plan, "--exit-on-alarm", "--no-gpu"},
                            60);
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_NE(r.out.find("ALARM settings_changed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--n-cpu-moe: tuned 3, running 0"), std::string::npos) << r.out;
}

TEST_F(WatchTest, AServerWithoutMetricsNamesTheFlag) {
  TempDir tmp;
  const int port = FreePort();
  auto server = StartServer(port, false, tmp.File("server.log"));
  ASSERT_TRUE(server);
  const auto r = RunCommand(
      {MoetuneBinary(), "watch", "http://127.0.0.1:" + std::to_string(port), "--once"}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("started without --metrics"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("restart it with --metrics"), std::string::npos) << r.err;
}

TEST_F(WatchTest, AWebServerIsNotALlamaServer) {
  httplib::Server web;
  web.Get(".*", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html><body>hello</body></html>", "text/html");
  });
  const int port = web.bind_to_any_port("127.0.0.1");
  std::thread t([&] { web.listen_after_bind(); });
  WaitFor([&] { return web.is_running(); }, 5);
  const auto r = RunCommand(
      {MoetuneBinary(), "watch", "http://127.0.0.1:" + std::to_string(port), "--once"}, 60);
  web.stop();
  t.join();
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("does not look like a llama-server"), std::string::npos) << r.err;
}

TEST_F(WatchTest, UnreachableAndSilentServersDoNotHang) {
  const int closed = FreePort();
  const auto refused = RunCommand(
      {MoetuneBinary(), "watch", "http://127.0.0.1:" + std::to_string(closed), "--once"}, 60);
  EXPECT_FALSE(refused.timed_out);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("connection refused"), std::string::npos) << refused.err;
  // A socket that accepts connections but never answers.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const auto silent =
      RunCommand({MoetuneBinary(), "watch", "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)),
                  "--once", "--timeout", "0.5"},
                 60);
  ::close(fd);
  EXPECT_FALSE(silent.timed_out);
  EXPECT_EQ(silent.exit_code, 1);
  EXPECT_NE(silent.err.find("timed out"), std::string::npos) << silent.err;
}

TEST_F(WatchTest, LogsThatAreNotLogs) {
  TempDir tmp;
  // The model file itself: binary.
  const auto bin = RunCommand({MoetuneBinary(), "watch", "--log", model_}, 60);
  EXPECT_EQ(bin.exit_code, 1);
  EXPECT_NE(bin.err.find("binary data"), std::string::npos) << bin.err;
  // A FIFO nobody writes to: refused at once, not waited on.
  const std::string fifo = tmp.File("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto f = RunCommand({MoetuneBinary(), "watch", "--log", fifo}, 30);
  EXPECT_FALSE(f.timed_out);
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_NE(f.err.find("not a regular file"), std::string::npos) << f.err;
  // A huge (sparse) file: refused by its size, not read.
  const std::string huge = tmp.File("huge.log");
  {
    const int h = ::open(huge.c_str(), O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(h, 0);
    ASSERT_EQ(::ftruncate(h, off_t{3} << 30), 0);
    ::close(h);
  }
  const auto big = RunCommand({MoetuneBinary(), "watch", "--log", huge}, 30);
  EXPECT_FALSE(big.timed_out);
  EXPECT_EQ(big.exit_code, 1);
  EXPECT_NE(big.err.find("more than the"), std::string::npos) << big.err;
  const auto dir = RunCommand({MoetuneBinary(), "watch", "--log", tmp.path().string()}, 30);
  EXPECT_EQ(dir.exit_code, 1);
  const auto absent = RunCommand({MoetuneBinary(), "watch", "--log", tmp.File("none.log")}, 30);
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_NE(absent.err.find("none.log"), std::string::npos);
}

TEST_F(WatchTest, ARecordedLogIsJudged) {
  const std::string fixture =
      std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/watch/healthy-chat-t1.log";
  const auto r = RunCommand({MoetuneBinary(), "watch", "--log", fixture}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("12 request(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: no alarm"), std::string::npos) << r.out;
  // The same log against a baseline that expects 100x the prefill: overflow, exit 3.
  TempDir tmp;
  const std::string fake = tmp.File("baseline.json");
  std::ofstream(fake) << nlohmann::json{{"curves",
                                         {{{"depth", 0},
                                           {"points",
                                            {{{"n_cpu_moe", 0},
                                              {"prefill_tps", {{"mean", 1e5}}},
                                              {"decode_tps", {{"mean", 100}}}}}}}}}}
                             .dump();
  const auto over = RunCommand({MoetuneBinary(), "watch", "--log", fixture, "--from", fake}, 60);
  EXPECT_EQ(over.exit_code, 3) << over.out << over.err;
  EXPECT_NE(over.out.find("ALARM overflow"), std::string::npos) << over.out;
}

TEST_F(WatchTest, BadValuesAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::string url = "http://127.0.0.1:9";
  const std::vector<Case> cases = {
      {{url, "--interval", "0"}, "--interval: 0 s is outside the accepted range 0.2 to 3600"},
      {{url, "--interval", "soon"}, "--interval: 'soon' is not a number of seconds"},
      {{url, "--timeout", "601"}, "--timeout: 601 s is outside the accepted range 0.1 to 600"},
      {{url, "--duration", "0"}, "--duration: 0 s is outside the accepted range 1 to"},
      {{url, "--pid", "0"}, "--pid: 0 is outside the accepted range 1 to 4194304"},
      {{url, "--pid", "x"}, "--pid: 'x' is not a whole number"},
      {{"https://127.0.0.1:1"}, "https is not supported"},
      {{"127.0.0.1:99999"}, "port 99999 is outside the accepted range 1 to 65535"},
      {{"http://127.0.0.1:1/v1"}, "a path is not accepted"},
      {{url, "--log", "x.log"}, "excludes"},
      {{}, "give the server's URL"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {MoetuneBinary(), "watch"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto r = RunCommand(argv, 30);
    EXPECT_EQ(r.exit_code, 2) << (c.args.empty() ? "" : c.args.back()) << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos)
        << "expected '" << c.needle << "' in " << r.err;
  }
  // A --from file that is not moetune's JSON: a failed command, named.
  TempDir tmp;
  std::ofstream(tmp.File("x.json")) << "{\"hello\":1}";
  const auto from = RunCommand({MoetuneBinary(), "watch", url, "--from", tmp.File("x.json")}, 30);
  EXPECT_EQ(from.exit_code, 1);
  EXPECT_NE(from.err.find("x.json has neither a command"), std::string::npos) << from.err;
}

}  // namespace
}  // namespace moetune::itest
