#pragma once
/// A planned configuration and its memory-shaping flags: the one source the
/// llama-server command that `plan` prints and the llama-fit-params dry run of
/// `plan --check` are both built from, so the two can never drift apart.
///
/// Memory-shaping flags (common/arg.cpp): -ngl, --n-cpu-moe, -ot, -c, -np,
/// -kvu, -ub, -b, -fa, -ctk, -ctv. -np is always explicit: llama-server's
/// default is 4 slots with a unified cache (-np -1), llama-fit-params' is 1.

#include <string>
#include <vector>

#include "model/memory_map.h"
#include "model/weight_placement.h"

namespace moetune {

struct LaunchConfig {
  WeightPlacement placement;  // -ngl, --n-cpu-moe, the fine fill's -ot
  ContextParams ctx;          // -c, -np, -kvu, -ub, -b, -fa, -ctk, -ctv
  bool moe = false;           // MoE models always pass --n-cpu-moe (0 included)
};

/// `-ot` value that keeps the listed expert tensors of `layer` on the CPU:
/// `blk\.L\.(ffn_up_exps|ffn_gate_exps)=CPU` (a regex, substring match).
std::string OverrideValue(int layer, const std::vector<std::string>& kinds);

/// The memory-shaping flags of `config`, in llama.cpp's syntax. -kvu only
/// when it changes anything (more than one sequence).
std::vector<std::string> MemoryShapingFlags(const LaunchConfig& config);

/// The llama-server command for `config`: `llama-server -m MODEL <flags> -fit off`
/// (automatic fitting off: the plan was sized for exactly this).
std::vector<std::string> ServerArgs(const std::string& model_path, const LaunchConfig& config);

/// POSIX-shell quoting of an argument vector for display.
std::string ShellJoin(const std::vector<std::string>& args);

/// "4 slots x 8192 tokens, one cache per slot (no -kvu)" / "4 slots sharing one
/// 32768-token cache (-kvu)" / "1 slot x 4096 tokens": the context each slot gets.
std::string SlotContextText(const ContextParams& ctx);

}  // namespace moetune
