#pragma once
/// `moetune tune`: the method automated. Predict, measure, refine, in phases
/// over one ledger (tune/ledger.h: journal, budget, repetitions, pooling, the
/// tie rule), each a function from settings to settings plus a decision:
///   1. placement: measure prefill and decode at depth 0 for a few N around the
///      predicted VRAM boundary, then refine (extend toward the GPU while it
///      pays, bisect cliffs, confirm the neighbours of the best) - not a grid;
///   2. long-context validation of the best candidates at C/4 and C, against a
///      placement that should stay healthy, bisecting the boundary at depth
///      (both tune/placement_phases.h);
///   3. threads (topology-derived candidates), micro-batch (tune/compute_phases.h),
///      flash attention, load mode, a quantized KV cache only when it buys a
///      layer (tune/switch_phases.h); in every phase the contenders tied with
///      the best get repetitions until the intervals separate;
///   4. a final check at the target context of what the pick holds on the GPU;
///   5. llama.cpp's defaults measured in the same run, for the comparison;
///      when they are faster beyond the noise they are the pick (never behind
///      the defaults; both tune/check_phases.h).
/// The constants of the search are TuneRules (tune/rules.h). tune/grid_test_util.h
/// measures everything this could choose, for the scenario tests. Every
/// decision is recorded with its rule and evidence. Measurements go through
/// the journal (resume without re-measuring) and the time budget.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/engine.h"
#include "plan/placement.h"
#include "tune/analysis.h"
#include "tune/check_phases.h"
#include "tune/decision.h"
#include "tune/journal.h"
#include "tune/ledger.h"
#include "tune/pick_safety.h"
#include "tune/settings.h"

namespace moetune {

/// What a tune found: the pick, the decisions that made it and the
/// measurements behind them.
struct TuneResult {
  /// The pick: the whole server configuration of the printed command (the
  /// target context, one slot, -fit off, and every setting tune chose).
  ServerConfig best;
  /// The pick's own memory map and headroom at the target context (its
  /// micro-batch, KV type, flash attention); nullopt when no GPU budget is known.
  std::optional<PlacementOption> memory;
  /// The pick's headroom against the plan's margin, and whether a measurement
  /// at the target context proved it safe (tune/pick_safety.h).
  PickSafety safety;
  Analysis analysis;  // the final reading of all placement measurements
  std::vector<Decision> decisions;
  /// Threads and micro-batch compared on every measurement at depth 0
  /// (CompareTuneDimensions), for the report's figures.
  std::vector<DimensionComparison> comparisons;
  std::vector<RunResult> measurements;  // everything used (resumed ones included)
  std::optional<DefaultsComparison> versus_defaults;
  /// llama.cpp's defaults beat the tuned settings beyond the noise on the
  /// workload, so `best` is the defaults as measured (DefaultsWinDecision).
  bool defaults_chosen = false;
  /// Ollama's whole-layer split for the same GPU, measured alike (people
  /// arrive from Ollama); nullopt without a GPU plan or a dense model.
  std::optional<DefaultsComparison> versus_ollama;
  std::size_t measured = 0, resumed = 0;
  double seconds = 0;
  bool budget_exhausted = false;
  bool placement_tuned = true;
  std::vector<std::string> notes;
};

/// Runs the phases in order over one ledger, until the budget runs out.
class Tuner {
 public:
  using ProgressFn = TuneLedger::ProgressFn;
  Tuner(Engine& engine, TuneSpace space, TuneOptions options, Journal* journal = nullptr,
        ProgressFn progress = {});

  /// Runs the tune (once).
  TuneResult Run();

  /// Configurations measured so far in this run (not resumed ones).
  std::size_t measured() const { return ledger_.measured(); }

 private:
  TuneLedger ledger_;
};

}  // namespace moetune
