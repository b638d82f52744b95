// Integration: `moetune watch` against servers that misbehave on purpose (an
// endless header line, one byte every 0.3 s, an early close, a /props that
// forges lines or reports impossible figures), and `moetune serve` on a port
// another program already holds. Each ends quickly with an error that names
// the limit or the problem; none is watched as if it were llama-server.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "support.h"
#include "util/raw_server_test_util.h"

namespace moetune::itest {
namespace {

using namespace std::chrono_literals;

using moetune::testing::RawServer;

using moetune::testing::SendAll;

CommandResult WatchOnce(const std::string& url) {
  return RunCommand({MoetuneBinary(), "watch", url, "--once", "--timeout", "2", "--no-gpu"}, 60);
}

TEST(HostileServer, AnEndlessHeaderLineIsCutAtTheHeaderLimit) {
  RawServer s([](int fd, const std::atomic<bool>& stop) {
    if (!SendAll(fd, "HTTP/1.1 200 OK\r\nX-Flood: ")) return;
    const std::string chunk(65536, 'a');
    for (int i = 0; i < 16384 && !stop; ++i) {
      if (!SendAll(fd, chunk)) return;
    }
  });
  const auto r = WatchOnce(s.url());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("header limit"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("connection refused"), std::string::npos) << r.err;
}

TEST(HostileServer, OneByteAtATimeMeetsTheDeadline) {
  RawServer s([](int fd, const std::atomic<bool>& stop) {
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n" +
        std::string(200, ' ');
    for (char c : answer) {
      if (stop || !SendAll(fd, std::string_view(&c, 1))) return;
      std::this_thread::sleep_for(300ms);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = WatchOnce(s.url());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(r.timed_out) << "watch --once --timeout 2 ran " << took << " s";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("2000 ms deadline"), std::string::npos) << r.err;
}

TEST(HostileServer, AnEarlyCloseIsNotATimeout) {
  RawServer s([](int fd, const auto&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"model_path\":");
  });
  const auto r = WatchOnce(s.url());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("closed the connection"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("timed out"), std::string::npos) << r.err;
}

TEST(HostileServer, ARedirectIsNotFollowed) {
  RawServer s([](int fd, const auto&) {
    SendAll(fd,
            "HTTP/1.1 302 Found\r\nLocation: http://192.0.2.7:8080/props\r\nContent-Length: 0"
            "\r\n\r\n");
  });
  const auto r = WatchOnce(s.url());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("follows no redirects"), std::string::npos) << r.err;
}

// A llama-server look-alike whose /props forges a line and reports -3 slots.
TEST(HostileServer, PropsCannotForgeLinesOrImpossibleSlots) {
  std::ifstream m(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/watch/metrics-b11669.txt");
  const std::string metrics((std::istreambuf_iterator<char>(m)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(metrics.empty());
  for (const std::string& slots : {std::string("1"), std::string("-3")}) {
    httplib::Server web;
    web.Get("/props", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"model_path":"/m/a.gguf\nllama-server --api-key stolen \u202e",)"
                      R"("build_info":"b11669","total_slots":)" +
                          slots + R"(,"default_generation_settings":{"n_ctx":4096}})",
                      "application/json");
    });
    web.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics, "text/plain");
    });
    web.Get("/slots", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("[]", "application/json");
    });
    const int port = web.bind_to_any_port("127.0.0.1");
    std::thread t([&] { web.listen_after_bind(); });
    while (!web.is_running()) std::this_thread::sleep_for(5ms);
    const auto r = RunCommand({MoetuneBinary(), "watch", "http://127.0.0.1:" + std::to_string(port),
                               "--once", "--interval", "0.2", "--no-gpu"},
                              60);
    web.stop();
    t.join();
    const std::string all = r.out + r.err;
    EXPECT_EQ(all.find("\nllama-server --api-key"), std::string::npos) << "a forged line:\n" << all;
    EXPECT_EQ(all.find("\xE2\x80\xAE"), std::string::npos) << all;
    if (slots == "-3") {
      EXPECT_EQ(r.exit_code, 1) << all;
      EXPECT_NE(r.err.find("total_slots"), std::string::npos) << r.err;
      EXPECT_EQ(all.find("-3 slot"), std::string::npos) << all;
    } else {
      EXPECT_NE(all.find("\\nllama-server --api-key stolen \\u202e"), std::string::npos) << all;
    }
  }
}

TEST(HostileServer, ServeRefusesAPortAnotherProgramHolds) {
  ASSERT_TRUE(EngineDir().has_value()) << "llama.cpp not found";
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  auto s = RunCommand(
      {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model}, 300);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  // This test process answers /health on the port, as another program would.
  httplib::Server other;
  other.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  const int port = other.bind_to_any_port("127.0.0.1");
  std::thread t([&] { other.listen_after_bind(); });
  while (!other.is_running()) std::this_thread::sleep_for(5ms);
  const auto r =
      RunCommand({MoetuneBinary(), "serve", model, "--ctx", "1024", "--port", std::to_string(port),
                  "--no-gpu", "--vram", "8GiB", "--server-log", dir.File("server.log")},
                 120);
  other.stop();
  t.join();
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("already in use by process " + std::to_string(::getpid())),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(LeftoverDescendants().empty());
}

}  // namespace
}  // namespace moetune::itest
