#pragma once
/// The closing phases of a tune, over its ledger (tune/ledger.h): the final
/// check at the target context of what the pick holds on the GPU, and
/// llama.cpp's defaults measured in the same run for the comparison.

#include <optional>
#include <string>
#include <string_view>

#include "config/server_config.h"
#include "tune/ledger.h"
#include "tune/phase.h"

namespace moetune {

/// How the pick stands against a baseline on the workload's objective, by
/// the tie rule (tune/rules.h CompareEstimates).
enum class Versus { kFaster, kTied, kSlower, kUnmeasured };
/// "faster", "tie", "slower", "not measured" (stable names, used in JSON).
const char* VersusName(Versus versus);
std::optional<Versus> VersusFromName(std::string_view name);

/// The pick against a baseline measured in the same run (llama.cpp's
/// defaults, or Ollama's whole-layer split), at depth 0 and at the target
/// context; `defaults` is the baseline's configuration.
struct DefaultsComparison {
  ServerConfig defaults;
  std::string how;
  std::optional<double> tuned_seconds_depth0, default_seconds_depth0;
  std::optional<double> tuned_seconds_ctx, default_seconds_ctx;  // at the target context
  /// The pick against the baseline on the workload's requests/s at
  /// `compared_depth` (the target context when both ran there, else an empty
  /// context), every repetition pooled: a baseline that looked faster is
  /// measured again before it is believed.
  Versus pick = Versus::kUnmeasured;
  int compared_depth = 0;
  std::optional<Estimate> tuned_objective, default_objective;  // requests/s there
  std::string note;
};

/// The pick `cur` at the target context when a later phase changed what it
/// holds on the GPU (micro-batch, flash attention, KV type, N) since
/// `validated`: a change that fails or collapses there is undone (the
/// collapse rule, tune/rules.h, with `validated` as the reference). Nothing
/// when no settings were validated or the context holds no depth.
PhaseOutcome RunFinalCheckPhase(TuneLedger& ledger, TuneSettings cur,
                                const std::optional<TuneSettings>& validated);

/// The pick against each baseline of the space.
struct BaselineComparisons {
  std::optional<DefaultsComparison> defaults;  // llama.cpp's own choice (its fit)
  std::optional<DefaultsComparison> ollama;    // Ollama's whole-layer split (tune/ollama_split.h)
};

/// Measures the pick `cur` and each baseline of the space (llama.cpp's
/// defaults, Ollama's split) alike, at depth 0 and at the target context; a
/// baseline the space does not have is nullopt. A baseline that is faster
/// than the pick beyond the noise is measured again (both, the same
/// repetitions) before the comparison says so.
BaselineComparisons RunDefaultsPhase(TuneLedger& ledger, const TuneSettings& cur);

/// The decision when llama.cpp's defaults beat the pick beyond the noise on
/// the workload at the compared depth (the pick becomes the defaults: tune is
/// never behind them); nullopt otherwise.
std::optional<Decision> DefaultsWinDecision(const DefaultsComparison& defaults,
                                            const Workload& workload);

}  // namespace moetune
