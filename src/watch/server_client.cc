#include "watch/server_client.h"

#include <fmt/format.h>

#include <cctype>

#include "util/http_get.h"

namespace moetune {
namespace {

constexpr std::size_t kMaxBody = 4u << 20;
constexpr std::size_t kMaxHeader = 64u << 10;

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
  // util/http_get.h: one total deadline, header and body caps, no redirects.
  HttpLimits limits;
  limits.deadline = timeout_;
  limits.max_header_bytes = kMaxHeader;
  limits.max_body_bytes = kMaxBody;
  MOETUNE_ASSIGN_OR_RETURN(HttpGetAnswer a, HttpGet(url_.host, url_.port, path, limits));
  if (a.status >= 300 && a.status < 400) {
    return Error(
        ErrorKind::kFormat,
        fmt::format("{}{} answered with a redirect (HTTP {}) to '{}': moetune follows no "
                    "redirects and watches only {}; give the server's own address",
                    url_.ToString(), path, a.status, a.location.substr(0, 200), url_.ToString()));
  }
  HttpAnswer answer;
  answer.status = a.status;
  answer.body = std::move(a.body);
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
