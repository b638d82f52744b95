#pragma once
/// The settings of a llama-server that decide its speed and memory, read from
/// its argument vector (the tuned command, or /proc/PID/cmdline of the running
/// server) and its LLAMA_ARG_* environment by the one parser of the flag
/// vocabulary (config/server_argv.h ParseServerArgv), so that "the server runs
/// with other settings than tuned" is a plain comparison of configurations.
/// Also the one edit watch proposes: the same command with another `--n-cpu-moe`.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/server_argv.h"

namespace moetune {

struct ServerSettings : ParsedServerCommand {
  ServerSettings() { config = UnsetServerConfig(); }
  explicit ServerSettings(ParsedServerCommand parsed) : ParsedServerCommand(std::move(parsed)) {}

  /// What /props says of the context each slot gets (a server watched without
  /// its command line); nullopt when unknown.
  std::optional<int64_t> ctx_per_slot;

  /// The whole command: launcher, program, arguments.
  std::vector<std::string> Command() const;

  /// --n-cpu-moe as given; nullopt when absent. `--cpu-moe` (every layer)
  /// gives nullopt with `all_cpu_moe()` true.
  std::optional<int> NCpuMoe() const;
  bool all_cpu_moe() const { return config.placement.all_cpu_moe; }
  /// --n-cpu-moe's value as given, also when it is no layer count (then
  /// NCpuMoe() is nullopt); empty when the flag is absent.
  std::string NCpuMoeAsGiven() const;
  /// -ub (llama.cpp's default micro-batch is 512).
  int NUbatch() const { return config.n_ubatch; }
  /// The context of one slot: -c over -np unless the slots share one cache
  /// (-kvu); nullopt without -c.
  std::optional<int64_t> CtxPerSlot() const;
};

/// The flags given (command line or LLAMA_ARG_* environment), by the
/// vocabulary's key ("n_cpu_moe"), with their values as the one writer writes
/// them ("on" for a switch): what a watch's start event lists.
std::map<std::string, std::string> GivenSettings(const ServerSettings& settings);

/// Settings from an argument vector (config/server_argv.h ParseServerArgv).
ServerSettings SettingsFromArgv(const std::vector<std::string>& argv);

/// One setting that differs.
struct SettingDifference {
  std::string key;       // the vocabulary's key ("n_cpu_moe"), or "ctx_per_slot"
  std::string expected;  // "(default)" when absent
  std::string actual;
};

/// The settings that decide speed and memory (the vocabulary's "shapes"
/// flags) and differ between `expected` and `actual`, by key; host, port,
/// logging and the like are ignored. Values are compared as written by the
/// one argv writer, so spellings of one value (`-fa 1`, `-fa on`) agree. The
/// model is compared by file name, since the same file may be reached by
/// another path.
std::vector<SettingDifference> CompareSettings(const ServerSettings& expected,
                                               const ServerSettings& actual);

/// The flag for a difference's key ("--n-cpu-moe"), for messages.
std::string SettingFlagName(const std::string& key);

/// The same command (launcher included) with `--n-cpu-moe n` (replacing
/// -ncmoe/--n-cpu-moe/--cpu-moe, or added when absent).
std::vector<std::string> WithNCpuMoe(const ServerSettings& settings, int n);

}  // namespace moetune
