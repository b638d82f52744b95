#pragma once
/// Talking to a llama-server someone else started: the URL, bounded HTTP GETs
/// with timeouts (an unreachable or silent server never hangs moetune), and
/// the checks that say what is wrong in words: not reachable, not a
/// llama-server, a llama-server without `--metrics`.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"
#include "watch/server_api.h"

namespace moetune {

/// Where the server listens.
struct ServerUrl {
  std::string host;  // "127.0.0.1", "localhost", "::1"
  int port = 8080;
  /// "http://127.0.0.1:8080" (IPv6 hosts in brackets).
  std::string ToString() const;
  /// True for 127.0.0.0/8, ::1 and localhost: the process can be looked up.
  bool IsLoopback() const;
};

/// Parses "http://HOST:PORT", "HOST:PORT" or "http://HOST" (port 8080, as
/// llama-server's documentation uses). https and paths other than "/" are
/// refused with a message that says what is accepted.
Result<ServerUrl> ParseServerUrl(std::string_view text);

/// One HTTP answer.
struct HttpAnswer {
  int status = 0;
  std::string body;
};

class ServerClient {
 public:
  ServerClient(ServerUrl url, std::chrono::milliseconds timeout);

  const ServerUrl& url() const { return url_; }

  /// GET `path` (util/http_get.h): the whole exchange is bounded by the
  /// timeout, headers by 64 KiB and bodies by 4 MiB; a redirect is an error
  /// (moetune watches the URL it was given, nowhere else). Errors name the
  /// URL and the limit or what happened (refused, timed out, closed early).
  Result<HttpAnswer> Get(const std::string& path) const;

  /// GET /metrics, parsed. A 501 from llama-server (started without
  /// `--metrics`) or a 404 becomes a message that names the flag to add.
  Result<ServerMetrics> Metrics() const;
  /// GET /slots; nullopt (not an error) when the server has it turned off.
  Result<std::optional<std::vector<SlotState>>> Slots() const;
  /// GET /props, parsed; errors say the URL is not a llama-server.
  Result<ServerProps> Props() const;

 private:
  ServerUrl url_;
  std::chrono::milliseconds timeout_;
};

}  // namespace moetune
