// The supervisor's restart policy with real child processes; a local HTTP
// server answers /health for them (the real llama-server is supervised in
// tests/integration/serve_test.cc).
#include "watch/supervisor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <thread>

#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

class Health {
 public:
  // Answers /health on `port` (0: any free port).
  explicit Health(int port = 0) {
    server_.Get("/health", [](const httplib::Request&, httplib::Response& r) {
      r.set_content(R"({"status":"ok"})", "application/json");
    });
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", port) ? port : -1;
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~Health() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

SupervisorOptions Options(const std::string& script, int port, const std::string& log) {
  SupervisorOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.port = port;
  o.log_file = log;
  o.health_timeout = std::chrono::milliseconds(5000);
  o.backoff_initial = std::chrono::milliseconds(10);
  o.backoff_max = std::chrono::milliseconds(40);
  o.max_restarts = 2;
  o.check_port_owner = false;  // the test process answers /health, not the child
  return o;
}

TEST(SupervisorTest, RestartsACrashedServerUpToTheLimit) {
  Health h;
  testing::TempDir dir;
  ServerSupervisor s(Options("echo 'fatal: out of memory' >&2; sleep 0.2; exit 3", h.port(),
                             dir.File("server.log")));
  ASSERT_TRUE(s.Start().ok());
  int restarts = 0;
  SupervisorCheck c;
  for (int i = 0; i < 200 && !c.gave_up; ++i) {
    c = s.Poll();
    restarts += c.restarted;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(c.gave_up);
  EXPECT_EQ(restarts, 2);
  EXPECT_EQ(s.restarts(), 2);
  EXPECT_NE(c.error.find("--max-restarts"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("exit code 3"), std::string::npos) << c.error;
  EXPECT_FALSE(s.running());
}

TEST(SupervisorTest, AServerThatDiesAtStartIsNotRetried) {
  int port = 0;
  {
    Health h;  // a port that was free a moment ago: nothing answers /health there now
    port = h.port();
  }
  testing::TempDir dir;
  ServerSupervisor s(Options("echo 'error: failed to load model' >&2; sleep 0.2; exit 1", port,
                             dir.File("server.log")));
  auto st = s.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("exited before it was ready"), std::string::npos);
  EXPECT_NE(st.error().message().find("failed to load model"), std::string::npos)
      << st.error().message();
}

TEST(SupervisorTest, ReplaceAndStopLeaveNoProcess) {
  Health h;
  testing::TempDir dir;
  ServerSupervisor s(Options("sleep 30", h.port(), dir.File("server.log")));
  ASSERT_TRUE(s.Start().ok());
  const pid_t first = s.pid();
  ASSERT_TRUE(s.Replace({"/bin/sh", "-c", "sleep 31"}).ok());
  EXPECT_NE(s.pid(), first);
  EXPECT_TRUE(LiveProcessesInGroup(first).empty());
  const pid_t second = s.pid();
  s.Stop(std::chrono::milliseconds(500));
  EXPECT_TRUE(LiveProcessesInGroup(second).empty());
  EXPECT_EQ(LiveChildGroupCount(), 0);
}

TEST(SupervisorTest, AHungServerIsRestartedLikeACrash) {
  Health h;
  testing::TempDir dir;
  ServerSupervisor s(Options("sleep 30", h.port(), dir.File("server.log")));
  ASSERT_TRUE(s.Start().ok());
  const pid_t first = s.pid();
  const SupervisorCheck c = s.RestartHung("no answer for 60 s");
  EXPECT_TRUE(c.exited && c.restarted);
  EXPECT_EQ(c.message, "no answer for 60 s");
  EXPECT_EQ(c.status.signal, SIGTERM) << c.status.Describe();
  EXPECT_TRUE(LiveProcessesInGroup(first).empty());
  EXPECT_NE(s.pid(), first);
  EXPECT_EQ(s.restarts(), 1);
}

TEST(SupervisorTest, TailReadsOnlyTheEndOfAFile) {
  testing::TempDir dir;
  const std::string p = dir.File("big.log");
  {
    std::ofstream f(p);
    for (int i = 0; i < 100000; ++i) f << "line " << i << "\n";
  }
  const auto t = TailOfFile(p, 3);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.back(), "line 99999");
  EXPECT_TRUE(TailOfFile(dir.File("absent"), 3).empty());
}

TEST(SupervisorTest, APortAnotherProgramHoldsIsRefusedBeforeStarting) {
  Health other;  // this test process listens on the port
  testing::TempDir dir;
  SupervisorOptions o = Options("sleep 30", other.port(), dir.File("server.log"));
  o.check_port_owner = true;
  ServerSupervisor s(o);
  auto st = s.Start();
  ASSERT_FALSE(st.ok()) << "reported healthy while another program answered";
  EXPECT_NE(st.error().message().find(
                fmt::format("port {} is already in use by process {}", other.port(), ::getpid())),
            std::string::npos)
      << st.error().message();
  EXPECT_FALSE(s.running());
}

TEST(SupervisorTest, AnAnswerFromAnotherProcessIsNotTheChildsHealth) {
  int port = 0;
  {
    Health probe;  // a port that is free once this one closes
    port = probe.port();
  }
  testing::TempDir dir;
  SupervisorOptions o = Options("sleep 30", port, dir.File("server.log"));
  o.check_port_owner = true;
  // The port is free when the supervisor starts; someone else takes it and
  // answers /health while the child (which never listens) "loads".
  std::unique_ptr<Health> late;
  std::thread taker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    late = std::make_unique<Health>(port);
  });
  ServerSupervisor s(o);
  auto st = s.Start();
  taker.join();
  ASSERT_EQ(late->port(), port);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("not by the llama-server moetune started"), std::string::npos)
      << st.error().message();
  EXPECT_FALSE(s.running());
  EXPECT_EQ(LiveChildGroupCount(), 0);
}

}  // namespace
}  // namespace moetune
