#include "engine/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "util/units.h"

namespace moetune {
namespace {

// Reads the whole log and keeps the last `lines` non-noise lines.
std::deque<std::string> ReadTail(const std::string& path, std::size_t lines,
                                 std::vector<std::string>* diagnostics) {
  std::deque<std::string> tail;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (IsNoiseLine(line)) continue;
    if (diagnostics != nullptr && IsDiagnosticLine(line) && diagnostics->size() < 100)
      diagnostics->push_back(line);
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  return tail;
}

}  // namespace

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
  const auto& p = o.placement;
  std::vector<std::string> argv = {
      engine.ToolPath("llama-server"), "-m", o.model, "--host", "127.0.0.1", "--port",
      std::to_string(port), "-ngl", std::to_string(p.n_gpu_layers), "-ncmoe",
      std::to_string(p.n_cpu_moe), "-c", std::to_string(p.ctx_size.value_or(4096)), "-b",
      std::to_string(p.n_batch), "-ub", std::to_string(p.n_ubatch), "-ctk", p.type_k, "-ctv",
      p.type_v,
      // Explicit placement: no automatic fitting, one slot.
      "-fit", "off", "-np", "1"};
  if (!p.override_tensor.empty()) argv.insert(argv.end(), {"-ot", p.override_tensor});
  if (!p.flash_attn.empty()) argv.insert(argv.end(), {"-fa", p.flash_attn});
  if (o.threads > 0) argv.insert(argv.end(), {"-t", std::to_string(o.threads)});
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  return argv;
}

Result<CompletionTimings> ParseCompletionResponse(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Error(
        ErrorKind::kFormat,
        fmt::format("llama-server answered something that is not JSON: '{}'", body.substr(0, 200)));
  }
  if (j.contains("error")) {
    return Error(ErrorKind::kEngine,
                 fmt::format("llama-server returned an error: {}", j["error"].dump()));
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
  if (j.contains("content") && j["content"].is_string())
    c.content = j["content"].get<std::string>();
  return c;
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
    server->log_file_ = (std::filesystem::temp_directory_path() /
                         fmt::format("moetune-server-{}-{}.log", ::getpid(), std::rand()))
                            .string();
    server->remove_log_ = true;
  } else {
    server->log_file_ = options.log_file;
  }
  MOETUNE_ASSIGN_OR_RETURN(server->port_, FindFreeLoopbackPort());
  server->argv_ = ServerArgv(engine, options, server->port_);
  SpawnOptions s;
  s.argv = server->argv_;
  s.stdout_mode = OutputMode::kFile;
  s.stdout_file = server->log_file_;
  s.stderr_mode = OutputMode::kFile;
  s.stderr_file = server->log_file_;
  const auto t0 = std::chrono::steady_clock::now();
  MOETUNE_ASSIGN_OR_RETURN(server->child_, ChildProcess::Spawn(s));

  httplib::Client client("127.0.0.1", server->port_);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(5, 0);
  const auto deadline = t0 + options.health_timeout;
  while (true) {
    if (auto st = server->child_->Poll()) {
      std::vector<std::string> diag;
      const auto tail = ReadTail(server->log_file_, 30, &diag);
      const EngineFailure f = ClassifyFailure(*st, false, 0, diag, tail);
      return Error(ErrorKind::kEngine,
                   fmt::format("llama-server exited before it was ready ({}, {}): {}",
                               FailureKindName(f.kind), f.exit, f.message));
    }
    // A health request can block while the server loads: an answer that
    // arrives after the deadline is still a timeout.
    const auto res = client.Get("/health");
    const bool late = std::chrono::steady_clock::now() > deadline;
    if (res && res->status == 200 && !late) break;
    if (late) {
      server->Stop(std::chrono::milliseconds(2000));
      const double secs = std::chrono::duration<double>(options.health_timeout).count();
      return Error(ErrorKind::kEngine,
                   fmt::format("timeout: llama-server was not healthy within {}; last log "
                               "line: {}",
                               FormatSeconds(secs),
                               server->LogTail(1).empty() ? "" : server->LogTail(1)[0]));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  server->startup_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return server;
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
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout).count();
  client.set_read_timeout(static_cast<time_t>(secs), 0);
  client.set_write_timeout(30, 0);
  const nlohmann::json req = {{"prompt", prompt},
                              {"n_predict", n_predict},
                              {"cache_prompt", false},
                              {"temperature", 0.0},
                              {"ignore_eos", true}};
  const auto t0 = std::chrono::steady_clock::now();
  auto res = client.Post("/completion", req.dump(), "application/json");
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!res) {
    if (auto st = child_->Poll()) {
      std::vector<std::string> diag;
      const auto tail = ReadTail(log_file_, 30, &diag);
      const EngineFailure f = ClassifyFailure(*st, false, 0, diag, tail);
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
  const auto tail = ReadTail(log_file_, lines, nullptr);
  return {tail.begin(), tail.end()};
}

}  // namespace moetune
