#include "util/tcp_connect.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace moetune {

TcpConnection::~TcpConnection() {
  if (fd_ >= 0) ::close(fd_);
}

TcpConnection::TcpConnection(TcpConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      failure_(other.failure_),
      detail_(std::move(other.detail_)) {}

TcpConnection& TcpConnection::operator=(TcpConnection&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    failure_ = other.failure_;
    detail_ = std::move(other.detail_);
  }
  return *this;
}

int MillisLeft(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

bool WaitReady(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const int ms = MillisLeft(deadline);
    if (ms == 0) return false;
    struct pollfd p {};
    p.fd = fd;
    p.events = events;
    const int r = ::poll(&p, 1, ms);
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;
  }
}

namespace {

// One address: the socket when it connected, -1 with *err (0 on the deadline).
int ConnectOne(const struct addrinfo& a, std::chrono::steady_clock::time_point deadline, int* err) {
  const int s = ::socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) {
    *err = errno;
    return -1;
  }
  if (::connect(s, a.ai_addr, a.ai_addrlen) == 0) return s;
  if (errno != EINPROGRESS) {
    *err = errno;
    ::close(s);
    return -1;
  }
  if (!WaitReady(s, POLLOUT, deadline)) {
    *err = 0;
    ::close(s);
    return -1;
  }
  int so = 0;
  socklen_t len = sizeof so;
  if (::getsockopt(s, SOL_SOCKET, SO_ERROR, &so, &len) != 0) so = errno;
  if (so == 0) return s;
  *err = so;
  ::close(s);
  return -1;
}

}  // namespace

TcpConnection ConnectTcp(const std::string& host, int port,
                         std::chrono::steady_clock::time_point deadline) {
  TcpConnection c;
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* list = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (gai != 0) {
    c.failure_ = ConnectFailure::kUnresolved;
    c.detail_ = ::gai_strerror(gai);
    return c;
  }
  int last_err = ECONNREFUSED;
  for (auto* a = list; a != nullptr; a = a->ai_next) {
    int err = 0;
    c.fd_ = ConnectOne(*a, deadline, &err);
    if (c.fd_ >= 0) break;
    if (err == 0) {  // the deadline passed: no time for another address
      ::freeaddrinfo(list);
      c.failure_ = ConnectFailure::kTimeout;
      c.detail_ = "no answer before the deadline";
      return c;
    }
    last_err = err;
  }
  ::freeaddrinfo(list);
  if (c.fd_ < 0) {
    c.failure_ = last_err == ECONNREFUSED ? ConnectFailure::kRefused
                 : last_err == ETIMEDOUT  ? ConnectFailure::kTimeout
                                          : ConnectFailure::kOther;
    c.detail_ = std::strerror(last_err);
  }
  return c;
}

}  // namespace moetune
