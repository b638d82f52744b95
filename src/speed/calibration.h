#pragma once
/// The free constants of the speed model (efficiencies, latencies) with their
/// documented defaults, and the calibration record `moetune calibrate` stores in
/// the machine profile: the constants it pinned on this machine and engine, with
/// the engine version, the date, the model used and the points it fitted.
///
/// Defaults and their sources are in docs/speed-model.md ("Free constants").

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace moetune {

struct CalibrationConstants {
  // CPU (per P-core thread, relative to its f32 FMA peak).
  double cpu_bw_efficiency = 1.02;            // share of the RAM read bandwidth decode reaches
  double cpu_matmul_efficiency = 0.50;        // batched quantized matmuls (prefill)
  double cpu_matvec_efficiency = 0.203;       // matrix-vector products (decode)
  double cpu_attn_prefill_efficiency = 0.20;  // flash attention over the cache, many queries
  double cpu_attn_decode_efficiency = 0.04;   // flash attention over the cache, one query
  double thread_efficiency_prefill = 0.90;    // what each thread beyond the first adds (1 = linear)
  double thread_efficiency_decode = 0.80;
  double smt_gain = 0.15;             // extra throughput of a core's second hardware thread
  double cpu_layer_overhead_us = 12;  // per layer and token: graph nodes, barriers
  double llc_bw_factor = 4;           // last-level cache read rate / RAM read rate (KV reads)
  // GPU.
  double gpu_bw_efficiency = 0.35;       // share of the peak memory bandwidth decode reaches
  double gpu_compute_efficiency = 0.35;  // share of the FP16 tensor peak prefill reaches
  double gpu_layer_overhead_us = 35;     // per layer and token: kernel launches and syncs
  double handover_us = 19.9;             // per GPU<->CPU switch and token: sync + copy
  double link_efficiency = 0.45;         // op-offload weight copies vs a bandwidth test's rate
  double spill_efficiency = 0.4;         // share of the link rate reached on spilled memory
  double spill_latency_us = 160;         // per GPU layer and token touching spilled memory
  double activation_traffic = 14;        // times prefill reads/writes a layer's activations
  // RPC device (ggml-rpc-server over TCP).
  double rpc_link_gbps = 2.0;          // tensor copies over the socket
  double rpc_handover_us = 250;        // per switch: one graph_compute round trip
  double rpc_layer_overhead_us = 400;  // per layer on the RPC device and token: graph sent over
                                       // the socket, server-side graph build

  /// Each constant by name (stable JSON keys), for JSON, fitting and docs.
  std::vector<std::pair<std::string, double*>> Fields();
  std::vector<std::pair<std::string, double>> Values() const;
};

nlohmann::json CalibrationConstantsToJson(const CalibrationConstants& c);
/// Unknown keys are ignored, missing keys keep their defaults; a non-positive
/// or non-numeric value is an error naming the key.
Result<CalibrationConstants> CalibrationConstantsFromJson(const nlohmann::json& j);

/// One measured configuration beside the model's prediction.
struct CalibrationPoint {
  std::string label;  // "pp512 t=1 ub=512 d=0"
  bool prefill = true;
  int threads = 1;
  int n_ubatch = 512;
  int n_depth = 0;
  int n_tokens = 0;  // n_prompt or n_gen
  int n_cpu_moe = 0;
  int n_gpu_layers = 0;
  bool rpc = false;
  double measured_tps = 0;
  double predicted_default_tps = 0;  // with the default constants
  double predicted_tps = 0;          // with the fitted constants
  double spread = 0;      // relative spread of the repetitions of its last round (RepetitionSpread)
  int rounds = 1;         // rounds measured (an unstable test is measured again)
  bool unstable = false;  // its last round spread beyond kUnstableRepetitionSpread
};

/// A calibration's own uncertainty (docs/speed-model.md, "How far a calibration
/// reproduces"): how well its constants predict tests they were not fitted to,
/// how much the repetitions of its tests spread, and how busy the machine was.
struct CalibrationUncertainty {
  int held_out_folds = 0;  // 0: not checked (fewer than 3 tests, or an older record)
  /// Median |predicted/measured - 1| of each test predicted by the constants
  /// fitted to the other folds' tests (prefill and decode tests).
  double held_out_prefill = 0;
  double held_out_decode = 0;
  double spread_median = 0;  // relative spread of a test's repetitions: median over tests
  double spread_max = 0;     // ... and the widest
  /// Other processes' CPU use during the runs, in cores: the busiest run
  /// (nullopt: not measured, e.g. a fit from a file).
  std::optional<double> other_cores_max;
};

/// What `moetune calibrate` stores under "calibration" in the machine profile.
struct CalibrationRecord {
  CalibrationConstants constants;
  std::vector<std::string> fitted;  // names of the constants the runs pinned
  std::string created_at;           // UTC ISO 8601
  std::string engine_version;       // the engine's version line
  int64_t engine_build = -1;
  std::string model_path;
  std::string model_name;
  std::string hostname;
  double median_error_default = 0;  // median |predicted/measured - 1| before fitting
  double median_error = 0;          // after
  CalibrationUncertainty uncertainty;
  std::vector<CalibrationPoint> points;
};

nlohmann::json CalibrationRecordToJson(const CalibrationRecord& r);
Result<CalibrationRecord> CalibrationRecordFromJson(const nlohmann::json& j);

}  // namespace moetune
