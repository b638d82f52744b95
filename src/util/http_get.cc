#include "util/http_get.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "util/tcp_connect.h"

namespace moetune {
namespace {

using Clock = std::chrono::steady_clock;

struct Exchange {
  std::string where;  // "http://host:port/path" for messages
  Clock::time_point deadline;
  std::chrono::milliseconds total{0};
};

Error Late(const Exchange& x, const std::string& stage, std::size_t got) {
  return Error(ErrorKind::kIo,
               fmt::format("GET {}: timed out: no complete answer within the {} ms deadline ({}; "
                           "{} bytes received)",
                           x.where, x.total.count(), stage, got));
}

bool WaitFor(int fd, short events, const Exchange& x) { return WaitReady(fd, events, x.deadline); }

Result<TcpConnection> Connect(const std::string& host, int port, const Exchange& x) {
  TcpConnection c = ConnectTcp(host, port, x.deadline);
  switch (c.failure()) {
    case ConnectFailure::kNone:
      return c;
    case ConnectFailure::kUnresolved:
      return Error(ErrorKind::kIo,
                   fmt::format("GET {}: cannot resolve '{}': {}", x.where, host, c.detail()));
    case ConnectFailure::kRefused:
      return Error(ErrorKind::kIo, fmt::format("GET {}: connection refused (nothing listens "
                                               "there; is the server running?)",
                                               x.where));
    case ConnectFailure::kTimeout:
      return Error(ErrorKind::kIo,
                   fmt::format("GET {}: timed out: could not connect within the {} ms deadline",
                               x.where, x.total.count()));
    case ConnectFailure::kOther:
      break;
  }
  return Error(ErrorKind::kIo, fmt::format("GET {}: cannot connect: {}", x.where, c.detail()));
}

Status SendAll(int fd, const std::string& text, const Exchange& x) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitFor(fd, POLLOUT, x)) return Late(x, "sending the request", 0);
      continue;
    }
    return Error(ErrorKind::kIo, fmt::format("GET {}: cannot send the request: {}", x.where,
                                             std::strerror(n < 0 ? errno : EPIPE)));
  }
  return OkStatus();
}

// Reads what is there (at most `room` bytes) into `out`; 0 at the end of the
// stream. Errors on the deadline.
Result<std::size_t> ReadSome(int fd, std::string* out, std::size_t room, const Exchange& x,
                             const std::string& stage, std::size_t got) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, std::min(room, sizeof buf), 0);
    if (n >= 0) {
      out->append(buf, static_cast<std::size_t>(n));
      return static_cast<std::size_t>(n);
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!WaitFor(fd, POLLIN, x)) return Late(x, stage, got);
      continue;
    }
    return Error(ErrorKind::kIo, fmt::format("GET {}: connection error while {}: {}", x.where,
                                             stage, std::strerror(errno)));
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

std::string Trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

struct Head {
  int status = 0;
  std::optional<uint64_t> content_length;
  bool chunked = false;
  std::string location;
};

Result<Head> ParseHead(const std::string& head, const Exchange& x) {
  Head h;
  const auto bad = [&](const std::string& why) {
    return Error(
        ErrorKind::kFormat,
        fmt::format("GET {}: the answer is not HTTP ({}); is this a llama-server?", x.where, why));
  };
  std::size_t eol = head.find("\r\n");
  const std::string status_line = head.substr(0, eol);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ')
    return bad("no HTTP/1.x status line");
  for (int i = 9; i < 12; ++i) {
    const char c = status_line[static_cast<std::size_t>(i)];
    if (c < '0' || c > '9') return bad("the status is not a number");
    h.status = h.status * 10 + (c - '0');
  }
  std::size_t pos = eol == std::string::npos ? head.size() : eol + 2;
  while (pos < head.size()) {
    std::size_t end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    const std::string line = head.substr(pos, end - pos);
    pos = end + 2;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = Lower(Trim(line.substr(0, colon)));
    const std::string value = Trim(line.substr(colon + 1));
    if (name == "content-length") {
      uint64_t n = 0;
      if (value.empty() || value.size() > 18) return bad("a bad Content-Length");
      for (char c : value) {
        if (c < '0' || c > '9') return bad("a bad Content-Length");
        n = n * 10 + static_cast<uint64_t>(c - '0');
      }
      h.content_length = n;
    } else if (name == "transfer-encoding") {
      h.chunked = Lower(value).find("chunked") != std::string::npos;
    } else if (name == "location") {
      h.location = value.substr(0, 2000);
    }
  }
  return h;
}

// Decodes a chunked body that was read whole (the connection is closed after
// one answer). Incomplete input is an error: the server closed early.
Result<std::string> Dechunk(const std::string& raw, const Exchange& x) {
  std::string out;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) break;
    uint64_t size = 0;
    std::size_t i = pos;
    int digits = 0;
    for (; i < eol; ++i) {
      const char c = raw[i];
      int v = -1;
      if (c >= '0' && c <= '9') v = c - '0';
      if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
      if (v < 0) break;
      if (++digits > 15) {
        return Error(ErrorKind::kFormat,
                     fmt::format("GET {}: a chunk size that is too large", x.where));
      }
      size = size * 16 + static_cast<uint64_t>(v);
    }
    if (digits == 0) {
      return Error(ErrorKind::kFormat, fmt::format("GET {}: a malformed chunked body", x.where));
    }
    if (size == 0) return out;
    const std::size_t data = eol + 2;
    if (raw.size() < data || raw.size() - data < size) break;
    out.append(raw, data, static_cast<std::size_t>(size));
    pos = data + static_cast<std::size_t>(size) + 2;
  }
  return Error(ErrorKind::kIo, fmt::format("GET {}: the server closed the connection in the "
                                           "middle of the body ({} bytes received)",
                                           x.where, raw.size()));
}

Result<std::string> ReadHead(int fd, std::string* buf, const HttpLimits& limits,
                             const Exchange& x) {
  for (;;) {
    const std::size_t end = buf->find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = buf->substr(0, end);
      buf->erase(0, end + 4);
      return head;
    }
    if (buf->size() > limits.max_header_bytes) {
      return Error(ErrorKind::kFormat,
                   fmt::format("GET {}: the answer's headers are larger than {} KiB (the header "
                               "limit); this is not a llama-server",
                               x.where, limits.max_header_bytes >> 10));
    }
    MOETUNE_ASSIGN_OR_RETURN(std::size_t n,
                             ReadSome(fd, buf, limits.max_header_bytes + 4 - buf->size(), x,
                                      "reading the headers", buf->size()));
    if (n == 0) {
      return Error(ErrorKind::kIo,
                   fmt::format("GET {}: the server closed the connection before it answered "
                               "({} bytes received)",
                               x.where, buf->size()));
    }
  }
}

Result<std::string> ReadBody(int fd, std::string buf, const Head& h, const HttpLimits& limits,
                             const Exchange& x) {
  const auto too_big = [&] {
    return Error(ErrorKind::kFormat,
                 fmt::format("GET {}: the answer's body is larger than {} MiB (the body limit); "
                             "this is not a llama-server endpoint",
                             x.where, limits.max_body_bytes >> 20));
  };
  if (h.content_length && *h.content_length > limits.max_body_bytes) return too_big();
  // Raw chunked framing costs a little over the body itself.
  const std::size_t cap =
      h.chunked ? limits.max_body_bytes + limits.max_body_bytes / 8 + 4096 : limits.max_body_bytes;
  for (;;) {
    if (h.content_length && buf.size() >= *h.content_length) {
      buf.resize(static_cast<std::size_t>(*h.content_length));
      return buf;
    }
    if (buf.size() > cap) return too_big();
    MOETUNE_ASSIGN_OR_RETURN(
        std::size_t n, ReadSome(fd, &buf, cap + 1 - buf.size(), x, "reading the body", buf.size()));
    if (n > 0) continue;
    if (h.content_length) {
      return Error(ErrorKind::kIo,
                   fmt::format("GET {}: the server closed the connection after {} of {} body "
                               "bytes",
                               x.where, buf.size(), *h.content_length));
    }
    if (!h.chunked) return buf;
    MOETUNE_ASSIGN_OR_RETURN(std::string body, Dechunk(buf, x));
    if (body.size() > limits.max_body_bytes) return too_big();
    return body;
  }
}

}  // namespace

Result<HttpGetAnswer> HttpGet(const std::string& host, int port, const std::string& path,
                              const HttpLimits& limits) {
  const bool v6 = host.find(':') != std::string::npos;
  const std::string authority = fmt::format("{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
  Exchange x;
  x.where = fmt::format("http://{}{}", authority, path);
  x.total = limits.deadline;
  x.deadline = Clock::now() + limits.deadline;
  MOETUNE_ASSIGN_OR_RETURN(TcpConnection conn, Connect(host, port, x));
  MOETUNE_TRY(SendAll(conn.fd(),
                      fmt::format("GET {} HTTP/1.1\r\nHost: {}\r\nAccept: */*\r\nUser-Agent: "
                                  "moetune\r\nConnection: close\r\n\r\n",
                                  path, authority),
                      x));
  std::string buf;
  MOETUNE_ASSIGN_OR_RETURN(std::string head, ReadHead(conn.fd(), &buf, limits, x));
  MOETUNE_ASSIGN_OR_RETURN(Head h, ParseHead(head, x));
  HttpGetAnswer answer;
  answer.status = h.status;
  answer.location = h.location;
  // No body to wait for: a HEAD-less GET of 1xx/204/304 has none.
  if (h.status == 204 || h.status == 304 || (h.status >= 100 && h.status < 200)) return answer;
  MOETUNE_ASSIGN_OR_RETURN(answer.body, ReadBody(conn.fd(), std::move(buf), h, limits, x));
  return answer;
}

}  // namespace moetune
