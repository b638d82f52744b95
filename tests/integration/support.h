#pragma once
/// Helpers shared by the integration tests, which run the real executables
/// (moetune and llama.cpp) on generated models. Processes are started with
/// the library's own runner (util/subprocess.h), the engine is found by the
/// library's own discovery (engine/engine_info.h) and ports come from the
/// library's FindFreeLoopbackPort: the tests use what moetune uses.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine_info.h"
#include "engine/server_test_util.h"
#include "util/subprocess.h"

namespace moetune::itest {

/// Path of the moetune executable under test (CMake's MOETUNE_BINARY define, or
/// $MOETUNE_TEST_BINARY when set: e.g. a sanitizer build of moetune).
std::string MoetuneBinary();

/// Folder holding llama-bench, llama-server, ...: where moetune's engine
/// discovery finds it ($MOETUNE_LLAMA_DIR, the default engine, PATH);
/// nullopt when it finds none.
std::optional<std::filesystem::path> EngineDir();

struct CommandResult {
  int exit_code = -1;      // exit status, or 128+signal
  int signal = 0;          // the signal that ended it, 0 for a normal exit
  bool timed_out = false;  // killed after the timeout
  std::string out;         // stdout
  std::string err;         // stderr
};

/// Runs argv (no shell) with a timeout, capturing stdout and stderr, with
/// extra environment variables. The child runs in its own process group,
/// which is killed on timeout.
CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_s = 300,
                         const std::vector<std::pair<std::string, std::string>>& env = {});

/// A loopback TCP port that was free a moment ago: the library's own
/// FindFreeLoopbackPort; -1 when none could be found.
inline int FreePort() {
  auto port = FindFreeLoopbackPort();
  return port.ok() ? *port : -1;
}

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
  bool started() const { return child_ != nullptr; }
  /// True while the child has not exited.
  bool Running();
  /// The child's pid (its process group); -1 when it did not start.
  pid_t pid() const { return child_ ? child_->pid() : -1; }

 private:
  std::unique_ptr<ChildProcess> child_;
};

/// Writes a synthetic model with `moetune synth` (preset, scale); "" on failure
/// (the reason in *error).
std::string SynthModel(const std::string& path, const std::string& preset, const std::string& scale,
                       std::string* error);

/// A suite over one tiny synthesized model and the engine moetune discovers:
/// derived suites call SetUpModel from SetUpTestSuite. After every test,
/// nothing the test started may be left running.
class TinyModelSuite : public ::testing::Test {
 protected:
  static void SetUpModel(const std::string& file_name);
  static void TearDownTestSuite();
  void SetUp() override {
    ASSERT_NE(info_, nullptr) << "model synthesis or engine discovery failed";
  }
  void TearDown() override;

  static TempDir* dir_;
  static std::string model_;
  static EngineInfo* info_;
};

/// Waits up to a few seconds for the kernel to finish tearing down what this
/// process started, then lists what is left (its live descendants).
std::vector<pid_t> LeftoverDescendants();

/// True when `pid` is gone (or a zombie) within `wait_s` seconds.
bool ProcessGone(pid_t pid, double wait_s = 5);

/// The engine's ggml-rpc-server (<engine>/ggml-rpc-server -H 127.0.0.1 -p PORT
/// -t 1) on a free loopback port: a second device for llama.cpp's tools
/// without a GPU. Started in the constructor (retrying another port when the
/// chosen one is taken meanwhile), ready when endpoint() is non-empty, and
/// always stopped (its process group killed and reaped) by the destructor.
/// With `address_space_limit` > 0 it runs under `ulimit -v` of that many bytes:
/// a device with little memory, whose server refuses a buffer beyond it (as a
/// GPU without free memory refuses an allocation) and stays up.
class RpcServer {
 public:
  explicit RpcServer(const std::filesystem::path& engine_dir, int64_t address_space_limit = 0);
  ~RpcServer() = default;
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;
  /// "127.0.0.1:PORT", or empty when the server did not come up.
  const std::string& endpoint() const { return endpoint_; }
  /// Its log (stdout and stderr), for failure messages.
  std::string Log() const;
  /// The server's pid (its process group), -1 when it did not come up.
  pid_t pid() const { return process_ ? process_->pid() : -1; }

 private:
  TempDir dir_;
  std::unique_ptr<BackgroundProcess> process_;
  std::string endpoint_;
};

/// Waits up to `seconds` until the server's log shows `text` ("Accepted
/// client connection": a client is using it).
bool LogShows(const RpcServer& rpc, const std::string& text, double seconds);

/// Waits until GET `path` on 127.0.0.1:`port` answers 200 and returns its
/// body ("" when `seconds` pass first).
std::string WaitForGet(int port, const std::string& path, double seconds);

}  // namespace moetune::itest
