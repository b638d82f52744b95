#pragma once
/// A ServerConfig's command line, both ways, from the one flag vocabulary
/// (config/flags.h):
///
/// - ConfigSettings / ServerArgv write it: every command moetune prints,
///   emits, starts or checks (plan, tune, analyze, serve, `--emit`, the
///   llama-fit-params dry run of `plan --check`) comes from ServerArgv, flags
///   in the vocabulary's order;
/// - ParseServerArgv / ApplyLlamaEnv read one back: a tuned or planned
///   command (`serve --from`, `watch --from`) and a running server's
///   /proc/PID/cmdline and LLAMA_ARG_* environment (watch). What the
///   vocabulary knows but ServerConfig does not hold, and what it does not
///   know at all, are listed, never guessed.
///
/// ParseServerArgv(ServerArgv(c)).config == c for every configuration c
/// moetune writes (a unit test checks every field).

#include <string>
#include <utility>
#include <vector>

#include "config/flags.h"
#include "config/server_config.h"

namespace moetune {

/// The flags of `config` with their values, in the vocabulary's order (a
/// switch with an empty value). What is not given is not written.
std::vector<FlagSetting> ConfigSettings(const ServerConfig& config);

/// The placement's flags (-ngl, --n-cpu-moe, --cpu-moe, -ot, -dev, -ts), as
/// ConfigSettings writes them.
std::vector<FlagSetting> PlacementSettings(const Placement& placement);

/// `program` followed by ConfigSettings as llama-server spells them.
std::vector<std::string> ServerArgv(const ServerConfig& config,
                                    const std::string& program = "llama-server");

/// The words of `settings` (spelling, then the value when the flag takes one).
std::vector<std::string> SettingsArgv(const std::vector<FlagSetting>& settings,
                                      FlagTool tool = kToolServer);

/// A command line read back.
struct ParsedServerCommand {
  ServerConfig config;
  /// Vocabulary flags that ServerConfig holds no field for (-tb, -sm, --log-file,
  /// --api-key, ...), with their values, in the order given.
  std::vector<FlagSetting> other;
  /// Vocabulary flags whose value does not parse ("-ctk q9_9", "-ngl lots"),
  /// or that lack their value at the end, with the value as given.
  std::vector<FlagSetting> invalid;
  /// Arguments outside the vocabulary (with the value that follows an unknown
  /// flag), as given.
  std::vector<std::string> not_understood;
  /// The flags that were given (command line or environment), each once.
  std::vector<FlagId> given;
  /// The program as given (argv[0], or the llama-server a loader runs).
  std::string program;
  /// What ran the program, when a loader did (`ld-linux ... --library-path L`
  /// in /proc/PID/cmdline of a server started through a wrapper script).
  std::vector<std::string> launcher;
  /// The arguments after the program, as given.
  std::vector<std::string> args;

  bool Given(FlagId id) const;
  /// The value of a flag in `other` (the last one given).
  const std::string* Other(FlagId id) const;
};

/// A ServerConfig in which nothing is given (every field at its "not given"
/// value: -ngl -1, no --n-cpu-moe, ...): where parsing starts.
ServerConfig UnsetServerConfig();

/// Reads an argument vector. argv[0] is the program; for a command line read
/// from /proc where a loader runs the server (`ld-linux ... --library-path L
/// /path/llama-server ARGS`), everything up to the argument that names
/// llama-server is the launcher. Repeated -ot values add rules; any other
/// repeated flag: the last one counts (as llama.cpp does).
ParsedServerCommand ParseServerArgv(const std::vector<std::string>& argv);

/// Adds the LLAMA_ARG_* environment of a process: llama.cpp applies a variable
/// only when its flag is not on the command line (common/arg.cpp).
void ApplyLlamaEnv(const std::vector<std::pair<std::string, std::string>>& env,
                   ParsedServerCommand* command);

/// POSIX-shell quoting of an argument vector for display.
std::string ShellJoin(const std::vector<std::string>& args);

}  // namespace moetune
