#pragma once
/// What `moetune tune` varies and under which options: the search space known
/// before measuring (TuneSpace), the options of a run (TuneOptions), the
/// settings a phase moves (TuneSettings) and how they become a server
/// configuration and a measurement. Shared by the ledger (tune/ledger.h), the
/// phases and the exhaustive grid (tune/grid_test_util.h).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/engine.h"
#include "plan/placement.h"
#include "tune/decision.h"
#include "tune/objective.h"
#include "tune/rules.h"

namespace moetune {

/// A thread count worth measuring, and why.
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
  /// The plan's margin on the GPU (what the headroom leaves out); 0 without a plan.
  int64_t margin = 0;
  /// The memory map of a whole configuration at the target context on the
  /// target GPU (plan/placement.h PlanServerConfig); empty or nullopt when unknown.
  std::function<std::optional<PlacementOption>(const ServerConfig&)> memory_of;
  /// GPU bytes (N, micro-batch, KV type) allocates at the target context (the
  /// plan's device model, no margin); empty = unknown.
  std::function<int64_t(int n, int ubatch, uint32_t kv_type)> gpu_bytes;
  /// The tightest device's room at the target context without the margin
  /// (budget - use; negative: it overflows); nullopt or empty = unknown.
  std::function<std::optional<int64_t>(int n, int ubatch, uint32_t kv_type)> room;
  /// The speed model's tokens/s for a measurement (its prefill or decode
  /// test), for the expected time of the first runs before any was measured
  /// (TuneLedger::ExpectedSeconds); empty, or nullopt, when unknown.
  std::function<std::optional<double>(const RunConfig&)> predicted_tps;
  std::vector<ThreadCandidate> threads;  // first = the starting value
  std::vector<int> ubatches = {512, 1024, 2048};
  bool try_flash_attn = true;
  bool try_load_mode = true;
  bool try_kv_quant = true;
  /// llama.cpp's own choice for this machine and context (fit placement,
  /// default threads and batch sizes), measured for the comparison.
  std::optional<ServerConfig> defaults;
  std::string defaults_how;  // how the defaults were obtained
  /// Ollama's whole-layer split for the same GPU and context
  /// (tune/ollama_split.h), measured for the comparison; nullopt without a GPU
  /// plan or for a dense model.
  std::optional<ServerConfig> ollama;
  std::string ollama_how;
  /// -ngl and anything else held fixed, and the starting micro-batch, batch,
  /// flash attention and KV type.
  ServerConfig base;
  /// Several devices: the devices, and for each N the split of the layers
  /// over them (plan/device_split.h SplitsByCpuLayers) with N layers' routed
  /// experts in host memory shared out per device; N then plays the part
  /// --n-cpu-moe plays on one GPU. Empty with one device.
  std::vector<DeviceBudget> devices;
  std::vector<std::vector<int>> device_splits;
  /// The other orders of the same devices (-dev) tune may try, each with its
  /// own splits by N (the last device holds the output head: the order decides
  /// where the logits are computed and which boundaries cross a link).
  /// TuneSettings::device_order k > 0 is other_orders[k - 1]; `devices` is
  /// order 0 (llama.cpp's own, RPC devices first). Empty with one device or
  /// more than three (plan/device_split.h OtherDeviceOrders).
  struct DeviceOrder {
    std::vector<DeviceBudget> devices;
    std::vector<std::vector<int>> splits;
  };
  std::vector<DeviceOrder> other_orders;
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
  /// Which layers' experts the N are: the first (--n-cpu-moe) or the last
  /// (llama.cpp's fit order, an -ot rule). One device only: across devices
  /// each device keeps its own first layers' (CpuExpertsFrom::kPerDevice).
  CpuExpertsFrom cpu_experts = CpuExpertsFrom::kFirst;
  int threads = 1;
  int ubatch = 512;
  int batch = 2048;
  FlashAttn flash_attn = FlashAttn::kDefault;
  uint32_t kv_type = ggml_type::kF16;  // -ctk and -ctv
  LoadMode load_mode = LoadMode::kDefault;
  /// Across devices: 0 for the space's device order, k for other_orders[k - 1].
  int device_order = 0;

  bool operator==(const TuneSettings&) const = default;
};

/// The server configuration of `settings`: the space's base with the settings
/// applied (N, threads, micro-batch and batch, flash attention, KV type, load mode).
ServerConfig SettingsConfig(const TuneSpace& space, const TuneSettings& settings);

/// The settings of a configuration (the inverse of SettingsConfig on what
/// tune varies; the device order is the space's own).
TuneSettings SettingsOf(const ServerConfig& config);
/// The same, with the device order read from the configuration's -dev list
/// against the space's orders.
TuneSettings SettingsOf(const TuneSpace& space, const ServerConfig& config);

/// "-dev A,B -ts x,y": the devices of `settings`' order and their layers at
/// its N, as the server is given them; "" with one device.
std::string DeviceOrderText(const TuneSpace& space, const TuneSettings& settings);

/// The devices of `settings`' order, as -dev lists them.
const std::vector<DeviceBudget>& OrderDevices(const TuneSpace& space, const TuneSettings& settings);

/// The measurement of `settings` tune makes: prefill (`options.n_prompt`
/// tokens) or decode (`options.n_gen`) at `depth`, `options.repetitions` times.
RunConfig TuneRunConfig(const TuneSpace& space, const TuneOptions& options,
                        const TuneSettings& settings, bool prefill, int depth);

/// The depths of the long-context validation: C/4 and C - the prompt (each > 0).
std::vector<int> LongContextDepths(const TuneOptions& options);

/// The depth of the last prompt at the target context, C - the prompt (0 when
/// the prompt fills the context): where the KV cache phase and the comparison
/// with the defaults measure what holds at the target context.
int DeepestDepth(const TuneOptions& options);

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

}  // namespace moetune
