#pragma once
/// Ready-to-paste llama-server configuration (`--emit FORMAT`) from the
/// argument vector a plan or a tune produced:
///
/// - `server`:  the command line, one flag per line with `\` continuations;
/// - `env`:     `LLAMA_ARG_*` variables, shell-quoted (`set -a; . ./FILE; set +a`);
/// - `ini`:     a preset section for `llama-server --models-preset FILE` (router mode);
/// - `compose`: a docker compose service for the official server image
///              (ghcr.io/ggml-org/llama.cpp:server, :server-cuda with a GPU),
///              the model's folder mounted read-only at /models;
/// - `llama-swap`: a llama-swap model entry (YAML; `cmd` with `--port ${PORT}`);
/// - `powershell`, `powershell-env`: the command, or `$env:LLAMA_ARG_*`
///              assignments, as a PowerShell script (Windows);
/// - `cmd`, `cmd-env`: the same as a cmd.exe batch file (Windows);
/// - `ollama`:  an Ollama Modelfile with what Ollama can express (FROM and
///              PARAMETER lines), and comments that say what it cannot.
///
/// Every writer escapes through report/emit_text.h, so that no file name or
/// header text starts live content; a value a format cannot carry is an error.
///
/// Each output starts with comments naming who made it and the llama.cpp
/// version it was planned or tuned with. All four describe the same
/// configuration, a ServerConfig (config/server_config.h), whose flags and
/// values come from the one writer (config/server_argv.h ConfigSettings) in
/// the vocabulary's order; environment names and preset keys come from the
/// same vocabulary (config/flags.h). The compose service differs only in the
/// model path (/models/<file>) and an explicit `--port 8080` (the image's
/// health check asks that port).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/server_config.h"
#include "util/result.h"

namespace moetune {

enum class EmitFormat {
  kServer,
  kEnv,
  kIni,
  kCompose,
  kLlamaSwap,
  kPowerShell,
  kPowerShellEnv,
  kCmd,
  kCmdEnv,
  kOllama
};

/// Every format, in the order the help lists them.
const std::vector<EmitFormat>& EmitFormats();

/// "server", "env", "ini", "compose", "llama-swap", "powershell",
/// "powershell-env", "cmd", "cmd-env", "ollama"; errors list every name.
Result<EmitFormat> ParseEmitFormat(std::string_view name);
const char* EmitFormatName(EmitFormat format);

struct EmitContext {
  /// Comment lines at the top: who made this and for which llama.cpp, e.g.
  /// "planned by moetune 0.1.0 for llama.cpp 0.7.0 (build 11669)".
  std::vector<std::string> header;
  /// The preset section name (ini); default: the model file's name without .gguf.
  std::string preset_name;
  /// compose: the CUDA image and a GPU reservation (else the CPU image).
  bool gpu = true;
};

/// The accepted names with what each is, for help texts and errors.
std::string EmitFormatList();

/// `config` in `format`. Errors name the flag and value that the format
/// cannot carry (e.g. a flag without a LLAMA_ARG_* variable, a preset value
/// with ';' or '#', which start comments in llama.cpp's INI reader, a NUL
/// byte, which no command line carries).
Result<std::string> EmitServerConfig(EmitFormat format, const ServerConfig& config,
                                     const EmitContext& context);

/// The compose service's argument vector: ServerArgv with the model at
/// /models/<file name> and `--port 8080` when no port is given. Errors when
/// the configuration has no model.
Result<std::vector<std::string>> ComposeServerArgv(const ServerConfig& config);

/// The LLAMA_ARG_* variables that say `config` (name, value; a switch is
/// "true"), for env, powershell-env and cmd-env. Errors name a flag without a
/// variable of its own (-no-kvu) and the formats that can carry it.
Result<std::vector<std::pair<std::string, std::string>>> LlamaEnvironment(
    const ServerConfig& config);

/// Comment lines for the header of every format that starts the server, when
/// `config` has RPC servers: the `ggml-rpc-server -H HOST -p PORT` to run on
/// each host and the warning that the RPC backend has no authentication or
/// encryption. Empty without RPC servers; errors name a malformed entry.
Result<std::vector<std::string>> RpcHostComments(const ServerConfig& config);

/// POSIX shell quoting of one word (bare when it needs none).
std::string ShellQuoteWord(std::string_view word);

}  // namespace moetune
