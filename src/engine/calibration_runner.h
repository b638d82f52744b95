#pragma once
/// The short real runs `moetune calibrate` makes to pin the speed model's free
/// constants on this machine and engine, and the fit of their results.
///
/// Default plan (one model load, two to three minutes on two cores for a small MoE):
/// prefill pp256 and decode tg16 at ub 256, depth 0 and 2048, every layer on the
/// CPU (-ngl 0), with one thread and with one thread per performance core; decode
/// once more at a depth whose KV cache is well beyond the last-level cache
/// (DeepDecodeDepth), so that the attention constants are pinned where real
/// models run (their KV cache is GBs) and not only inside the cache; on a
/// machine with an accelerator (a GPU, or the RPC device) also -ngl 99 with all
/// experts on the CPU and with the fewest expert layers on the CPU that load. The sizes
/// deliberately differ from the validation grid (pp512/tg32, ub 128/512, depth 0/4096) so that
/// validation measures other configurations than the ones fitted.

#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/perf_bridge.h"
#include "speed/calibration_fit.h"
#include "speed/speed_model.h"

namespace moetune {

struct CalibrationRunOptions {
  bool quick = false;  // one thread count, fewer repetitions (about half the time)
  int repetitions = 3;
  int depth = 2048;
  int deep_depth = 0;  // decode depth beyond the LLC; 0 = DeepDecodeDepth, -1 = none
  int n_ubatch = 256;
  int n_prompt = 256;
  int n_gen = 16;
};

/// The KV cells (f16 cache, growing layers) at which the model's KV cache is
/// 1.5 times the machine's last-level cache, rounded up to 1024; 0 when the LLC
/// is unknown, the model has no growing layer, or that depth is beyond 32768.
int DeepDecodeDepth(const ModelShape& shape, const MachineSpec& machine);

/// The configurations to run for `model_path` (whose speed model is `model`).
std::vector<RunConfig> CalibrationConfigs(const std::string& model_path, const SpeedModel& model,
                                          const CalibrationRunOptions& options);

/// Runs the configurations through `engine`, measures the unstable ones again
/// (RemeasureUnstable), fits, checks the fit (SelfCheck) and returns the record
/// (its engine/model/date fields are left for the caller); the record's
/// uncertainty carries the busiest other-process load of the runs.
/// Configurations that fail are reported in `failures` and left out of the fit.
Result<CalibrationRecord> RunCalibration(Engine& engine, const std::vector<RunConfig>& configs,
                                         const SpeedModel& model,
                                         std::vector<std::string>* failures,
                                         const ProgressCallback& progress = {},
                                         MeasurementStat stat = MeasurementStat::kBest);

/// Measures again, kUnstableExtraRounds times at most, the tests of `ms` whose
/// last round is unstable (IsUnstable), with their configuration from
/// `configs`: a new round's samples join the test's (the figure is taken again
/// over all of them) and its spread becomes the test's. Returns the runs made
/// (empty when every test was stable); a failed round keeps what was measured.
std::vector<BenchRun> RemeasureUnstable(Engine& engine, const std::vector<RunConfig>& configs,
                                        std::vector<Measurement>* ms,
                                        const ProgressCallback& progress = {},
                                        MeasurementStat stat = MeasurementStat::kBest);

/// Fits a record from measurements made elsewhere, starting from the model's
/// constants (a previous calibration, or the defaults), with its SelfCheck.
CalibrationRecord CalibrateFromMeasurements(const SpeedModel& model,
                                            const std::vector<Measurement>& ms);

}  // namespace moetune
