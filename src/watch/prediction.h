#pragma once
/// A predicted baseline (watch/baseline.h) for a server, from one of two
/// sources:
///
/// - the speed model (src/perf) for the server's own command on this machine,
///   when its machine profile is known: the model file's shapes, the placement
///   and run settings read from the command line, the machine and the
///   calibrated constants of the profile;
/// - the predicted speeds that `moetune plan --predict --json` wrote for each
///   --n-cpu-moe (`options[].predicted` at depth 0 and `.at_target` at
///   `prediction.target_depth`).
///
/// Only calibrated constants are trusted (the profile's calibration, or
/// `prediction.calibrated` in the plan): with the defaults the model can be
/// several times off on a given machine (372% median error for a tiny model
/// on the machine these tests run on), and a prefill predicted 3x too fast
/// looks like an overflow.
///
/// The expectation is what the placement does when everything it puts on the
/// GPU is in VRAM: an overflow is what watch looks for, so the prediction of
/// a placement that spills is no reference (the speed model is asked with the
/// whole budget available, and a spill it foresees on the real budget becomes
/// a note).

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/model_info.h"
#include "speed/calibration.h"
#include "speed/machine_spec.h"
#include "speed/speed_model.h"
#include "util/result.h"
#include "watch/baseline.h"
#include "watch/server_settings.h"

namespace moetune {

/// What the speed model needs besides the server's command.
struct ServerPredictor {
  std::shared_ptr<const ModelInfo> model;
  MachineSpec machine;
  CalibrationConstants constants;
  /// "calibrated on HOST (DATE)" or "default constants": said in the description.
  std::string constants_source = "default constants";
};

/// The speed model's view of a llama-server command: -ngl, --n-cpu-moe /
/// --cpu-moe, -ot, -t, -ub, -b, -ctk, -ctv, -fa, -c (0 or absent: the model's
/// training context), -np, -kvu, --no-mmap or -lm none|dio|mlock (pinned host weights),
/// --no-op-offload. kInvalidArgument, naming the flag, for what the model
/// cannot take: a value that is not a number, an unknown cache type, or a
/// placement left to --fit (no -ngl, --n-cpu-moe, --cpu-moe or -ot, and -fit
/// not off: llama.cpp then chooses the placement at start).
Result<RunSettings> RunSettingsFromServer(const ServerSettings& settings, const ModelInfo& model);

/// Depths the prediction is computed at, for a context of `n_ctx` tokens per
/// slot: 0, 1/8, 1/4, 1/2 and all of it (seconds per token are linear in depth
/// in the speed model, so the curve between them is exact enough).
std::vector<int> PredictionDepths(int64_t n_ctx);

/// The speed model's prediction for `settings` (with --n-cpu-moe replaced by
/// `n_cpu_moe` when given, e.g. after serve --apply). Errors when the command
/// cannot be read or the model cannot predict it.
Result<std::unique_ptr<PredictedBaseline>> PredictServer(const ServerPredictor& predictor,
                                                         const ServerSettings& settings,
                                                         std::optional<int> n_cpu_moe,
                                                         std::vector<std::string>* notes);

/// The predicted points of `moetune plan --predict --json` output at
/// `n_cpu_moe` (nearest predicted N at or above it when absent, like measured
/// curves; with an -ot fine fill on top of N, pass N + 1). Points whose
/// prediction does not load or spills are left out (noted). Errors when the
/// file holds no usable prediction, or was predicted with default constants.
Result<std::unique_ptr<PredictedBaseline>> BaselineFromPlanPrediction(
    const nlohmann::json& plan, std::optional<int> n_cpu_moe, const std::string& source,
    std::vector<std::string>* notes);

/// True when `j` looks like plan --predict output (options[].predicted).
bool HasPlanPrediction(const nlohmann::json& j);

}  // namespace moetune
