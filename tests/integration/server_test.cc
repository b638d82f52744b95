// Integration: llama-server lifecycle against the real engine: start, requests,
// a port taken before the bind, the private log, timeouts, and no orphan on any
// exit path (signals to moetune are tested in signal_test.cc).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "engine/engine_info.h"
#include "engine/server_test_util.h"
#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

class ServerTest : public TinyModelSuite {
 protected:
  static void SetUpTestSuite() { SetUpModel("server model.gguf"); }
  ServerOptions Options() const {
    ServerOptions o;
    o.config.model = model_;
    o.config.ctx_size = 1024;
    o.config.threads = 1;
    o.health_timeout = std::chrono::milliseconds(120000);
    return o;
  }
};

TEST_F(ServerTest, StartCompleteStop) {
  auto server = LlamaServer::Start(*info_, Options());
  ASSERT_TRUE(server.ok()) << server.error().message();
  const pid_t pid = (*server)->pid();
  EXPECT_GT((*server)->port(), 0);
  auto t = (*server)->Complete("The quick brown fox jumps over the lazy dog", 8);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->predicted_n, 8);
  EXPECT_GT(t->prompt_n, 0);
  EXPECT_GT(t->prompt_per_second, 0);
  EXPECT_GT(t->predicted_per_second, 0);
  EXPECT_GT(t->ttft_ms, 0);
  EXPECT_GE(t->wall_ms, t->prompt_ms);
  // Prompt cache is off: a second identical request measures prefill again.
  auto t2 = (*server)->Complete("The quick brown fox jumps over the lazy dog", 4);
  ASSERT_TRUE(t2.ok()) << t2.error().message();
  EXPECT_EQ(t2->cache_n, 0);
  const ExitStatus st = (*server)->Stop();
  EXPECT_TRUE(st.exited || st.signal == SIGTERM) << st.Describe();
  EXPECT_TRUE(ProcessGone(pid));
}

TEST_F(ServerTest, BadModelFailsWithTheEnginesMessage) {
  const std::string bad = dir_->File("bad.gguf");
  std::ofstream(bad) << "not a gguf file at all";
  ServerOptions o = Options();
  o.config.model = bad;
  auto server = LlamaServer::Start(*info_, o);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.error().message().find("model_load"), std::string::npos)
      << server.error().message();
}

TEST_F(ServerTest, HealthTimeoutStopsTheServer) {
  ServerOptions o = Options();
  o.health_timeout = std::chrono::milliseconds(1);
  auto server = LlamaServer::Start(*info_, o);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.error().message().find("timeout"), std::string::npos)
      << server.error().message();
}

TEST_F(ServerTest, DestructorStopsTheServer) {
  pid_t pid = -1;
  {
    auto server = LlamaServer::Start(*info_, Options());
    ASSERT_TRUE(server.ok()) << server.error().message();
    pid = (*server)->pid();
  }
  EXPECT_TRUE(ProcessGone(pid));
}

TEST_F(ServerTest, APortTakenBeforeTheBindIsRetried) {
  // Another program holds the port the server was told to use (as when it
  // takes a port between moetune's check and the server's bind).
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int taken = ntohs(addr.sin_port);
  ServerOptions o = Options();
  o.first_port = taken;
  auto server = LlamaServer::Start(*info_, o);
  ::close(fd);
  ASSERT_TRUE(server.ok()) << server.error().message();
  EXPECT_NE((*server)->port(), taken);
  EXPECT_EQ((*server)->ports_tried(), 1);
  auto t = (*server)->Complete("Hello", 2);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
}

TEST_F(ServerTest, LogIsAPrivateTemporaryFileRemovedWithTheServer) {
  std::string log;
  {
    auto server = LlamaServer::Start(*info_, Options());
    ASSERT_TRUE(server.ok()) << server.error().message();
    log = (*server)->log_file();
    struct stat st {};
    ASSERT_EQ(::stat(log.c_str(), &st), 0) << log;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << log;  // mkstemp's mode, not umask-wide
    EXPECT_EQ(log.find(std::to_string(::getpid())), std::string::npos) << log;
  }
  EXPECT_FALSE(std::filesystem::exists(log)) << log;
}

TEST_F(ServerTest, SubSecondTimeoutsAreNotZero) {
  // 900 ms was truncated to 0 s, which failed every request at once.
  auto server = LlamaServer::Start(*info_, Options());
  ASSERT_TRUE(server.ok()) << server.error().message();
  auto t = (*server)->Complete("Hi", 1, std::chrono::milliseconds(900));
  EXPECT_TRUE(t.ok()) << t.error().message();
}

}  // namespace
}  // namespace moetune::itest
