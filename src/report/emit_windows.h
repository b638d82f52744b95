#pragma once
/// The Windows forms of `--emit` (report/emit.h): PowerShell scripts
/// (`powershell`: the command; `powershell-env`: $env:LLAMA_ARG_* and a bare
/// llama-server) and cmd.exe batch files (`cmd`, `cmd-env`). Quoting follows
/// report/emit_text.h; what a form cannot carry is an error that says so.

#include <string>
#include <vector>

#include "config/flags.h"
#include "report/emit.h"

namespace moetune {

/// `& 'llama-server' '-m' '...'` with backtick continuations.
Result<std::string> EmitPowerShell(const std::vector<FlagSetting>& settings,
                                   const EmitContext& context);
/// `$env:LLAMA_ARG_... = '...'` lines, then `llama-server`.
Result<std::string> EmitPowerShellEnv(const ServerConfig& config, const EmitContext& context);
/// A batch file: `llama-server -m "..." ^` continuations.
Result<std::string> EmitBatch(const std::vector<FlagSetting>& settings, const EmitContext& context);
/// A batch file: `set "LLAMA_ARG_...=..."` lines, then `llama-server`.
Result<std::string> EmitBatchEnv(const ServerConfig& config, const EmitContext& context);

}  // namespace moetune
