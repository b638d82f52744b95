#include "watch/server_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cctype>

namespace moetune {
namespace {

constexpr std::size_t kMaxBody = 4u << 20;

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Error BadUrl(std::string_view text, const std::string& why) {
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("URL '{}': {}; use http://HOST:PORT (e.g. http://127.0.0.1:8080)",
                           text.substr(0, 200), why));
}

}  // namespace

std::string ServerUrl::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

bool ServerUrl::IsLoopback() const {
  const std::string h = Lower(host);
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

Result<ServerUrl> ParseServerUrl(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return BadUrl(text, "it is empty");
  const std::string lower = Lower(s.substr(0, 8));
  if (lower.rfind("https://", 0) == 0)
    return BadUrl(text, "https is not supported (llama-server's monitoring is plain http)");
  if (lower.rfind("http://", 0) == 0) s.remove_prefix(7);
  if (s.find("://") != std::string_view::npos) return BadUrl(text, "only http:// is accepted");
  if (const auto slash = s.find('/'); slash != std::string_view::npos) {
    if (s.substr(slash) != "/") return BadUrl(text, "a path is not accepted");
    s = s.substr(0, slash);
  }
  ServerUrl u;
  std::string_view port_text;
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find(']');
    if (close == std::string_view::npos) return BadUrl(text, "an IPv6 address lacks its ']'");
    u.host = std::string(s.substr(1, close - 1));
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return BadUrl(text, "expected ':' after the IPv6 address");
      port_text = rest.substr(1);
    }
  } else {
    const auto colon = s.rfind(':');
    if (colon != std::string_view::npos) {
      u.host = std::string(s.substr(0, colon));
      port_text = s.substr(colon + 1);
    } else {
      u.host = std::string(s);
    }
  }
  if (u.host.empty()) return BadUrl(text, "the host is missing");
  for (char c : u.host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
          c == '_'))
      return BadUrl(text, fmt::format("'{}' is not a host name or address", u.host.substr(0, 100)));
  }
  if (s.back() == ':') return BadUrl(text, "the port after ':' is missing");
  if (s.front() != '[' && u.host.find(':') != std::string::npos)
    return BadUrl(text, "an IPv6 address needs brackets ([::1]:8080)");
  if (!port_text.empty()) {
    int port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || port > 65535)
        return BadUrl(text, fmt::format("port '{}' is not a number from 1 to 65535",
                                        port_text.substr(0, 20)));
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535)
      return BadUrl(text,
                    fmt::format("port {} is outside the accepted range 1 to 65535", port_text));
    u.port = port;
  }
  return u;
}

ServerClient::ServerClient(ServerUrl url, std::chrono::milliseconds timeout)
    : url_(std::move(url)), timeout_(timeout) {}

Result<HttpAnswer> ServerClient::Get(const std::string& path) const {
  httplib::Client client(url_.host, url_.port);
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(timeout_).count();
  const auto sec = static_cast<time_t>(us / 1000000);
  const auto usec = static_cast<time_t>(us % 1000000);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
  client.set_keep_alive(false);
  HttpAnswer answer;
  bool too_big = false;
  bool too_slow = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto res = client.Get(
      path,
      [&](const httplib::Response& r) {
        answer.status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (answer.body.size() + n > kMaxBody) {
          too_big = true;
          return false;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          too_slow = true;
          return false;
        }
        answer.body.append(data, n);
        return true;
      });
  const std::string where = url_.ToString() + path;
  if (too_big) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{} answered more than {} MiB: not a llama-server endpoint", where,
                             kMaxBody >> 20));
  }
  if (too_slow) {
    return Error(ErrorKind::kIo,
                 fmt::format("{} did not finish answering within {} ms", where, timeout_.count()));
  }
  if (!res) {
    const auto err = res.error();
    std::string what = httplib::to_string(err);
    if (err == httplib::Error::Connection)
      what = "connection refused or host unreachable; is llama-server running there?";
    else if (err == httplib::Error::Read)
      what = fmt::format("no answer within {} ms (timed out)", timeout_.count());
    else if (err == httplib::Error::ConnectionTimeout)
      what = fmt::format("could not connect within {} ms (timed out)", timeout_.count());
    return Error(ErrorKind::kIo, fmt::format("GET {}: {}", where, what));
  }
  if (answer.status == 0) answer.status = res->status;
  return answer;
}

Result<ServerMetrics> ServerClient::Metrics() const {
  MOETUNE_ASSIGN_OR_RETURN(HttpAnswer a, Get("/metrics"));
  if (a.status == 501) {
    const std::string msg = ServerErrorMessage(a.body);
    return Error(ErrorKind::kUnsupported,
                 fmt::format("{} is a llama-server started without --metrics ({}): restart it "
                             "with --metrics added to its command line (or "
                             "LLAMA_ARG_ENDPOINT_METRICS=1 in its environment)",
                             url_.ToString(), msg.empty() ? "HTTP 501" : msg.substr(0, 200)));
  }
  if (a.status == 404) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("{}/metrics answered 404: either this is not a llama-server, or a "
                             "llama-server too old for --metrics; a current llama-server needs "
                             "--metrics on its command line",
                             url_.ToString()));
  }
  if (a.status != 200) {
    return Error(ErrorKind::kEngine, fmt::format("{}/metrics answered HTTP {}: {}", url_.ToString(),
                                                 a.status, a.body.substr(0, 200)));
  }
  auto m = ParseMetrics(a.body);
  if (!m.ok()) return m.take_error().Context(url_.ToString() + "/metrics");
  return m;
}

Result<std::optional<std::vector<SlotState>>> ServerClient::Slots() const {
  MOETUNE_ASSIGN_OR_RETURN(HttpAnswer a, Get("/slots"));
  if (a.status == 501 || a.status == 404) return std::optional<std::vector<SlotState>>();
  if (a.status != 200) {
    return Error(ErrorKind::kEngine, fmt::format("{}/slots answered HTTP {}: {}", url_.ToString(),
                                                 a.status, a.body.substr(0, 200)));
  }
  auto s = ParseSlots(a.body);
  if (!s.ok()) return s.take_error().Context(url_.ToString() + "/slots");
  return std::optional<std::vector<SlotState>>(std::move(s).value());
}

Result<ServerProps> ServerClient::Props() const {
  MOETUNE_ASSIGN_OR_RETURN(HttpAnswer a, Get("/props"));
  if (a.status != 200) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{} does not look like a llama-server: GET /props answered HTTP {} "
                             "(llama-server answers 200 with its settings)",
                             url_.ToString(), a.status));
  }
  auto p = ParseProps(a.body);
  if (!p.ok()) {
    return Error(ErrorKind::kFormat, fmt::format("{} does not look like a llama-server: {}",
                                                 url_.ToString(), p.error().message()));
  }
  return p;
}

}  // namespace moetune
