#pragma once
/// The settings of a llama-server that decide its speed and memory, read from
/// its argument vector (the tuned command, or /proc/PID/cmdline of the running
/// server) with llama.cpp's aliases folded together (`-ncmoe` = `--n-cpu-moe`,
/// `-c` = `--ctx-size`, ... as common/arg.cpp defines them), so that "the
/// server runs with other settings than tuned" is a plain comparison. Also the
/// one edit watch proposes: the same command with another `--n-cpu-moe`.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace moetune {

struct ServerSettings {
  /// Canonical key ("n_cpu_moe", "ctx_size", "model", ...) -> value as given.
  /// Flags without a value map to "on". Repeated -ot values are joined by ",".
  std::map<std::string, std::string> values;
  /// The argument vector after the program (for the proposed command).
  std::vector<std::string> args;
  /// The program as given (argv[0] of the tuned command, or llama-server's path).
  std::string program;
  /// What ran the program, when a loader did (`ld-linux ... --library-path L`
  /// in /proc/PID/cmdline of a server started through a wrapper script).
  std::vector<std::string> launcher;

  /// The whole command: launcher, program, arguments.
  std::vector<std::string> Command() const;

  std::optional<std::string> Get(const std::string& key) const;
  /// --n-cpu-moe as a number; nullopt when absent or not a number. `--cpu-moe`
  /// (every layer) gives nullopt with `all_cpu_moe()` true.
  std::optional<int> NCpuMoe() const;
  bool all_cpu_moe() const { return values.count("cpu_moe") > 0; }
  /// -ub (llama.cpp's default micro-batch is 512).
  int NUbatch() const;
};

/// Settings from an argument vector. argv[0] is the program; for a command
/// line read from /proc where a loader runs the server (`ld-linux ...
/// --library-path L /path/llama-server ARGS`), everything up to the argument
/// that names llama-server is the program.
ServerSettings SettingsFromArgv(const std::vector<std::string>& argv);

/// Adds the LLAMA_ARG_* environment of a process: llama.cpp applies a variable
/// only when the flag is not on the command line (common/arg.cpp).
void ApplyLlamaEnv(const std::vector<std::pair<std::string, std::string>>& env,
                   ServerSettings* settings);

/// One setting that differs.
struct SettingDifference {
  std::string key;
  std::string expected;  // "(default)" when absent
  std::string actual;
};

/// The settings that decide speed and memory and differ between `expected`
/// and `actual` (host, port, logging and the like are ignored). The model is
/// compared by file name, since the same file may be reached by another path.
std::vector<SettingDifference> CompareSettings(const ServerSettings& expected,
                                               const ServerSettings& actual);

/// The same command (launcher included) with `--n-cpu-moe n` (replacing
/// -ncmoe/--n-cpu-moe/--cpu-moe, or added when absent).
std::vector<std::string> WithNCpuMoe(const ServerSettings& settings, int n);

}  // namespace moetune
