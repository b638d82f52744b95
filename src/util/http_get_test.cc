// The bounded GET against hostile local servers: each test runs a raw TCP
// server in a thread that answers one connection in its own wrong way.
#include "util/http_get.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

namespace moetune {
namespace {

using namespace std::chrono_literals;

// Sends all of `text` (false when the client has gone).
bool Send(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

class HostileServer {
 public:
  // `answer` gets the accepted connection after the request was read.
  explicit HostileServer(const std::function<void(int fd, const std::atomic<bool>& stop)>& answer) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(::listen(listen_fd_, 4), 0);
    thread_ = std::thread([this, answer] {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<std::size_t>(n));
      }
      request_ = req;
      answer(fd, stop_);
      ::close(fd);
    });
  }
  ~HostileServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  const std::string& request() const { return request_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::string request_;
  std::thread thread_;
};

HttpLimits Limits(std::chrono::milliseconds deadline) {
  HttpLimits l;
  l.deadline = deadline;
  return l;
}

TEST(HttpGetTest, ReadsAnOrdinaryAnswer) {
  HostileServer s([](int fd, const auto&) {
    Send(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
  });
  auto a = HttpGet("127.0.0.1", s.port(), "/metrics", Limits(5000ms));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->status, 200);
  EXPECT_EQ(a->body, "hello");
  EXPECT_NE(s.request().find("GET /metrics HTTP/1.1\r\n"), std::string::npos);
  EXPECT_NE(s.request().find("Host: 127.0.0.1:"), std::string::npos);
}

TEST(HttpGetTest, ReadsAChunkedAnswerAndOneThatEndsWithTheConnection) {
  {
    HostileServer s([](int fd, const auto&) {
      Send(fd,
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n"
           "\r\n");
    });
    auto a = HttpGet("127.0.0.1", s.port(), "/props", Limits(5000ms));
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->body, "hello world");
  }
  HostileServer s([](int fd, const auto&) { Send(fd, "HTTP/1.0 200 OK\r\n\r\nuntil close"); });
  auto a = HttpGet("127.0.0.1", s.port(), "/", Limits(5000ms));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->body, "until close");
}

TEST(HttpGetTest, AnEndlessHeaderLineStopsAtTheHeaderLimit) {
  HostileServer s([](int fd, const std::atomic<bool>& stop) {
    if (!Send(fd, "HTTP/1.1 200 OK\r\nX-Flood: ")) return;
    const std::string chunk(65536, 'a');
    // Up to 1 GiB: far more than any bound, yet finite if the client never stops.
    for (int i = 0; i < 16384 && !stop; ++i) {
      if (!Send(fd, chunk)) return;
    }
  });
  auto a = HttpGet("127.0.0.1", s.port(), "/metrics", Limits(20000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("larger than 64 KiB (the header limit)"), std::string::npos)
      << a.error().message();
  EXPECT_EQ(a.error().message().find("refused"), std::string::npos) << a.error().message();
}

TEST(HttpGetTest, OneByteAtATimeMeetsTheTotalDeadline) {
  HostileServer s([](int fd, const std::atomic<bool>& stop) {
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n" +
        std::string(100, 'x');
    for (char c : answer) {  // one byte every 0.3 s: 50 s for the whole answer
      if (stop || !Send(fd, std::string_view(&c, 1))) return;
      std::this_thread::sleep_for(300ms);
    }
  });
  auto a = HttpGet("127.0.0.1", s.port(), "/metrics", Limits(1000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("timed out"), std::string::npos) << a.error().message();
  EXPECT_NE(a.error().message().find("1000 ms deadline"), std::string::npos) << a.error().message();
}

TEST(HttpGetTest, AnEarlyCloseIsNamedAsSuch) {
  {
    HostileServer s([](int, const auto&) {});  // closes without a word
    auto a = HttpGet("127.0.0.1", s.port(), "/health", Limits(5000ms));
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message().find("closed the connection before it answered"),
              std::string::npos)
        << a.error().message();
    EXPECT_EQ(a.error().message().find("timed out"), std::string::npos);
  }
  HostileServer s(
      [](int fd, const auto&) { Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"); });
  auto a = HttpGet("127.0.0.1", s.port(), "/health", Limits(5000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("after 3 of 100 body bytes"), std::string::npos)
      << a.error().message();
}

TEST(HttpGetTest, BodyLimitAndRedirectsAndGarbage) {
  {
    HostileServer s([](int fd, const auto&) {
      Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n");
    });
    auto a = HttpGet("127.0.0.1", s.port(), "/slots", Limits(5000ms));
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message().find("larger than 4 MiB (the body limit)"), std::string::npos)
        << a.error().message();
  }
  {
    HostileServer s([](int fd, const auto&) {
      Send(fd,
           "HTTP/1.1 302 Found\r\nLocation: http://203.0.113.9:80/x\r\nContent-Length: 0\r\n\r\n");
    });
    auto a = HttpGet("127.0.0.1", s.port(), "/props", Limits(5000ms));
    ASSERT_TRUE(a.ok()) << a.error().message();  // not followed: the caller decides
    EXPECT_EQ(a->status, 302);
    EXPECT_EQ(a->location, "http://203.0.113.9:80/x");
  }
  HostileServer s([](int fd, const auto&) { Send(fd, "SSH-2.0-OpenSSH\r\n\r\n"); });
  auto a = HttpGet("127.0.0.1", s.port(), "/props", Limits(5000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("not HTTP"), std::string::npos) << a.error().message();
}

TEST(HttpGetTest, NothingListeningIsARefusal) {
  int port = 0;
  {
    HostileServer s([](int, const auto&) {});
    port = s.port();
    // One connection lets the server's accept return, so that it closes.
    EXPECT_FALSE(HttpGet("127.0.0.1", port, "/").ok());
  }
  auto a = HttpGet("127.0.0.1", port, "/health", Limits(2000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("nothing listens there"), std::string::npos)
      << a.error().message();
}

}  // namespace
}  // namespace moetune
