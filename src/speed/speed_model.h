#pragma once
/// The speed model: predicted prefill and decode tokens/s for a placement, run
/// settings and a machine, with the time split by resource and the resource that
/// binds. Pure functions of the memory map, the placement and the machine spec;
/// every assumption and constant is documented in docs/speed-model.md.
///
///   decode, per token:  GPU-resident bytes / VRAM bandwidth
///                     + CPU-resident bytes actually read (k/n of each routed expert
///                       tensor, shared experts, dense parts) / RAM bandwidth (or the
///                       threads' matrix-vector rate, whichever is slower)
///                     + one hand-over per GPU<->CPU switch in the layer sequence
///                     + KV reads that grow with depth (growing layers only; capped for
///                       sliding windows; recurrent state fixed) + the output head
///                     + per-layer launch/barrier overheads + spill traffic
///   prefill, per micro-batch: GPU FLOPs / GPU throughput
///                     + host weights the batch touches (1-(1-k/n)^ub of each expert
///                       tensor) copied to the GPU when ub >= 32 (op offload), pinned or
///                       pageable, or CPU FLOPs / CPU throughput without offload
///                     + attention that grows with depth + spill traffic
///
/// Overflow: with SpillMode::kStrict a placement whose GPU allocations exceed the
/// budget does not load (Prediction::loads = false, the same boundary the memory
/// map gives); with kSilent the excess lives in host memory, filled in allocation
/// order reversed (compute buffers, then KV cache, then weights), and every GPU
/// access to it crosses the link.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "model/model_info.h"
#include "speed/calibration.h"
#include "speed/machine_spec.h"
#include "speed/model_shape.h"
#include "speed/uncertainty.h"
#include "util/result.h"

namespace moetune {

/// What a test asks for (mirrors one llama-bench test / one server request).
struct RunSettings {
  int n_gpu_layers = 99;
  int n_cpu_moe = 0;
  std::string override_tensor;  // -ot "pattern=BUFT[,...]"
  /// -dev and -ts (as layer counts): the devices used, in order, and each
  /// one's layers; empty: every device of the machine, split by free memory.
  std::vector<DevicePlacement> devices;
  int threads = 0;  // 0 = one per performance core
  int n_ubatch = 512;
  int n_batch = 2048;
  uint32_t type_k = 1;  // ggml type ids (f16)
  uint32_t type_v = 1;
  bool flash_attn = true;
  bool pinned = false;     // host weights in pinned memory (no mmap: -lm none/dio, --no-mmap)
  bool op_offload = true;  // false: -nopo
  int n_prompt = 512;      // prefill test size (0 = none)
  int n_gen = 0;           // decode test size (0 = none)
  int n_depth = 0;         // tokens already in the context
  int64_t n_ctx = 0;       // allocated context; 0 = n_prompt + n_gen + n_depth (llama-bench)
  int n_seq = 1;
  bool kv_unified = true;
};

/// Loads a llama.cpp load mode name ("", "auto", "mmap", "none", "dio", ...) into `pinned`.
bool LoadModeIsPinned(const std::string& load_mode);

enum class Resource {
  kVramBandwidth,  // reading weights/KV from GPU memory
  kGpuCompute,
  kRamBandwidth,  // reading weights/KV from host RAM
  kCpuCompute,
  kLink,      // PCIe (or the RPC socket): weight copies, activations at hand-overs
  kHandover,  // synchronisation latency of GPU<->CPU switches
  kOverhead,  // per-layer kernel launches and thread barriers
  kSpill,     // GPU accesses to spilled memory over the link
  kDisk,      // weights that do not fit in RAM, read again from disk
};
inline constexpr int kResourceCount = 9;
/// Stable JSON name: "vram_bandwidth", "gpu_compute", "ram_bandwidth", ...
const char* ResourceName(Resource r);

/// Seconds per token, split by resource.
struct TimeSplit {
  std::array<double, kResourceCount> seconds{};
  double& at(Resource r) { return seconds[static_cast<size_t>(r)]; }
  double at(Resource r) const { return seconds[static_cast<size_t>(r)]; }
  double total() const;
  Resource binding() const;  // the largest share
  TimeSplit& operator+=(const TimeSplit& o);
  TimeSplit Scaled(double k) const;
};

struct PhasePrediction {
  double tokens_per_second = 0;
  TimeSplit per_token;
  Resource binding = Resource::kRamBandwidth;
};

struct SpeedPrediction {
  /// False in strict mode when the GPU allocations exceed the budget.
  bool loads = true;
  std::string failure;      // the allocation that fails, in llama.cpp's words
  PhasePrediction prefill;  // valid when n_prompt > 0
  PhasePrediction decode;   // valid when n_gen > 0
  /// Tokens/s of the test as llama-bench reports it: prefill-only, decode-only, or
  /// (n_prompt + n_gen) / (prefill time + decode time).
  double tokens_per_second = 0;
  int64_t gpu_bytes = 0;    // GPU allocations (weights + KV + state + compute), every device
  int64_t gpu_budget = 0;   // free VRAM - reserve, every device
  int64_t spill_bytes = 0;  // silent mode: bytes living in host memory
  int handovers_per_token = 0;
  bool op_offload_active = false;
  double noise_cv = 0.02;  // relative spread of repeated measurements
  /// How far the machine may measure from these figures (uncalibrated: the
  /// published runs' leave-one-out band; see speed/uncertainty.h).
  PredictionUncertainty uncertainty;
  std::vector<std::string> notes;
};

/// Predicts for one model on one machine. Holds a reference to `model`, which
/// must outlive it.
class FootprintPlans;
struct PlacementMemo;

class SpeedModel {
 public:
  SpeedModel(const ModelInfo& model, MachineSpec machine, CalibrationConstants constants = {});

  Result<SpeedPrediction> Predict(const RunSettings& run) const;

  const ModelInfo& model() const { return model_; }
  const ModelShape& shape() const { return shape_; }
  const MachineSpec& machine() const { return machine_; }
  const CalibrationConstants& constants() const { return constants_; }
  void set_constants(const CalibrationConstants& c) { constants_ = c; }
  /// The band every prediction carries (default: UncalibratedUncertainty()).
  void set_uncertainty(PredictionUncertainty u) { uncertainty_ = std::move(u); }
  const PredictionUncertainty& uncertainty() const { return uncertainty_; }
  /// Shares a plan cache of the same model (e.g. kept across simulated runs).
  void UseFootprintPlans(std::shared_ptr<FootprintPlans> plans) { plans_ = std::move(plans); }

 private:
  const ModelInfo& model_;
  ModelShape shape_;
  MachineSpec machine_;
  CalibrationConstants constants_;
  PredictionUncertainty uncertainty_ = UncalibratedUncertainty();
  /// The memory plans of the contexts asked about so far (shared by copies).
  std::shared_ptr<FootprintPlans> plans_;
  /// Each placement's weights and residency, by placement (shared by copies):
  /// a placement's -ot rules are regular expressions matched against every
  /// tensor, which dominated a simulated grid of thousands of runs.
  std::shared_ptr<PlacementMemo> placements_;
};

}  // namespace moetune
