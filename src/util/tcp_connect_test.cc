#include "util/tcp_connect.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

namespace moetune {
namespace {

using Clock = std::chrono::steady_clock;

// A loopback listener with `backlog`; its port.
struct Listener {
  explicit Listener(int backlog) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
         ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
         ::listen(fd, backlog) == 0;
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int fd = -1;
  int port = 0;
  bool ok = false;
};

TEST(TcpConnectTest, ConnectsToAListener) {
  Listener l(4);
  ASSERT_TRUE(l.ok);
  const TcpConnection c = ConnectTcp("127.0.0.1", l.port, Clock::now() + std::chrono::seconds(2));
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.failure(), ConnectFailure::kNone);
}

TEST(TcpConnectTest, AClosedPortIsRefused) {
  int port = 0;
  {
    Listener l(1);  // a port that was free, closed again
    ASSERT_TRUE(l.ok);
    port = l.port;
  }
  const TcpConnection c = ConnectTcp("127.0.0.1", port, Clock::now() + std::chrono::seconds(2));
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.failure(), ConnectFailure::kRefused);
}

// A full backlog drops further SYNs, like a firewall: the deadline ends the wait.
TEST(TcpConnectTest, NoAnswerEndsAtTheDeadline) {
  Listener l(0);
  ASSERT_TRUE(l.ok);
  const auto first = ConnectTcp("127.0.0.1", l.port, Clock::now() + std::chrono::seconds(2));
  ASSERT_TRUE(first.ok());  // the one connection the backlog holds
  const auto t0 = Clock::now();
  const TcpConnection c = ConnectTcp("127.0.0.1", l.port, t0 + std::chrono::milliseconds(300));
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.failure(), ConnectFailure::kTimeout);
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 3.0);
}

TEST(TcpConnectTest, MillisLeftIsZeroPastTheDeadline) {
  EXPECT_EQ(MillisLeft(Clock::now() - std::chrono::seconds(1)), 0);
  EXPECT_GT(MillisLeft(Clock::now() + std::chrono::seconds(10)), 9000);
}

}  // namespace
}  // namespace moetune
