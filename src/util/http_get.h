#pragma once
/// A bounded HTTP/1.1 GET for talking to servers moetune does not trust (a
/// llama-server someone else started, whatever answers on a port).
///
/// Why not cpp-httplib (used elsewhere): its client (0.11, Debian's) grows a
/// header line without bound (an endless header line took 1.9 GB), checks
/// its timeout per read only (one byte every 0.3 s keeps it forever), and
/// reports a header flood as "connection refused". Here every request has:
/// - one total deadline for the connection, the request, the headers and the
///   body together;
/// - caps on the header block and the body;
/// - no redirects: a 3xx comes back as an answer (status and Location) and
///   the caller decides; moetune follows none;
/// - errors that name the limit that was reached, or how the server ended
///   the exchange (refused, closed early, malformed).
/// Host names are resolved with getaddrinfo before the deadline starts
/// (numeric addresses and localhost resolve at once).

#include <chrono>
#include <cstddef>
#include <string>

#include "util/result.h"

namespace moetune {

struct HttpLimits {
  /// Total time for the whole exchange.
  std::chrono::milliseconds deadline{5000};
  /// The status line and headers together.
  std::size_t max_header_bytes = std::size_t{64} << 10;
  /// The body (after chunked decoding).
  std::size_t max_body_bytes = std::size_t{4} << 20;
};

struct HttpGetAnswer {
  int status = 0;
  std::string body;
  /// The Location header of a redirect ("" when none).
  std::string location;
};

/// GET http://host:port/path. `host` is a name or an address (IPv6 without
/// brackets). Errors are kIo (connection, deadline, early close) or kFormat
/// (not HTTP, over a cap); their messages start with "GET http://...".
Result<HttpGetAnswer> HttpGet(const std::string& host, int port, const std::string& path,
                              const HttpLimits& limits = {});

}  // namespace moetune
