#pragma once
/// The placement phases of a tune, over its ledger (tune/ledger.h):
///   - placement: prefill and decode at depth 0 for a few N around the
///     predicted VRAM boundary, then refined (toward the GPU while it pays,
///     bisecting cliffs, the neighbours of the best) - not a grid;
///   - long context: the best candidates at C/4 and C, against a placement
///     that should stay healthy, bisecting the boundary at depth.
/// The constants of both are TuneRules (tune/rules.h).

#include <optional>

#include "tune/analysis.h"
#include "tune/ledger.h"
#include "tune/phase.h"

namespace moetune {

struct PlacementOutcome : PhaseOutcome {
  /// False when placement was not searched (a dense model, no GPU).
  bool tuned = true;
};

/// Chooses N (`--n-cpu-moe`) for `cur`'s other settings.
PlacementOutcome RunPlacementPhase(TuneLedger& ledger, TuneSettings cur);

struct LongContextOutcome : PhaseOutcome {
  /// The reading of every placement measured, with the depth checks
  /// (nullopt when the phase did not run).
  std::optional<Analysis> analysis;
  /// The settings validated at the target context (the final check's
  /// reference); nullopt when none was.
  std::optional<TuneSettings> validated;
};

/// Validates `cur`'s N at the target context and moves it to a placement
/// that holds there; nothing when `placement_tuned` is false or the context
/// holds no depth beyond the prompt.
LongContextOutcome RunLongContextPhase(TuneLedger& ledger, TuneSettings cur, bool placement_tuned);

}  // namespace moetune
