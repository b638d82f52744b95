#pragma once
/// A tune's decisions as typed values: the phase that made each one (a stable
/// name in files, never prose to match), the choice, the rule, and the typed
/// verdicts behind it that report/verdict_text.h renders into the evidence a
/// person reads.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/recommend.h"
#include "tune/rejections.h"

namespace moetune {

/// The phases of a tune, in the order they run.
enum class TunePhase {
  kPlacement,
  kLongContext,
  kExpertOrder,
  kDeviceOrder,
  kThreads,
  kMicroBatch,
  kFlashAttention,
  kLoadMode,
  kKvCacheType,
  kFinalCheck,
  kDefaults,
};
/// "placement", "long context", "expert order", "device order", "threads", "micro-batch", "flash
/// attention", "load mode", "KV cache type", "final check", "defaults" (stable names, used in JSON
/// and on the progress line).
const char* TunePhaseName(TunePhase phase);
std::optional<TunePhase> TunePhaseFromName(std::string_view name);

/// Why a comparison could not decide: after the repetitions the tie rule
/// still called a contender undecided against the best (Standing::kUndecided),
/// so the phase kept its starting value. The figures are those of the
/// contender whose repetitions spread most.
struct Undecided {
  std::string candidate;     // "-t 2", "-ub 1024", "flash attention off"
  std::string measure;       // "prefill" or "decode"
  double low = 0, high = 0;  // its slowest and fastest repetition, tokens/s
  int repetitions = 0;
  std::string kept;  // the starting value kept: "-t 8"
};

/// One decision, with the rule that made it and the measurements behind it.
/// The evidence a person reads is rendered in report/ (DecisionEvidence): the
/// depth checks, the rejections, the tuner's own figures, then the reason of
/// the placement reading.
struct Decision {
  TunePhase phase = TunePhase::kPlacement;
  std::string choice;  // "--n-cpu-moe 21", "-t 6", ...
  std::string rule;
  std::string evidence;                   // the tuner's figures (may be empty)
  std::vector<DepthCheck> depth_checks;   // long context: prefill at depth against depth 0
  std::vector<Rejection> rejections;      // placements out for what happens at depth
  std::optional<Recommendation> reading;  // the placement reading the decision follows
  /// Set when the phase could not decide and kept its starting value; the
  /// rule a person reads is rendered from it (report/verdict_text.h).
  std::optional<Undecided> undecided;
};

}  // namespace moetune
