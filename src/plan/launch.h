#pragma once
/// How a planned context is laid out, in words. The planned configuration
/// itself is a ServerConfig (config/server_config.h PlannedConfig), and its
/// command line, the one `plan` prints and the llama-fit-params dry run of
/// `plan --check` runs, is written by config/server_argv.h ServerArgv, so the
/// two can never drift apart.

#include <string>

#include "config/server_argv.h"
#include "model/memory_map.h"

namespace moetune {

/// "4 slots x 8192 tokens, one cache per slot (no -kvu)" / "4 slots sharing one
/// 32768-token cache (-kvu)" / "1 slot x 4096 tokens": the context each slot gets.
std::string SlotContextText(const ContextParams& ctx);

}  // namespace moetune
