// Test support: RPC hosts that misbehave, on the loopback, for the unit tests
// of engine/rpc_host.h and the integration tests of the commands that take
// --rpc (tests/integration/rpc_hosts_test.cc).
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace moetune::testing {

/// Listens on 127.0.0.1 (a free port) and answers every connection one way.
class FakeRpcHost {
 public:
  enum class Behaviour {
    kGarbage,  // reads what comes, answers an HTTP error page, closes
    kSilent,   // accepts, reads, never answers (a stopped server)
    kClose,    // accepts and closes at once
    kHello,    // answers the 24-byte hello of protocol 8.0.0 like ggml-rpc-server, then closes
  };

  explicit FakeRpcHost(Behaviour behaviour) : behaviour_(behaviour) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
          ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0 && ::listen(fd_, 16) == 0;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  FakeRpcHost(const FakeRpcHost&) = delete;
  FakeRpcHost& operator=(const FakeRpcHost&) = delete;
  ~FakeRpcHost() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }

  /// True when it listens.
  bool ok() const { return ok_; }
  int port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }

 private:
  // Reads what arrives within `ms` (at most one hello's worth).
  static void Drain(int c, int ms) {
    char buf[64];
    struct pollfd p {};
    p.fd = c;
    p.events = POLLIN;
    if (::poll(&p, 1, ms) > 0) (void)::recv(c, buf, sizeof buf, 0);
  }

  void Answer(int c) {
    switch (behaviour_) {
      case Behaviour::kClose:
        break;
      case Behaviour::kGarbage: {
        Drain(c, 1000);
        const std::string_view page = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        (void)::send(c, page.data(), page.size(), MSG_NOSIGNAL);
        break;
      }
      case Behaviour::kSilent:
        Drain(c, 1000);
        while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        break;
      case Behaviour::kHello: {
        Drain(c, 1000);
        std::string answer(8 + 28, '\0');
        answer[0] = 28;  // size, little-endian uint64
        answer[8] = 8;   // major 8, minor 0, patch 0
        (void)::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
        break;
      }
    }
  }

  void Serve() {
    while (!stop_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;  // shut down by the destructor
      ++connections_;
      Answer(c);
      ::close(c);
    }
  }

  Behaviour behaviour_;
  bool ok_ = false;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

/// A loopback address that never answers a connection: a listener with a full
/// backlog that never accepts (the kernel drops further SYNs, as a firewall
/// would), like a host that is off.
class BlackholeHost {
 public:
  BlackholeHost() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
          ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0 && ::listen(fd_, 0) == 0;
    port_ = ntohs(a.sin_port);
    // The one connection the backlog holds.
    filler_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ok_ = ok_ && ::connect(filler_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  BlackholeHost(const BlackholeHost&) = delete;
  BlackholeHost& operator=(const BlackholeHost&) = delete;
  ~BlackholeHost() {
    ::close(filler_);
    ::close(fd_);
  }
  /// True when its backlog is full.
  bool ok() const { return ok_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  bool ok_ = false;
  int fd_ = -1;
  int filler_ = -1;
  int port_ = 0;
};

}  // namespace moetune::testing
