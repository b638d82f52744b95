#pragma once
/// Ready-to-paste llama-server configuration (`--emit server|env|ini|compose`)
/// from the argument vector a plan or a tune produced:
///
/// - `server`:  the command line, one flag per line with `\` continuations;
/// - `env`:     `LLAMA_ARG_*` variables, shell-quoted (`set -a; . ./FILE; set +a`);
/// - `ini`:     a preset section for `llama-server --models-preset FILE` (router mode);
/// - `compose`: a docker compose service for the official server image
///              (ghcr.io/ggml-org/llama.cpp:server, :server-cuda with a GPU),
///              the model's folder mounted read-only at /models.
///
/// Each output starts with comments naming who made it and the llama.cpp
/// version it was planned or tuned with. All four describe the same argument
/// vector: CanonicalServerArgv (flags in one fixed order, repeated -ot joined
/// with commas, as llama.cpp wants them). The compose service differs only in
/// the model path (/models/<file>) and an explicit `--port 8080` (the image's
/// health check asks that port).
///
/// Environment names and preset keys follow llama.cpp's common/arg.cpp (each
/// option's set_env(...) and its long name without dashes; preset parsing in
/// common/preset.cpp), checked against the installed llama-server --help.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace moetune {

enum class EmitFormat { kServer, kEnv, kIni, kCompose };

/// "server", "env", "ini", "compose"; errors list the accepted names.
Result<EmitFormat> ParseEmitFormat(std::string_view name);
const char* EmitFormatName(EmitFormat format);

/// What follows a flag on the command line.
enum class FlagArity {
  kValue,   // one value: `-c 4096`
  kList,    // one value that may repeat; repeats are joined with commas (`-ot a,b`)
  kSwitch,  // no value: `-kvu`. Written as the flag alone (server, compose) or as
            // `true` (env, ini), which llama.cpp reads as "on" (common/arg.cpp
            // common_arg_utils::is_truthy; common/preset.cpp to_args).
};

/// A llama-server flag moetune can write in every format.
struct ServerFlag {
  const char* spelling;   // how moetune writes it on a command line: "-ngl", "--n-cpu-moe"
  const char* long_name;  // "--n-gpu-layers"; its name without dashes is the preset key
  const char* env;        // "LLAMA_ARG_N_GPU_LAYERS"; nullptr: llama.cpp has no variable
  FlagArity arity;
  std::vector<const char*> aliases;  // other spellings accepted on input ("--gpu-layers")

  bool takes_value() const { return arity != FlagArity::kSwitch; }
};

/// The value env and ini files give a switch (FlagArity::kSwitch).
inline constexpr const char* kSwitchOnValue = "true";

/// The flags in canonical order (the order CanonicalServerArgv writes them).
const std::vector<ServerFlag>& KnownServerFlags();
/// The flag for a spelling, long name or alias; nullptr when unknown.
const ServerFlag* FindServerFlag(std::string_view arg);
/// The preset key of a flag: its long name without the leading dashes.
std::string PresetKey(const ServerFlag& flag);

/// argv[0] (the program) followed by every flag with its value (a switch
/// alone), in the order of KnownServerFlags, list flags joined with commas.
/// Errors name an unknown flag, a flag without its value, or a non-list flag
/// given twice with different values.
Result<std::vector<std::string>> CanonicalServerArgv(const std::vector<std::string>& argv);

struct EmitContext {
  /// Comment lines at the top: who made this and for which llama.cpp, e.g.
  /// "planned by moetune 0.1.0 for llama.cpp 0.7.0 (build 11669)".
  std::vector<std::string> header;
  /// The preset section name (ini); default: the model file's name without .gguf.
  std::string preset_name;
  /// compose: the CUDA image and a GPU reservation (else the CPU image).
  bool gpu = true;
};

/// The configuration in `format`. Errors name the flag and value that the
/// format cannot carry (e.g. a flag without a LLAMA_ARG_* variable, a preset
/// value with ';' or '#', which start comments in llama.cpp's INI reader).
Result<std::string> EmitServerConfig(EmitFormat format, const std::vector<std::string>& argv,
                                     const EmitContext& context);

/// The compose service's argument vector: the canonical one with the model at
/// /models/<file name> and `--port 8080` added when no port is given.
Result<std::vector<std::string>> ComposeServerArgv(const std::vector<std::string>& argv);

/// POSIX shell quoting of one word (bare when it needs none).
std::string ShellQuoteWord(std::string_view word);

}  // namespace moetune
