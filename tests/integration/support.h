#pragma once
/// Helpers shared by the integration tests, which run the real executables
/// (moetune and llama.cpp) on generated models.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace moetune::itest {

/// Path of the moetune executable under test (CMake's MOETUNE_BINARY define).
std::string MoetuneBinary();

/// Folder holding llama-bench, llama-server, ...: $MOETUNE_LLAMA_DIR if set,
/// else <source>/.engine/bin (scripts/setup-engine.sh). nullopt when neither
/// holds llama-bench.
std::optional<std::filesystem::path> EngineDir();

struct CommandResult {
  int exit_code = -1;      // exit status, or 128+signal
  bool timed_out = false;  // killed after the timeout
  std::string out;         // stdout
  std::string err;         // stderr
};

/// Runs argv (no shell) with a timeout, capturing stdout and stderr. The child
/// runs in its own process group, which is killed on timeout.
CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s = 300);

/// A fresh temporary folder, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// A child process running in the background (e.g. llama-server), its stdout
/// and stderr appended to `log_path`; killed (process group) on destruction.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  bool started() const { return pid_ > 0; }
  /// True while the child has not exited.
  bool Running();

 private:
  int pid_ = -1;
  bool exited_ = false;
};

/// A TCP port that was free a moment ago (for starting llama-server).
int FreePort();

/// The engine's ggml-rpc-server (<engine>/ggml-rpc-server -H 127.0.0.1 -p PORT
/// -t 1) on a free loopback port: a second device for llama.cpp's tools
/// without a GPU. Started in the constructor (retrying another port when the
/// chosen one is taken meanwhile), ready when endpoint() is non-empty, and
/// always stopped (its process group killed and reaped) by the destructor.
class RpcServer {
 public:
  explicit RpcServer(const std::filesystem::path& engine_dir);
  ~RpcServer() = default;
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;
  /// "127.0.0.1:PORT", or empty when the server did not come up.
  const std::string& endpoint() const { return endpoint_; }
  /// Its log (stdout and stderr), for failure messages.
  std::string Log() const;

 private:
  TempDir dir_;
  std::unique_ptr<BackgroundProcess> process_;
  std::string endpoint_;
};

}  // namespace moetune::itest
