#include "engine/rpc_host.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "util/tcp_connect.h"

namespace moetune {
namespace {

using Clock = std::chrono::steady_clock;

// The hello of llama.cpp's RPC protocol (ggml/src/ggml-rpc/ggml-rpc.cpp): the
// client sends the command byte RPC_CMD_HELLO (14, fixed across versions by a
// static_assert there), the payload size as a little-endian uint64 and the
// payload (rpc_msg_hello_req: conn_caps); the server answers the size of its
// answer as a uint64 and rpc_msg_hello_rsp {major, minor, patch, padding,
// conn_caps}. A server that expects another payload size closes the
// connection ("HELLO request size mismatch (32 vs 24) — client needs upgrade
// to protocol v8.x" in its log). The layouts tried, newest first: 24 bytes of
// conn_caps (llama.cpp 0.7.0 / ggml 0.27.0, protocol 8.0.0: recorded from its
// llama-bench talking to its ggml-rpc-server), 8 bytes (earlier versions with
// conn_caps), none (before conn_caps: the answer is {major, minor, patch}).
constexpr std::uint8_t kRpcCmdHello = 14;
struct HelloLayout {
  std::size_t request_bytes;
  std::size_t answer_bytes;
};
constexpr std::array<HelloLayout, 3> kHelloLayouts = {{{24, 28}, {8, 12}, {0, 3}}};

enum class HelloOutcome { kAnswered, kClosed, kSilent, kGarbage, kError };

struct Hello {
  HelloOutcome outcome = HelloOutcome::kError;
  std::string detail;
  std::array<int, 3> version{-1, -1, -1};
};

// The first bytes of an answer, printable ones as they are ("HTTP/1.1 400").
std::string Sample(const std::string& bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < 24; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    out +=
        std::isprint(c) != 0 ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
  }
  return out;
}

// Reads exactly `n` bytes (appended to *out) before the deadline.
HelloOutcome ReadExactly(int fd, std::size_t n, Clock::time_point deadline, std::string* out,
                         std::string* detail) {
  char buf[256];
  const std::size_t want = out->size() + n;
  while (out->size() < want) {
    const ssize_t got = ::recv(fd, buf, std::min(sizeof buf, want - out->size()), 0);
    if (got > 0) {
      out->append(buf, static_cast<std::size_t>(got));
      continue;
    }
    if (got == 0) return HelloOutcome::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitReady(fd, POLLIN, deadline)) return HelloOutcome::kSilent;
      continue;
    }
    *detail = std::strerror(errno);
    return errno == ECONNRESET ? HelloOutcome::kClosed : HelloOutcome::kError;
  }
  return HelloOutcome::kAnswered;
}

bool SendRequest(int fd, const HelloLayout& layout, Clock::time_point deadline) {
  std::string msg(1 + 8 + layout.request_bytes, '\0');
  msg[0] = static_cast<char>(kRpcCmdHello);
  for (int i = 0; i < 8; ++i)
    msg[1 + i] =
        static_cast<char>((static_cast<std::uint64_t>(layout.request_bytes) >> (8 * i)) & 0xffU);
  std::size_t done = 0;
  while (done < msg.size()) {
    const ssize_t n = ::send(fd, msg.data() + done, msg.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!WaitReady(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// One hello over an open connection in one layout.
Hello SayHello(int fd, const HelloLayout& layout, Clock::time_point deadline) {
  Hello h;
  if (!SendRequest(fd, layout, deadline)) {
    h.outcome = HelloOutcome::kClosed;
    return h;
  }
  std::string answer;
  h.outcome = ReadExactly(fd, 8, deadline, &answer, &h.detail);
  if (h.outcome != HelloOutcome::kAnswered) {
    if (h.outcome == HelloOutcome::kClosed && !answer.empty()) {
      h.outcome = HelloOutcome::kGarbage;
      h.detail = Sample(answer);
    }
    return h;
  }
  std::uint64_t size = 0;
  for (int i = 7; i >= 0; --i) size = (size << 8) | static_cast<unsigned char>(answer[i]);
  if (size != layout.answer_bytes) {
    // A little more of what it said, if it is there already, for the message.
    char more[16];
    const ssize_t n = ::recv(fd, more, sizeof more, MSG_DONTWAIT);
    if (n > 0) answer.append(more, static_cast<std::size_t>(n));
    h.outcome = HelloOutcome::kGarbage;
    h.detail = Sample(answer);
    return h;
  }
  answer.clear();
  h.outcome = ReadExactly(fd, layout.answer_bytes, deadline, &answer, &h.detail);
  if (h.outcome == HelloOutcome::kClosed) h.outcome = HelloOutcome::kGarbage;  // cut short
  if (h.outcome != HelloOutcome::kAnswered) return h;
  for (int i = 0; i < 3; ++i) h.version[i] = static_cast<unsigned char>(answer[i]);
  return h;
}

RpcHostProblem ProblemOf(ConnectFailure f) {
  switch (f) {
    case ConnectFailure::kNone:
      return RpcHostProblem::kNone;
    case ConnectFailure::kUnresolved:
      return RpcHostProblem::kUnresolved;
    case ConnectFailure::kRefused:
      return RpcHostProblem::kRefused;
    case ConnectFailure::kTimeout:
      return RpcHostProblem::kNoConnection;
    case ConnectFailure::kOther:
      break;
  }
  return RpcHostProblem::kUnreachable;
}

}  // namespace

Result<RpcEndpoint> ParseRpcEndpoint(std::string_view text) {
  const auto bad = [&] {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("RPC server '{}' is not HOST:PORT (e.g. 192.168.1.20:50052, "
                             "[fe80::1]:50052)",
                             text));
  };
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad();
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad();  // an IPv6 address needs brackets
  }
  int port = 0;
  for (const char c : text.substr(colon + 1)) {
    if (c < '0' || c > '9' || port > 65535) return bad();
    port = port * 10 + (c - '0');
  }
  if (port < 1 || port > 65535) return bad();
  return RpcEndpoint{std::string(host), port};
}

Result<std::vector<std::string>> ParseRpcList(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view entry = text.substr(0, comma);
    if (!entry.empty()) {
      MOETUNE_TRY(ParseRpcEndpoint(entry));
      out.emplace_back(entry);
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

const char* RpcHostProblemName(RpcHostProblem problem) {
  switch (problem) {
    case RpcHostProblem::kNone:
      return "none";
    case RpcHostProblem::kBadEndpoint:
      return "bad_endpoint";
    case RpcHostProblem::kUnresolved:
      return "unresolved";
    case RpcHostProblem::kRefused:
      return "refused";
    case RpcHostProblem::kNoConnection:
      return "no_connection";
    case RpcHostProblem::kUnreachable:
      return "unreachable";
    case RpcHostProblem::kClosed:
      return "closed";
    case RpcHostProblem::kSilent:
      return "silent";
    case RpcHostProblem::kGarbage:
      return "garbage";
  }
  return "unknown";
}

RpcHostCheck CheckRpcHost(const std::string& endpoint, std::chrono::milliseconds timeout) {
  RpcHostCheck c;
  c.endpoint = endpoint;
  c.timeout_seconds = std::chrono::duration<double>(timeout).count();
  auto ep = ParseRpcEndpoint(endpoint);
  if (!ep.ok()) {
    c.problem = RpcHostProblem::kBadEndpoint;
    c.detail = ep.error().message();
    return c;
  }
  const auto deadline = Clock::now() + timeout;
  for (const HelloLayout& layout : kHelloLayouts) {
    TcpConnection conn = ConnectTcp(ep->host, ep->port, deadline);
    if (!conn.ok()) {
      c.problem = ProblemOf(conn.failure());
      c.detail = conn.detail();
      return c;
    }
    const Hello h = SayHello(conn.fd(), layout, deadline);
    c.detail = h.detail;
    switch (h.outcome) {
      case HelloOutcome::kAnswered:
        c.problem = RpcHostProblem::kNone;
        c.major = h.version[0];
        c.minor = h.version[1];
        c.patch = h.version[2];
        return c;
      case HelloOutcome::kSilent:
        c.problem = RpcHostProblem::kSilent;
        return c;
      case HelloOutcome::kGarbage:
        c.problem = RpcHostProblem::kGarbage;
        return c;
      case HelloOutcome::kClosed:
      case HelloOutcome::kError:
        c.problem = RpcHostProblem::kClosed;  // perhaps another layout: try it
        break;
    }
  }
  return c;
}

std::string DescribeRpcHostProblem(const RpcHostCheck& c) {
  const auto ep = ParseRpcEndpoint(c.endpoint);
  const std::string start =
      ep.ok() ? fmt::format("start `ggml-rpc-server -H {} -p {}` there", ep->host, ep->port) : "";
  const std::string port = ep.ok() ? std::to_string(ep->port) : "?";
  switch (c.problem) {
    case RpcHostProblem::kNone:
      return "";
    case RpcHostProblem::kBadEndpoint:
      return c.detail;
    case RpcHostProblem::kUnresolved:
      return fmt::format(
          "RPC host {}: the name does not resolve ({}); check the spelling or use "
          "the host's address",
          c.endpoint, c.detail);
    case RpcHostProblem::kRefused:
      return fmt::format("RPC host {}: connection refused (nothing listens on port {}); {}",
                         c.endpoint, port, start);
    case RpcHostProblem::kNoConnection:
      return fmt::format(
          "RPC host {}: no answer to the connection within {:g} s (the host is "
          "off, or a firewall drops the packets); check the address and the "
          "network, then {}",
          c.endpoint, c.timeout_seconds, start);
    case RpcHostProblem::kUnreachable:
      return fmt::format("RPC host {}: cannot connect ({}); check the address and the network",
                         c.endpoint, c.detail);
    case RpcHostProblem::kClosed:
      return fmt::format(
          "RPC host {}: closed the connection at the hello: not a ggml-rpc-server, "
          "or one of a llama.cpp version whose protocol differs (its log names the "
          "version it needs); run the same llama.cpp version on every host",
          c.endpoint);
    case RpcHostProblem::kSilent:
      // A ggml-rpc-server serving one client does not answer another (llama.cpp
      // 0.7.0: no hello answer within 3 s while a llama-bench used it).
      return fmt::format(
          "RPC host {}: accepted the connection but did not answer the hello "
          "within {:g} s: its ggml-rpc-server is busy with another client (it "
          "serves one at a time), stopped or overloaded, or it is another "
          "program; stop the other client or restart the server",
          c.endpoint, c.timeout_seconds);
    case RpcHostProblem::kGarbage:
      return fmt::format(
          "RPC host {}: answered something that is not a ggml-rpc-server's hello "
          "(\"{}\"); another program listens on port {}: run ggml-rpc-server "
          "on a free port there and give that port to --rpc",
          c.endpoint, c.detail, port);
  }
  return "";
}

std::optional<RpcHostCheck> FirstFailingRpcHost(const std::vector<std::string>& endpoints,
                                                std::chrono::milliseconds timeout) {
  for (const auto& e : endpoints) {
    RpcHostCheck c = CheckRpcHost(e, timeout);
    if (!c.ok()) return c;
  }
  return std::nullopt;
}

Status CheckRpcHosts(const std::vector<std::string>& endpoints, std::chrono::milliseconds timeout) {
  const auto c = FirstFailingRpcHost(endpoints, timeout);
  if (!c) return OkStatus();
  return Error(
      c->problem == RpcHostProblem::kBadEndpoint ? ErrorKind::kInvalidArgument : ErrorKind::kIo,
      DescribeRpcHostProblem(*c));
}

void AttributeRpcFailure(const std::vector<std::string>& endpoints, EngineFailure* f,
                         std::chrono::milliseconds timeout) {
  if (endpoints.empty() || !f->rpc_host.empty()) return;
  switch (f->kind) {
    case FailureKind::kRpcHost:
    case FailureKind::kCrash:
    case FailureKind::kTimeout:
    case FailureKind::kUnparseable:
    case FailureKind::kEngineError:
      break;
    default:
      return;
  }
  if (const auto c = FirstFailingRpcHost(endpoints, timeout)) {
    f->kind = FailureKind::kRpcHost;
    f->rpc_host = c->endpoint;
    f->message = DescribeRpcHostProblem(*c) + "; the engine: " + f->message;
    return;
  }
  if (f->kind != FailureKind::kRpcHost) return;  // every host answers: not theirs
  if (endpoints.size() == 1) {
    f->rpc_host = endpoints.front();
    f->message = fmt::format("RPC host {}: {} (it answers a new connection now)", endpoints.front(),
                             f->message);
  } else {
    f->message = fmt::format("one of the RPC hosts {}: {} (each answers a new connection now)",
                             fmt::join(endpoints, ", "), f->message);
  }
}

Result<std::vector<std::string>> RpcServerArgv(std::string_view endpoint) {
  MOETUNE_ASSIGN_OR_RETURN(RpcEndpoint ep, ParseRpcEndpoint(endpoint));
  return std::vector<std::string>{"ggml-rpc-server", "-H", ep.host, "-p", std::to_string(ep.port)};
}

}  // namespace moetune
