// ServerClient against small local HTTP servers standing in for what is not
// a llama-server (the real llama-server is exercised in
// tests/integration/watch_test.cc).
#include "watch/server_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace moetune {
namespace {

TEST(ServerUrlTest, AcceptedForms) {
  auto a = ParseServerUrl("http://127.0.0.1:8080");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8080);
  EXPECT_TRUE(a->IsLoopback());
  auto b = ParseServerUrl("localhost:9000/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 9000);
  EXPECT_EQ(b->ToString(), "http://localhost:9000");
  auto c = ParseServerUrl("HTTP://[::1]:81");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_EQ(c->ToString(), "http://[::1]:81");
  auto d = ParseServerUrl("http://gpu-box");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->port, 8080);
  EXPECT_FALSE(d->IsLoopback());
}

TEST(ServerUrlTest, RefusedFormsSayWhy) {
  for (const char* bad : {"", "https://h:1", "ftp://h:1", "h:0", "h:65536", "h:x",
                          "h:", "http://h:1/metrics", "::1", "[::1", "a b:1", "http://:80"}) {
    auto r = ParseServerUrl(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("http://HOST:PORT"), std::string::npos) << bad;
  }
}

// An HTTP server on a free loopback port, in a thread.
class LocalServer {
 public:
  explicit LocalServer(const std::function<void(httplib::Server&)>& setup) {
    setup(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~LocalServer() {
    server_.stop();
    thread_.join();
  }
  ServerUrl Url() const { return ServerUrl{"127.0.0.1", port_}; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ServerClientTest, AServerWithoutMetricsNamesTheFlag) {
  LocalServer s([](httplib::Server& srv) {
    srv.Get("/metrics", [](const httplib::Request&, httplib::Response& r) {
      r.status = 501;
      r.set_content(
          R"({"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with `--metrics`","type":"not_supported_error"}})",
          "application/json");
    });
  });
  ServerClient c(s.Url(), std::chrono::milliseconds(2000));
  auto m = c.Metrics();
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("--metrics"), std::string::npos) << m.error().message();
  EXPECT_NE(m.error().message().find("restart it"), std::string::npos);
}

TEST(ServerClientTest, SomethingElseIsNotALlamaServer) {
  LocalServer s([](httplib::Server& srv) {
    srv.Get(".*", [](const httplib::Request&, httplib::Response& r) {
      r.set_content("<html>a web page</html>", "text/html");
    });
  });
  ServerClient c(s.Url(), std::chrono::milliseconds(2000));
  auto p = c.Props();
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("does not look like a llama-server"), std::string::npos);
  auto m = c.Metrics();
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("not llama-server"), std::string::npos);
}

TEST(ServerClientTest, AHugeAnswerIsRefused) {
  LocalServer s([](httplib::Server& srv) {
    srv.Get("/props", [](const httplib::Request&, httplib::Response& r) {
      r.set_content(std::string(5u << 20, 'x'), "text/plain");
    });
  });
  ServerClient c(s.Url(), std::chrono::milliseconds(5000));
  auto a = c.Get("/props");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("MiB"), std::string::npos);
}

TEST(ServerClientTest, NobodyListeningFailsFast) {
  // Bind a port, then close it: nothing listens there now.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  ::close(fd);
  ServerClient c(ServerUrl{"127.0.0.1", port}, std::chrono::milliseconds(3000));
  auto m = c.Metrics();
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("connection refused"), std::string::npos)
      << m.error().message();
}

TEST(ServerClientTest, ASilentServerTimesOut) {
  // Accepts connections (the kernel completes the handshake) but never answers.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ServerClient c(ServerUrl{"127.0.0.1", ntohs(a.sin_port)}, std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  auto m = c.Metrics();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("timed out"), std::string::npos) << m.error().message();
  EXPECT_LT(s, 30.0);  // bounded (a generous bound: this is not a speed figure)
}

}  // namespace
}  // namespace moetune
