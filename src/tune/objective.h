#pragma once
/// What "fastest" means for a user: the time to answer one request of their
/// workload, `prompt tokens / prefill speed + answer tokens / decode speed`,
/// measured at the context depth they work at. Named presets cover the two
/// common cases; `P:A` gives the numbers directly.

#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"

namespace moetune {

struct Workload {
  std::string name;  // "chat", "agent", or "P:A"
  int prompt_tokens = 0;
  int answer_tokens = 0;

  /// Seconds to answer one request at these speeds (tokens/s). A missing or
  /// non-positive speed makes that term infinite.
  double SecondsPerRequest(double prefill_tps, double decode_tps) const;
};

/// `chat`: a conversational turn, 1024 new prompt tokens and a 384-token answer
/// (answers dominate: decode matters most). `agent`: coding agents and RAG,
/// 8192 prompt tokens (tool output, files, retrieved text) and a 256-token answer
/// (prefill dominates). `P:A` (e.g. 4000:500): the user's own numbers.
Result<Workload> ParseWorkload(std::string_view text);

}  // namespace moetune
