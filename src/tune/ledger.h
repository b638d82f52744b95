#pragma once
/// The ledger of a tune: what every phase shares. It owns the engine, the
/// journal (resume without re-measuring), the time budget, every measurement
/// of the run, its repetitions and their pooling, and the one helper that
/// measures candidates and chooses among them by the tie rule (Choose,
/// tune/rules.h). The phases (tune/*_phases.h) are functions over it, from
/// settings to settings plus a decision; tune/tuner.h runs them in order.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tune/analysis.h"
#include "tune/decision.h"
#include "tune/journal.h"
#include "tune/rules.h"
#include "tune/settings.h"

namespace moetune {

class TuneLedger {
 public:
  using ProgressFn = std::function<void(const TuneProgress&)>;

  /// Pooled measurements of one settings at one depth, and its objective.
  struct Scored {
    std::optional<Summary> pp, tg;
    std::optional<Estimate> objective;
  };

  /// Every prefill of the run is measured at one size, large enough for the
  /// largest micro-batch candidate (MicroBatchPrompt): `options().n_prompt`
  /// is raised to it, so the comparisons across phases use the same test.
  TuneLedger(Engine& engine, TuneSpace space, TuneOptions options, Journal* journal,
             ProgressFn progress);

  const TuneSpace& space() const { return space_; }
  const TuneOptions& options() const { return opt_; }

  /// Starts the budget's clock.
  void StartClock();
  /// Seconds spent: the wall clock, or the time the engine's runs stand for
  /// (the simulated engine's, and the resumed measurements') when that is longer.
  double Elapsed() const;
  /// The budget ran out while measuring: nothing more is measured.
  bool out_of_time() const { return out_of_time_; }
  /// How the budget ended the tune: the run not started (or ended at the limit).
  const std::optional<BudgetStop>& budget_stop() const { return budget_stop_; }
  /// The seconds one engine call for `configs` is expected to take: the model
  /// load seen so far, plus each test's warm-up, repetitions and depth fill at
  /// the seconds per token of the nearest configuration measured so far (the
  /// speed model's prediction before the first); nullopt when unknown.
  std::optional<double> ExpectedSeconds(const std::vector<RunConfig>& configs) const;
  /// The time limit of a run over `hosts` (--rpc) expected to take `expected`
  /// seconds (TuneRules::slow_host_factor); nullopt without hosts or an
  /// expectation.
  std::optional<double> SlowHostLimit(const std::vector<std::string>& hosts,
                                      const std::optional<double>& expected) const;

  /// The phase measuring now (the progress line and the out-of-time note).
  void set_phase(TunePhase phase) { phase_ = phase; }
  TunePhase phase() const { return phase_; }

  /// Measures prefill and decode for each settings at `depth`, `reps`
  /// repetitions (journal first), one engine call per settings.
  std::vector<RunResult> Measure(const std::vector<TuneSettings>& settings, int depth, int reps,
                                 const std::string& label);
  /// Measures configurations, taking what the journal already has.
  std::vector<RunResult> MeasureConfigs(const std::vector<RunConfig>& configs,
                                        const std::string& label);
  /// Measures `candidates` (ordered by preference: ties go to the earliest) at
  /// depth 0, with more repetitions for the contenders tied with the best or
  /// undecided against it until the intervals separate or narrow, and reads
  /// them by the tie rule (Choose). A choice still undecided after that
  /// (Choice::undecided) decides nothing: the phase keeps its starting value.
  Choice MeasureAndChoose(const std::vector<TuneSettings>& candidates, const std::string& label,
                          std::vector<Scored>* scored);

  /// The pooled repetitions of `settings` at `depth` measured so far.
  Scored Score(const TuneSettings& settings, int depth) const;
  /// Prefill of `settings` at depth 0 and at `depth`, best repetitions (the
  /// collapse rule's reading); nullopt when either was not measured.
  std::optional<DepthSpeeds> PrefillAtDepth(const TuneSettings& settings, int depth) const;
  /// The measurements over N with everything but N as in `fixed`.
  std::vector<RunResult> PlacementResults(const TuneSettings& fixed) const;
  /// The reading of those placements (tune/analysis.h), at the target context
  /// when `with_ctx`.
  Analysis AnalyzeNow(const TuneSettings& fixed, bool with_ctx) const;
  /// Whether the plan says (N, micro-batch, KV type) fits; true when unknown.
  bool Fits(int n, int ubatch, uint32_t kv_type) const;

  /// Everything measured or resumed in this run, in order.
  const std::vector<RunResult>& results() const { return all_; }
  /// Configurations measured in this run (not resumed ones).
  std::size_t measured() const { return measured_; }
  /// Configurations taken from the journal.
  std::size_t resumed() const { return resumed_; }

  /// Notes for the result, in the order they arose (a journal that cannot
  /// be written, what a phase could not do).
  void AddNote(std::string note) { notes_.push_back(std::move(note)); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  RunConfig Make(const TuneSettings& settings, bool prefill, int depth) const;
  std::optional<double> SecondsPerToken(const RunConfig& config) const;
  /// Seconds per token of filling `config`'s depth; `fallback` before any
  /// prefill measurement.
  double FillSecondsPerToken(const RunConfig& config, double fallback) const;
  /// Adds the time an engine call stands for, and the load time it shows.
  void CountEngineTime(const BenchRun& run);
  /// Ends the tune for the budget: the note, the journal's record.
  void StopForBudget(const BudgetStop& stop);
  void Report(const std::string& current) const;
  // A quiet machine (tune/ledger_quiet.cc): results taken while other
  // processes kept the CPU busy are measured again once, and a fixed anchor is
  // re-measured at intervals; when it drifts, the results since the last clean
  // anchor are measured again once it recovers.
  /// After an engine call: `out` (this call's results, journal ones included)
  /// with its busy results replaced by a second measurement.
  void RemeasureBusy(std::vector<RunResult>* out, const std::string& label);
  /// Takes the anchor from the first decode measured; checks it every
  /// TuneRules::anchor_every calls.
  void CheckAnchor(const std::vector<RunResult>& out);
  /// Measures the anchor again: its best decode repetition, nullopt when it did not run.
  std::optional<double> MeasureAnchor();
  /// Measures again every result at positions >= `from` of all_, replacing them.
  void RemeasureSince(std::size_t from);

  Engine& engine_;
  TuneSpace space_;
  TuneOptions opt_;
  Journal* journal_;
  ProgressFn progress_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::vector<RunResult> all_;
  std::map<std::string, int> occurrences_;
  std::size_t measured_ = 0, resumed_ = 0;
  bool out_of_time_ = false;
  std::optional<BudgetStop> budget_stop_;
  double engine_seconds_ = 0;  // the time the engine's runs stand for (Elapsed)
  double load_seconds_ = 0;    // the longest load an engine call showed so far
  TunePhase phase_ = TunePhase::kPlacement;
  std::vector<std::string> notes_;
  bool nested_ = false;               // inside a quiet-machine re-measurement
  std::size_t busy_remeasured_ = 0;   // results measured again because the machine was busy
  std::optional<RunConfig> anchor_;   // the drift check's configuration
  std::optional<double> anchor_ref_;  // its best decode at the start (or since the last reset)
  std::size_t calls_since_anchor_ = 0;
  std::size_t clean_since_ = 0;  // all_ from here on was measured after the last clean anchor
};

/// The choice of a comparison; the first candidate when none was measured.
std::size_t Chosen(const Choice& choice);

/// The failure of a run over `hosts` ended at `limit` seconds where the runs
/// so far said `expected`: kRpcHost naming the host (one host) or the hosts,
/// with what to check. Data for the tune, measured again on resume.
EngineFailure SlowHostFailure(const std::vector<std::string>& hosts, double limit, double expected);

}  // namespace moetune
