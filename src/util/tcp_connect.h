#pragma once
/// A TCP connection opened before a deadline, for talking to servers moetune
/// does not control (a llama-server someone else started, a ggml-rpc-server
/// on another host): the name is resolved, every address tried, and the
/// connect waited for with poll() up to the deadline, so an address that
/// drops packets (no answer at all) costs the deadline, never the kernel's
/// two minutes of SYN retries. How it failed is typed, for messages that say
/// what to fix.

#include <chrono>
#include <string>

namespace moetune {

enum class ConnectFailure {
  kNone,
  kUnresolved,  // the name does not resolve
  kRefused,     // the host answered: nothing listens on that port
  kTimeout,     // no answer before the deadline (a firewall dropping packets, a host that is off)
  kOther,       // unreachable network, no route, ... (detail says which)
};

/// An open, non-blocking socket, or why there is none. Closes it on destruction.
class TcpConnection {
 public:
  TcpConnection() = default;
  ~TcpConnection();
  TcpConnection(TcpConnection&& other) noexcept;
  TcpConnection& operator=(TcpConnection&& other) noexcept;
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  ConnectFailure failure() const { return failure_; }
  /// The resolver's or the system's words for the failure ("Connection refused").
  const std::string& detail() const { return detail_; }

 private:
  friend TcpConnection ConnectTcp(const std::string&, int, std::chrono::steady_clock::time_point);
  int fd_ = -1;
  ConnectFailure failure_ = ConnectFailure::kNone;
  std::string detail_;
};

/// Connects to host:port (a name or an address, IPv6 without brackets) before
/// `deadline`; the socket is left non-blocking.
TcpConnection ConnectTcp(const std::string& host, int port,
                         std::chrono::steady_clock::time_point deadline);

/// Waits until `fd` is ready for `events` (poll's POLLIN / POLLOUT) or the
/// deadline passes; false on the deadline. A poll error returns true, so that
/// the read or write that follows reports it.
bool WaitReady(int fd, short events, std::chrono::steady_clock::time_point deadline);

/// Milliseconds left before `deadline` (0 when past), capped for poll().
int MillisLeft(std::chrono::steady_clock::time_point deadline);

}  // namespace moetune
