#include "engine/server_test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/server_argv.h"
#include "util/http_get.h"
#include "util/json_parse.h"
#include "util/text.h"
#include "util/units.h"

namespace moetune {
namespace {

// The last `max_bytes` of the log from `offset` on (the part one attempt
// wrote), fed line by line to `tail`. Bounded: a server that logged for
// hours is not read whole.
void ReadLogTail(const std::string& path, int64_t offset, LogTail* tail) {
  constexpr int64_t kMaxBytes = int64_t{256} * 1024;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  const off_t end = ::lseek(fd, 0, SEEK_END);
  const off_t from = std::max<off_t>(static_cast<off_t>(offset), end - kMaxBytes);
  std::string text;
  if (end > from && ::lseek(fd, from, SEEK_SET) == from) {
    text.resize(static_cast<std::size_t>(end - from));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  // A line cut by the byte window is incomplete: skip it.
  std::string_view rest(text);
  if (from > static_cast<off_t>(offset)) {
    const auto nl = rest.find('\n');
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  for (const auto line : SplitLines(rest)) tail->Add(line.substr(0, kMaxLineBytes));
}

moetune::LogTail EngineLogTail(std::size_t lines) {
  return moetune::LogTail(lines, IsNoiseLine, IsDiagnosticLine, 100);
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

}  // namespace

bool IsPortInUseLog(const std::vector<std::string>& log_lines) {
  for (const auto& l : log_lines) {
    if (l.find("couldn't bind HTTP server socket") != std::string::npos ||
        l.find("Address already in use") != std::string::npos) {
      return true;
    }
  }
  return false;
}

Result<int> FindFreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error(ErrorKind::kIo, "cannot create a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return Error(ErrorKind::kIo, "cannot bind a loopback socket to find a free port");
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::vector<std::string> ServerArgv(const EngineInfo& engine, const ServerOptions& o, int port) {
  ServerConfig c = o.config;
  if (c.ctx_size <= 0) c.ctx_size = 4096;
  // Explicit placement: no automatic fitting, one slot.
  if (c.n_parallel <= 0) c.n_parallel = 1;
  c.fit = Switch::kOff;
  c.host = "127.0.0.1";
  c.port = port;
  std::vector<std::string> argv = ServerArgv(c, engine.ToolPath("llama-server"));
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  return argv;
}

namespace {

// The timings (and text) of a finished /completion answer: the whole object,
// or the last event of a streamed one.
Result<CompletionTimings> TimingsOf(const nlohmann::json& j, std::string content) {
  if (j.contains("error")) {
    return Error(
        ErrorKind::kEngine,
        fmt::format("llama-server returned an error: {}",
                    j["error"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  }
  auto it = j.find("timings");
  if (it == j.end() || !it->is_object()) {
    return Error(ErrorKind::kFormat, "llama-server's /completion response has no 'timings' object");
  }
  const auto& t = *it;
  auto num = [&](const char* k) {
    return t.contains(k) && t[k].is_number() ? t[k].get<double>() : 0.0;
  };
  CompletionTimings c;
  c.prompt_n = static_cast<int>(num("prompt_n"));
  c.prompt_ms = num("prompt_ms");
  c.prompt_per_second = num("prompt_per_second");
  c.predicted_n = static_cast<int>(num("predicted_n"));
  c.predicted_ms = num("predicted_ms");
  c.predicted_per_second = num("predicted_per_second");
  c.cache_n = static_cast<int>(num("cache_n"));
  c.ttft_ms = c.prompt_ms + (c.predicted_n > 0 ? c.predicted_ms / c.predicted_n : 0.0);
  c.content = std::move(content);
  return c;
}

// A streamed answer: "data: {...}" events, the text in pieces, the timings
// in the last one ("stop": true).
Result<CompletionTimings> ParseCompletionStream(std::string_view body) {
  std::string content;
  for (std::string_view line : SplitLines(body)) {
    line = Trim(line);
    constexpr std::string_view kData = "data:";
    if (!line.starts_with(kData)) continue;  // blank separators, comments
    const auto j = ParseJsonOrDiscarded(Trim(line.substr(kData.size())));
    if (j.is_discarded() || !j.is_object()) {
      return Error(ErrorKind::kFormat,
                   fmt::format("llama-server streamed an event that is not a JSON object: '{}'",
                               Truncate(line, 200)));
    }
    if (j.contains("content") && j["content"].is_string()) {
      content += j["content"].get<std::string>();
    }
    if (j.contains("error") || (j.contains("stop") && j["stop"] == true)) {
      return TimingsOf(j, std::move(content));
    }
  }
  return Error(ErrorKind::kFormat,
               "llama-server's streamed /completion answer ended without its final event");
}

}  // namespace

Result<CompletionTimings> ParseCompletionResponse(const std::string& body) {
  // A server-sent event stream starts with an event ("data:") or a comment (":").
  const std::string_view start = Trim(body);
  if (start.starts_with("data:") || start.starts_with(':')) return ParseCompletionStream(body);
  const auto j = ParseJsonOrDiscarded(body);
  if (j.is_discarded() || !j.is_object()) {
    return Error(
        ErrorKind::kFormat,
        fmt::format("llama-server answered something that is not JSON: '{}'", body.substr(0, 200)));
  }
  std::string content;
  if (j.contains("content") && j["content"].is_string()) content = j["content"].get<std::string>();
  return TimingsOf(j, std::move(content));
}

Result<std::unique_ptr<LlamaServer>> LlamaServer::Start(const EngineInfo& engine,
                                                        const ServerOptions& options) {
  if (!engine.HasTool("llama-server")) {
    return Error(ErrorKind::kNotFound,
                 fmt::format("engine_missing: no executable llama-server in {}; install the "
                             "engine (scripts/setup-engine.sh) or pass --llama-dir",
                             engine.dir));
  }
  std::unique_ptr<LlamaServer> server(new LlamaServer());
  if (options.log_file.empty()) {
    // mkstemp: a private file (0600) with a name nobody can predict or plant.
    std::string path =
        (std::filesystem::temp_directory_path() / "moetune-server-XXXXXX.log").string();
    const int fd = ::mkstemps(path.data(), 4);
    if (fd < 0) {
      return Error(ErrorKind::kIo, fmt::format("cannot create a log file for llama-server in {}: "
                                               "{}; set TMPDIR to a writable folder",
                                               std::filesystem::temp_directory_path().string(),
                                               std::strerror(errno)));
    }
    ::close(fd);
    server->log_file_ = path;
    server->remove_log_ = true;
  } else {
    server->log_file_ = options.log_file;
  }
  // The port is free when checked, but another program can take it before
  // the server binds it: then the server exits at once saying so, and the
  // next attempt uses a new port.
  for (int attempt = 1;; ++attempt) {
    int port = 0;
    if (attempt == 1 && options.first_port) {
      port = *options.first_port;
    } else {
      MOETUNE_ASSIGN_OR_RETURN(port, FindFreeLoopbackPort());
    }
    bool port_taken = false;
    const Status st = server->StartOn(engine, options, port, &port_taken);
    if (st.ok()) return server;
    if (!port_taken || attempt == kPortAttempts) {
      if (port_taken) {
        return st.error().Context(fmt::format(
            "{} loopback ports were taken before llama-server could bind them", kPortAttempts));
      }
      return st.error();
    }
    server->ports_tried_ = attempt;
  }
}

Status LlamaServer::StartOn(const EngineInfo& engine, const ServerOptions& options, int port,
                            bool* port_taken) {
  port_ = port;
  argv_ = ServerArgv(engine, options, port_);
  const int64_t log_offset = FileSize(log_file_);
  SpawnOptions s;
  s.argv = argv_;
  s.stdout_mode = OutputMode::kFile;
  s.stdout_file = log_file_;
  s.stderr_mode = OutputMode::kFile;
  s.stderr_file = log_file_;
  const auto t0 = std::chrono::steady_clock::now();
  MOETUNE_ASSIGN_OR_RETURN(child_, ChildProcess::Spawn(s));

  const auto deadline = t0 + options.health_timeout;
  while (true) {
    if (auto st = child_->Poll()) {
      moetune::LogTail engine_log = EngineLogTail(30);
      ReadLogTail(log_file_, log_offset, &engine_log);
      const auto& tail = engine_log.tail();
      *port_taken = IsPortInUseLog({tail.begin(), tail.end()});
      const EngineFailure f = ClassifyFailure(*st, false, 0, engine_log.kept(), engine_log.tail());
      return Error(ErrorKind::kEngine,
                   fmt::format("llama-server exited before it was ready ({}, {}): {}",
                               FailureKindName(f.kind), f.exit, f.message));
    }
    // The server answers /health at once, 503 while it loads; a request may
    // not outlast the deadline (sub-second deadlines included), nor hang on a
    // listener that is not the server, and an answer that arrives after the
    // deadline is still a timeout.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    HttpLimits limits;  // util/http_get.h: a total deadline, capped headers and body
    limits.deadline =
        std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(1000));
    const auto res = HttpGet("127.0.0.1", port_, "/health", limits);
    const bool late = std::chrono::steady_clock::now() > deadline;
    if (res && res->status == 200 && !late) break;
    if (late) {
      Stop(std::chrono::milliseconds(2000));
      const double secs = std::chrono::duration<double>(options.health_timeout).count();
      const auto last = LogTail(1);
      return Error(ErrorKind::kEngine,
                   fmt::format("timeout: llama-server was not healthy within {}; last log "
                               "line: {}",
                               FormatSeconds(secs), last.empty() ? "" : last[0]));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  startup_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return OkStatus();
}

LlamaServer::~LlamaServer() {
  Stop(std::chrono::milliseconds(2000));
  if (remove_log_) std::remove(log_file_.c_str());
}

Result<CompletionTimings> LlamaServer::Complete(const std::string& prompt, int n_predict,
                                                std::chrono::milliseconds timeout) {
  if (!child_ || !child_->running())
    return Error(ErrorKind::kEngine, "llama-server is not running");
  httplib::Client client("127.0.0.1", port_);
  // Milliseconds, not whole seconds: a 500 ms limit must not become "none" (0 s).
  client.set_read_timeout(std::max(timeout, std::chrono::milliseconds(1)));
  client.set_write_timeout(std::chrono::seconds(30));
  // Streamed: llama.cpp 0.4.0 runs the whole answer through its chat parser
  // and refuses text that is not valid UTF-8 with HTTP 500 ("does not match
  // the expected Content-only format"). A plain answer cut inside a character
  // at n_predict is such text; a streamed one leaves the cut bytes out. Both
  // versions put the timings in the last event.
  const nlohmann::json req = {{"prompt", prompt},      {"n_predict", n_predict},
                              {"cache_prompt", false}, {"temperature", 0.0},
                              {"ignore_eos", true},    {"stream", true}};
  const auto t0 = std::chrono::steady_clock::now();
  auto res = client.Post("/completion", req.dump(), "application/json");
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!res) {
    if (auto st = child_->Poll()) {
      moetune::LogTail engine_log = EngineLogTail(30);
      ReadLogTail(log_file_, 0, &engine_log);
      const EngineFailure f = ClassifyFailure(*st, false, 0, engine_log.kept(), engine_log.tail());
      return Error(ErrorKind::kEngine,
                   fmt::format("llama-server died during the request ({}, {}): {}",
                               FailureKindName(f.kind), f.exit, f.message));
    }
    return Error(ErrorKind::kEngine, fmt::format("request to llama-server failed: {}",
                                                 httplib::to_string(res.error())));
  }
  if (res->status != 200) {
    return Error(ErrorKind::kEngine, fmt::format("llama-server answered HTTP {}: {}", res->status,
                                                 res->body.substr(0, 300)));
  }
  MOETUNE_ASSIGN_OR_RETURN(CompletionTimings t, ParseCompletionResponse(res->body));
  t.wall_ms = wall_ms;
  return t;
}

ExitStatus LlamaServer::Stop(std::chrono::milliseconds grace) {
  if (!child_) return ExitStatus{};
  return child_->Terminate(grace);
}

std::vector<std::string> LlamaServer::LogTail(std::size_t lines) const {
  moetune::LogTail engine_log(lines, IsNoiseLine);
  ReadLogTail(log_file_, 0, &engine_log);
  return {engine_log.tail().begin(), engine_log.tail().end()};
}

}  // namespace moetune
