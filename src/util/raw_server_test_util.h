// Test support: a raw TCP server on the loopback that answers each connection in its own
// (often wrong) way, for the bounded HTTP client's unit tests (util/http_get_test.cc) and the
// hostile-server integration tests (tests/integration/hostile_server_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace moetune::testing {

/// Sends all of `text` (false when the client has gone).
inline bool SendAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

/// Listens on 127.0.0.1 (a free port) and, for every connection until it is destroyed,
/// reads the request head (up to the blank line) and calls `answer` with the connection;
/// the connection is closed when `answer` returns. `stop` turns true when the server is
/// being destroyed, for answers that dribble on.
class RawServer {
 public:
  using Answer = std::function<void(int fd, const std::atomic<bool>& stop)>;

  explicit RawServer(Answer answer) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    EXPECT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this, answer = std::move(answer)] {
      while (!stop_) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // shut down by the destructor
        std::string head;
        char buf[4096];
        while (head.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = ::recv(c, buf, sizeof buf, 0);
          if (n <= 0) break;
          head.append(buf, static_cast<std::size_t>(n));
        }
        {
          const std::lock_guard<std::mutex> lock(mu_);
          request_ = head;
        }
        answer(c, stop_);
        ::close(c);
      }
    });
  }
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;
  ~RawServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  /// The head of the last request read (request line and headers).
  std::string request() const {
    const std::lock_guard<std::mutex> lock(mu_);
    return request_;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::string request_;
  std::thread thread_;
};

}  // namespace moetune::testing
