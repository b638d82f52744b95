#include "support.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

namespace moetune::itest {

namespace fs = std::filesystem;

std::string MoetuneBinary() { return MOETUNE_BINARY; }

std::optional<fs::path> EngineDir() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("MOETUNE_LLAMA_DIR"); env != nullptr && *env != '\0') {
    candidates.emplace_back(env);
  }
  candidates.push_back(fs::path(MOETUNE_SOURCE_DIR) / ".engine" / "bin");
  for (const auto& c : candidates) {
    if (fs::exists(c / "llama-bench")) return c;
  }
  return std::nullopt;
}

namespace {
std::string ReadAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r;
  if (argv.empty()) return r;
  // Output goes to files, not pipes: no deadlock however much a child prints.
  TempDir tmp;
  const std::string out_path = tmp.File("stdout"), err_path = tmp.File("stderr");
  const pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    setpgid(0, 0);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || in < 0) _exit(126);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadAll(out_path);
  r.err = ReadAll(err_path);
  return r;
}

TempDir::TempDir() {
  std::random_device rd;
  const fs::path base = fs::temp_directory_path();
  for (;;) {
    path_ = base / ("moetune_itest_" + std::to_string(getpid()) + "_" + std::to_string(rd()));
    std::error_code ec;
    if (fs::create_directory(path_, ec)) break;
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::string& log_path) {
  if (argv.empty()) return;
  const pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
    setpgid(0, 0);
    const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    const int in = open("/dev/null", O_RDONLY);
    if (log < 0 || in < 0) _exit(126);
    dup2(in, 0);
    dup2(log, 1);
    dup2(log, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so the kill below never misses
  pid_ = pid;
}

bool BackgroundProcess::Running() {
  if (pid_ <= 0 || exited_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) exited_ = true;
  return !exited_;
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ <= 0 || exited_) return;
  kill(-pid_, SIGTERM);
  for (int i = 0; i < 100 && Running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (Running()) {
    kill(-pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

namespace {

// True when something accepts TCP connections on 127.0.0.1:port.
bool Accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

RpcServer::RpcServer(const fs::path& engine_dir) {
  const std::string exe = (engine_dir / "ggml-rpc-server").string();
  if (!fs::exists(exe)) return;
  for (int attempt = 0; attempt < 3 && endpoint_.empty(); ++attempt) {
    const int port = FreePort();
    if (port <= 0) continue;
    process_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{exe, "-H", "127.0.0.1", "-p", std::to_string(port), "-t", "1"},
        dir_.File("rpc.log"));
    for (int i = 0; i < 200 && process_->Running(); ++i) {
      if (Accepts(port)) {
        endpoint_ = "127.0.0.1:" + std::to_string(port);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (endpoint_.empty()) process_.reset();  // the port was taken, or it died: stop, retry
  }
}

std::string RpcServer::Log() const { return ReadAll(dir_.path() / "rpc.log"); }

}  // namespace moetune::itest
