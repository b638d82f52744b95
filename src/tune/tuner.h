#pragma once
/// `moetune tune`: the method automated. Predict, measure, refine:
///   1. placement: measure prefill and decode at depth 0 for a few N around the
///      predicted VRAM boundary, then refine (extend toward the GPU while it
///      pays, bisect cliffs, confirm the neighbours of the best) - not a grid;
///   2. long-context validation of the best candidates at C/4 and C, against a
///      placement that should stay healthy, bisecting the boundary at depth;
///   3. threads (topology-derived candidates), micro-batch, flash attention,
///      load mode, a quantized KV cache only when it buys a layer; in every
///      phase the contenders tied with the best get repetitions until the
///      intervals separate;
///   4. a final check at the target context of what the pick holds on the GPU;
///   5. llama.cpp's defaults measured in the same run, for the comparison.
/// tune/grid.h measures everything this could choose, for the scenario tests.
/// Every decision is recorded with its rule and evidence. Measurements go
/// through the journal (resume without re-measuring) and the time budget.

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/engine.h"
#include "plan/placement.h"
#include "tune/analysis.h"
#include "tune/decision.h"
#include "tune/journal.h"
#include "tune/objective.h"
#include "tune/rules.h"

namespace moetune {

struct ThreadCandidate {
  int threads = 0;
  std::string why;  // "physical cores", "performance cores only", "all logical CPUs", ...
};

/// What tune may vary and what it knows before measuring (from the plan, the
/// machine profile and the engine).
struct TuneSpace {
  std::string model;
  int n_layer = 0;
  bool moe = true;
  /// False when the engine has no GPU device: placement does not change speed.
  bool placement_matters = true;
  /// The N used when placement does not matter (the plan's pick for the target GPU).
  int fixed_n = 0;
  /// The smallest N the memory plan says fits at the target context.
  int predicted_boundary = 0;
  /// Whether (N, micro-batch, KV type) fits the GPU at the target context, and
  /// its headroom in bytes; empty functions mean "unknown" (treated as fits).
  std::function<bool(int n, int ubatch, uint32_t kv_type)> fits;
  std::function<int64_t(int n)> headroom;
  /// The memory map of a whole configuration at the target context on the
  /// target GPU (plan/placement.h PlanServerConfig); empty or nullopt when unknown.
  std::function<std::optional<PlacementOption>(const ServerConfig&)> memory_of;
  /// GPU bytes (N, micro-batch, KV type) allocates at the target context (the
  /// plan's device model, no margin); empty = unknown.
  std::function<int64_t(int n, int ubatch, uint32_t kv_type)> gpu_bytes;
  std::vector<ThreadCandidate> threads;  // first = the starting value
  std::vector<int> ubatches = {512, 1024, 2048};
  bool try_flash_attn = true;
  bool try_load_mode = true;
  bool try_kv_quant = true;
  /// llama.cpp's own choice for this machine and context (fit placement,
  /// default threads and batch sizes), measured for the comparison.
  std::optional<ServerConfig> defaults;
  std::string defaults_how;  // how the defaults were obtained
  /// -ngl and anything else held fixed, and the starting micro-batch, batch,
  /// flash attention and KV type.
  ServerConfig base;
};

struct TuneOptions {
  int64_t ctx = 4096;
  Workload workload{"chat", 1024, 384};
  double budget_seconds = 1200;
  /// The smallest prefill test; tune raises it to MicroBatchPrompt() so that
  /// the micro-batch candidates can make a difference.
  int n_prompt = 512;
  int n_gen = 64;
  int repetitions = 3;
  int max_repetitions = 9;
  int depth_repetitions = 2;
  /// Take an edge measured healthy at the target context instead of stepping
  /// back from it (AnalysisOptions::take_proven_edge, `--proven-edge`).
  bool take_proven_edge = false;
  /// The constants of the search and the rules of its readings.
  TuneRules rules;
};

/// Everything tune chooses besides the measurement itself: N and the settings.
struct TuneSettings {
  int n = 0;  // --n-cpu-moe
  int threads = 1;
  int ubatch = 512;
  int batch = 2048;
  FlashAttn flash_attn = FlashAttn::kDefault;
  uint32_t kv_type = ggml_type::kF16;  // -ctk and -ctv
  LoadMode load_mode = LoadMode::kDefault;

  bool operator==(const TuneSettings&) const = default;
};

/// The server configuration of `settings`: the space's base with the settings
/// applied (N, threads, micro-batch and batch, flash attention, KV type, load mode).
ServerConfig SettingsConfig(const TuneSpace& space, const TuneSettings& settings);

/// The settings of a configuration (the inverse of SettingsConfig on what
/// tune varies).
TuneSettings SettingsOf(const ServerConfig& config);

/// The measurement of `settings` tune makes: prefill (`options.n_prompt`
/// tokens) or decode (`options.n_gen`) at `depth`, `options.repetitions` times.
RunConfig TuneRunConfig(const TuneSpace& space, const TuneOptions& options,
                        const TuneSettings& settings, bool prefill, int depth);

/// The depths of the long-context validation: C/4 and C - the prompt (each > 0).
std::vector<int> LongContextDepths(const TuneOptions& options);

/// The micro-batch sizes tune compares: the space's, without those above the
/// workload's prompt (they cannot help), ascending.
std::vector<int> MicroBatchCandidates(const TuneSpace& space, const TuneOptions& options);

/// The prefill size of the micro-batch comparison: large enough for the
/// largest candidate, at most the workload's prompt, at least `n_prompt`.
int MicroBatchPrompt(const TuneSpace& space, const TuneOptions& options);

/// Where a tune stands, for a progress line with an ETA.
struct TuneProgress {
  TunePhase phase = TunePhase::kPlacement;
  std::size_t measured = 0;  // configurations measured so far (this run)
  std::size_t resumed = 0;   // taken from the journal
  double elapsed_seconds = 0;
  double budget_seconds = 0;
  std::string current;
};

struct DefaultsComparison {
  ServerConfig defaults;
  std::string how;
  std::optional<double> tuned_seconds_depth0, default_seconds_depth0;
  std::optional<double> tuned_seconds_ctx, default_seconds_ctx;  // at the target context
  std::string note;
};

struct TuneResult {
  /// The pick: the whole server configuration of the printed command (the
  /// target context, one slot, -fit off, and every setting tune chose).
  ServerConfig best;
  /// The pick's own memory map and headroom at the target context (its
  /// micro-batch, KV type, flash attention); nullopt when no GPU budget is known.
  std::optional<PlacementOption> memory;
  Analysis analysis;  // the final reading of all placement measurements
  std::vector<Decision> decisions;
  /// Threads and micro-batch compared on every measurement at depth 0
  /// (CompareTuneDimensions), for the report's figures.
  std::vector<DimensionComparison> comparisons;
  std::vector<RunResult> measurements;  // everything used (resumed ones included)
  std::optional<DefaultsComparison> versus_defaults;
  std::size_t measured = 0, resumed = 0;
  double seconds = 0;
  bool budget_exhausted = false;
  bool placement_tuned = true;
  std::vector<std::string> notes;
};

class Tuner {
 public:
  using ProgressFn = std::function<void(const TuneProgress&)>;
  Tuner(Engine& engine, TuneSpace space, TuneOptions options, Journal* journal = nullptr,
        ProgressFn progress = {});

  TuneResult Run();

  /// Configurations measured so far in this run (not resumed ones).
  std::size_t measured() const { return measured_; }

 private:
  using Settings = TuneSettings;

  /// Pooled measurements of one settings at one depth, and its objective.
  struct Scored {
    std::optional<Summary> pp, tg;
    std::optional<Estimate> objective;
  };

  RunConfig Make(const Settings& s, bool prefill, int depth) const;
  Scored Score(const Settings& s, int depth) const;
  /// Prefill of `s` at depth 0 and at `depth`, best repetitions (the collapse
  /// rule's reading); nullopt when either was not measured.
  std::optional<DepthSpeeds> PrefillAtDepth(const Settings& s, int depth) const;
  /// Measures `candidates` (ordered by preference: ties go to the earliest) at
  /// depth 0, with more repetitions for the contenders tied with the best until
  /// the intervals separate, and reads them by the tie rule (Choose).
  Choice MeasureAndChoose(const std::vector<Settings>& candidates, const std::string& label,
                          std::vector<Scored>* scored);
  /// Measures prefill and decode for each settings at `depth` (journal first).
  std::vector<RunResult> Measure(const std::vector<Settings>& settings, int depth, int reps,
                                 const std::string& label);
  /// Measures configurations, taking what the journal already has.
  std::vector<RunResult> MeasureConfigs(const std::vector<RunConfig>& configs,
                                        const std::string& label);
  bool OutOfTime() const;
  double Elapsed() const;
  Analysis AnalyzeNow(const Settings& fixed, bool with_ctx) const;
  std::vector<RunResult> PlacementResults(const Settings& fixed) const;
  bool Fits(int n, int ubatch, uint32_t kv) const;

  void SearchPlacement();
  void ValidateLongContext();
  void TuneThreads();
  void TuneMicroBatch();
  void TuneFlashAttention();
  void TuneLoadMode();
  void TryKvQuant();
  /// The pick at the target context when a later phase changed what it holds
  /// on the GPU (micro-batch, flash attention, KV type, N): a change that fails
  /// or collapses there is undone.
  void FinalCheck();
  void CompareWithDefaults();

  Engine& engine_;
  TuneSpace space_;
  TuneOptions opt_;
  Journal* journal_;
  ProgressFn progress_;
  std::chrono::steady_clock::time_point start_;
  std::vector<RunResult> all_;
  std::map<std::string, int> occurrences_;
  std::size_t measured_ = 0, resumed_ = 0;
  bool out_of_time_ = false;
  TunePhase phase_ = TunePhase::kPlacement;
  Settings cur_;
  std::optional<Settings> validated_;  // the settings the long-context phase validated
  TuneResult result_;
};

}  // namespace moetune
