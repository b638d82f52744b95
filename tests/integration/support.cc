#include "support.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

namespace moetune::itest {

namespace fs = std::filesystem;

std::string MoetuneBinary() {
  // $MOETUNE_TEST_BINARY runs the tests against another build of moetune (a
  // sanitizer build, say) without rebuilding this test binary.
  if (const char* other = std::getenv("MOETUNE_TEST_BINARY"); other != nullptr && *other != '\0')
    return other;
  return MOETUNE_BINARY;
}

std::optional<fs::path> EngineDir() {
  DiscoveryOptions o;
  o.probe = false;
  auto info = DiscoverEngine(o);
  if (!info.ok()) return std::nullopt;
  return fs::path(info->dir);
}

CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s,
                         const std::vector<std::pair<std::string, std::string>>& env) {
  CommandResult r;
  RunOptions o;
  o.spawn.argv = argv;
  o.spawn.env_set = env;
  o.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  o.stderr_tail_lines = 0;
  o.on_stderr_line = [&](std::string_view l) { r.err.append(l).push_back('\n'); };
  auto out = RunProcess(o);
  if (!out.ok()) {
    r.err = out.error().message();
    return r;
  }
  r.timed_out = out->timed_out;
  r.signal = out->status.exited ? 0 : out->status.signal;
  r.exit_code = out->status.exited ? out->status.exit_code : 128 + out->status.signal;
  r.out = std::move(out->stdout_text);
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
  SpawnOptions s;
  s.argv = argv;
  s.stdout_mode = OutputMode::kFile;
  s.stdout_file = log_path;
  s.stderr_mode = OutputMode::kFile;
  s.stderr_file = log_path;
  auto child = ChildProcess::Spawn(s);
  if (child.ok()) child_ = std::move(child).value();
}

bool BackgroundProcess::Running() { return child_ && !child_->Poll().has_value(); }

std::string SynthModel(const std::string& path, const std::string& preset, const std::string& scale,
                       std::string* error) {
  const auto r =
      RunCommand({MoetuneBinary(), "synth", "--preset", preset, "--scale", scale, "-o", path}, 300);
  if (r.exit_code != 0) {
    *error = r.err;
    return "";
  }
  return path;
}

TempDir* TinyModelSuite::dir_ = nullptr;
std::string TinyModelSuite::model_;
EngineInfo* TinyModelSuite::info_ = nullptr;

void TinyModelSuite::SetUpModel(const std::string& file_name) {
  dir_ = new TempDir();
  std::string error;
  model_ = SynthModel(dir_->File(file_name), "qwen3moe", "tiny", &error);
  ASSERT_FALSE(model_.empty()) << error;
  auto info = DiscoverEngine({});
  ASSERT_TRUE(info.ok()) << info.error().message();
  info_ = new EngineInfo(*info);
}

void TinyModelSuite::TearDownTestSuite() {
  delete dir_;
  delete info_;
  dir_ = nullptr;
  info_ = nullptr;
}

void TinyModelSuite::TearDown() {
  EXPECT_TRUE(LeftoverDescendants().empty());
  EXPECT_EQ(LiveChildGroupCount(), 0);
}

bool LogShows(const RpcServer& rpc, const std::string& text, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (rpc.Log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::vector<pid_t> LeftoverDescendants() {
  for (int i = 0; i < 200 && !LiveDescendantsOf(::getpid()).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return LiveDescendantsOf(::getpid());
}

bool ProcessGone(pid_t pid, double wait_s) {
  const int steps = std::max(1, static_cast<int>(wait_s * 40));
  for (int i = 0; i < steps; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    if (text.empty()) return true;
    const auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z') {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
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

RpcServer::RpcServer(const fs::path& engine_dir, int64_t address_space_limit) {
  const std::string exe = (engine_dir / "ggml-rpc-server").string();
  if (!fs::exists(exe)) return;
  for (int attempt = 0; attempt < 3 && endpoint_.empty(); ++attempt) {
    auto free_port = FindFreeLoopbackPort();
    if (!free_port.ok()) continue;
    const int port = *free_port;
    std::vector<std::string> argv = {exe, "-H", "127.0.0.1", "-p", std::to_string(port), "-t", "1"};
    if (address_space_limit > 0)  // the limit in KiB, then the server in its place
      argv.insert(argv.begin(), {"/bin/sh", "-c", "ulimit -v \"$0\" && exec \"$@\"",
                                 std::to_string(address_space_limit / 1024)});
    process_ = std::make_unique<BackgroundProcess>(argv, dir_.File("rpc.log"));
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

std::string RpcServer::Log() const {
  std::ifstream in(dir_.path() / "rpc.log", std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string WaitForGet(int port, const std::string& path, double seconds) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(1, 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (auto res = cli.Get(path); res && res->status == 200) return res->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return "";
}

}  // namespace moetune::itest
