#pragma once
/// `--emit` forms for launchers that start llama.cpp themselves
/// (report/emit.h): a llama-swap model entry and an Ollama Modelfile.

#include <string>

#include "config/server_config.h"
#include "report/emit.h"

namespace moetune {

/// A llama-swap configuration with one model entry (`models: NAME: cmd, proxy`)
/// whose `cmd` is the command with `--port ${PORT}` and whose `proxy` is
/// http://127.0.0.1:${PORT}.
Result<std::string> EmitLlamaSwap(const ServerConfig& config, const EmitContext& context);

/// An Ollama Modelfile: FROM the model file and the PARAMETER lines Ollama
/// has for this configuration; comments name what it cannot express.
Result<std::string> EmitOllama(const ServerConfig& config, const EmitContext& context);

}  // namespace moetune
