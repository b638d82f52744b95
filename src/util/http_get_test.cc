// The bounded GET against hostile local servers: each test runs a raw TCP
// server in a thread (util/raw_server_test_util.h) that answers in its own wrong way.
#include "util/http_get.h"

#include <gtest/gtest.h>

#include <atomic>

#include "util/raw_server_test_util.h"

namespace moetune {
namespace {

using namespace std::chrono_literals;

using testing::RawServer;

using testing::SendAll;

HttpLimits Limits(std::chrono::milliseconds deadline) {
  HttpLimits l;
  l.deadline = deadline;
  return l;
}

TEST(HttpGetTest, ReadsAnOrdinaryAnswer) {
  RawServer s([](int fd, const auto&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
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
    RawServer s([](int fd, const auto&) {
      SendAll(
          fd,
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n"
          "\r\n");
    });
    auto a = HttpGet("127.0.0.1", s.port(), "/props", Limits(5000ms));
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->body, "hello world");
  }
  RawServer s([](int fd, const auto&) { SendAll(fd, "HTTP/1.0 200 OK\r\n\r\nuntil close"); });
  auto a = HttpGet("127.0.0.1", s.port(), "/", Limits(5000ms));
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->body, "until close");
}

TEST(HttpGetTest, AnEndlessHeaderLineStopsAtTheHeaderLimit) {
  RawServer s([](int fd, const std::atomic<bool>& stop) {
    if (!SendAll(fd, "HTTP/1.1 200 OK\r\nX-Flood: ")) return;
    const std::string chunk(65536, 'a');
    // Up to 1 GiB: far more than any bound, yet finite if the client never stops.
    for (int i = 0; i < 16384 && !stop; ++i) {
      if (!SendAll(fd, chunk)) return;
    }
  });
  auto a = HttpGet("127.0.0.1", s.port(), "/metrics", Limits(20000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("larger than 64 KiB (the header limit)"), std::string::npos)
      << a.error().message();
  EXPECT_EQ(a.error().message().find("refused"), std::string::npos) << a.error().message();
}

TEST(HttpGetTest, OneByteAtATimeMeetsTheTotalDeadline) {
  RawServer s([](int fd, const std::atomic<bool>& stop) {
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n" +
        std::string(100, 'x');
    for (char c : answer) {  // one byte every 0.3 s: 50 s for the whole answer
      if (stop || !SendAll(fd, std::string_view(&c, 1))) return;
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
    RawServer s([](int, const auto&) {});  // closes without a word
    auto a = HttpGet("127.0.0.1", s.port(), "/health", Limits(5000ms));
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message().find("closed the connection before it answered"),
              std::string::npos)
        << a.error().message();
    EXPECT_EQ(a.error().message().find("timed out"), std::string::npos);
  }
  RawServer s([](int fd, const auto&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
  });
  auto a = HttpGet("127.0.0.1", s.port(), "/health", Limits(5000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("after 3 of 100 body bytes"), std::string::npos)
      << a.error().message();
}

TEST(HttpGetTest, BodyLimitAndRedirectsAndGarbage) {
  {
    RawServer s([](int fd, const auto&) {
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n");
    });
    auto a = HttpGet("127.0.0.1", s.port(), "/slots", Limits(5000ms));
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message().find("larger than 4 MiB (the body limit)"), std::string::npos)
        << a.error().message();
  }
  {
    RawServer s([](int fd, const auto&) {
      SendAll(
          fd,
          "HTTP/1.1 302 Found\r\nLocation: http://203.0.113.9:80/x\r\nContent-Length: 0\r\n\r\n");
    });
    auto a = HttpGet("127.0.0.1", s.port(), "/props", Limits(5000ms));
    ASSERT_TRUE(a.ok()) << a.error().message();  // not followed: the caller decides
    EXPECT_EQ(a->status, 302);
    EXPECT_EQ(a->location, "http://203.0.113.9:80/x");
  }
  RawServer s([](int fd, const auto&) { SendAll(fd, "SSH-2.0-OpenSSH\r\n\r\n"); });
  auto a = HttpGet("127.0.0.1", s.port(), "/props", Limits(5000ms));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("not HTTP"), std::string::npos) << a.error().message();
}

TEST(HttpGetTest, NothingListeningIsARefusal) {
  int port = 0;
  {
    RawServer s([](int, const auto&) {});
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
