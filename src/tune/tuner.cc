#include "tune/tuner.h"

#include <fmt/format.h>

#include <utility>

#include "tune/compute_phases.h"
#include "tune/placement_phases.h"
#include "tune/switch_phases.h"

namespace moetune {
namespace {

// Where the phases start: the first thread candidate, and the space's base
// micro-batch, batch, flash attention and KV type.
TuneSettings StartingSettings(const TuneSpace& space) {
  TuneSettings s;
  s.threads = space.threads.empty() ? 1 : space.threads.front().threads;
  s.ubatch = space.base.n_ubatch;
  s.batch = space.base.n_batch;
  s.flash_attn = space.base.flash_attn;
  s.kv_type = space.base.type_k;
  return s;
}

// The pick as the command runs it: the tuned settings at the target context,
// one slot, the placement as measured (-fit off).
ServerConfig PickConfig(const TuneSpace& space, const TuneOptions& options,
                        const TuneSettings& settings) {
  ServerConfig best = SettingsConfig(space, settings);
  best.ctx_size = options.ctx;
  best.n_parallel = 1;
  best.fit = Switch::kOff;
  if (!space.moe) best.placement.n_cpu_moe = -1;  // dense: no --n-cpu-moe, as plan
  if (!space.placement_matters) {
    // No GPU: every layer on the host, written as plan writes it (-ngl 0;
    // --n-cpu-moe only moves the experts of GPU layers).
    best.placement.n_gpu_layers = 0;
    best.placement.n_cpu_moe = -1;
  }
  return best;
}

// llama.cpp's defaults as the pick: as they were measured, at the target
// context, one slot, -fit off (their placement is written out as fit made it).
ServerConfig DefaultsPick(const TuneSpace& space, const TuneOptions& options, ServerConfig defaults,
                          const ServerConfig& tuned) {
  // Where the placement changes nothing (an engine without a GPU device runs
  // every layer on the host whatever -ngl says), the defaults are written
  // with the host placement every command for this engine has (-ngl 0).
  if (!space.placement_matters) defaults.placement = tuned.placement;
  defaults.ctx_size = options.ctx;
  defaults.n_parallel = 1;
  defaults.fit = Switch::kOff;
  return defaults;
}

// Whether the pick ran at the target context: the tuned settings' own runs
// there, or the defaults' when they are the pick.
PickSafety SafetyOf(const TuneLedger& ledger, const TuneResult& r, const TuneSettings& cur) {
  const int deep = DeepestDepth(ledger.options());
  std::optional<int> proven;
  std::optional<double> kept;
  if (deep > 0 && r.defaults_chosen) {
    if (r.versus_defaults->compared_depth == deep && r.versus_defaults->default_objective)
      proven = deep;
  } else if (deep > 0) {
    const TuneLedger::Scored s = ledger.Score(cur, deep);
    if (s.pp && s.tg) proven = deep;
    if (const auto d = ledger.PrefillAtDepth(cur, deep); d && d->valid()) kept = d->ratio();
  }
  return AssessPickSafety(r.memory ? std::optional<int64_t>(r.memory->headroom) : std::nullopt,
                          ledger.space().margin, proven, kept);
}

}  // namespace

Tuner::Tuner(Engine& engine, TuneSpace space, TuneOptions options, Journal* journal,
             ProgressFn progress)
    : ledger_(engine, std::move(space), std::move(options), journal, std::move(progress)) {}

TuneResult Tuner::Run() {
  ledger_.StartClock();
  const TuneSpace& space = ledger_.space();
  const TuneOptions& opt = ledger_.options();
  TuneResult result;
  TuneSettings cur = StartingSettings(space);
  auto take = [&](PhaseOutcome outcome) {
    cur = outcome.settings;
    if (outcome.decision) result.decisions.push_back(std::move(*outcome.decision));
  };
  PlacementOutcome placement = RunPlacementPhase(ledger_, cur);
  result.placement_tuned = placement.tuned;
  take(std::move(placement));
  std::optional<TuneSettings> validated;
  if (!ledger_.out_of_time()) {
    LongContextOutcome long_context = RunLongContextPhase(ledger_, cur, result.placement_tuned);
    if (long_context.analysis) result.analysis = std::move(*long_context.analysis);
    validated = long_context.validated;
    take(std::move(long_context));
  }
  for (auto* phase : {&RunExpertOrderPhase, &RunDeviceOrderPhase, &RunThreadsPhase,
                      &RunMicroBatchPhase, &RunFlashAttentionPhase, &RunLoadModePhase}) {
    if (!ledger_.out_of_time()) take(phase(ledger_, cur));
  }
  if (!ledger_.out_of_time()) take(RunKvCachePhase(ledger_, cur, result.placement_tuned));
  if (!ledger_.out_of_time()) take(RunFinalCheckPhase(ledger_, cur, validated));
  if (!ledger_.out_of_time()) {
    BaselineComparisons baselines = RunDefaultsPhase(ledger_, cur);
    result.versus_defaults = std::move(baselines.defaults);
    result.versus_ollama = std::move(baselines.ollama);
    if (result.versus_defaults) {
      if (auto d = DefaultsWinDecision(*result.versus_defaults, opt.workload)) {
        result.decisions.push_back(std::move(*d));
        result.defaults_chosen = true;
      }
    }
  }
  if (result.analysis.curves.empty()) result.analysis = ledger_.AnalyzeNow(cur, true);
  const ServerConfig tuned = PickConfig(space, opt, cur);
  result.best = result.defaults_chosen
                    ? DefaultsPick(space, opt, result.versus_defaults->defaults, tuned)
                    : tuned;
  if (space.memory_of) result.memory = space.memory_of(result.best);
  result.safety = SafetyOf(ledger_, result, cur);
  result.measurements = ledger_.results();
  result.comparisons =
      CompareTuneDimensions(ledger_.results(), opt.workload, cur.n, opt.rules.analysis.curve);
  result.measured = ledger_.measured();
  result.resumed = ledger_.resumed();
  result.seconds = ledger_.Elapsed();
  result.budget_exhausted = ledger_.out_of_time();
  result.notes = ledger_.notes();
  if (ledger_.out_of_time()) {
    result.notes.push_back(fmt::format(
        "the time budget ({:.0f} s) ran out in the {} phase: this is the best configuration so "
        "far; run the same command again with a larger --budget to continue from the journal",
        opt.budget_seconds, TunePhaseName(ledger_.phase())));
  }
  return result;
}

}  // namespace moetune
