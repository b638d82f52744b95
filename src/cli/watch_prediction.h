#pragma once
/// The speed model for the server that `watch` or `serve` judges: the model
/// file the server runs and this machine from its doctor profile (with the
/// calibration stored there), so that watch expects a speed from the first
/// request instead of learning it from the session (docs/watch.md).

#include <optional>
#include <string>
#include <vector>

#include "util/result.h"
#include "watch/prediction.h"

namespace moetune {

/// The predictor for `model_path` on the machine of `profile` ("" = the
/// default profile). nullopt, with a note saying why, when prediction is off
/// (`enabled` false), no profile exists at the default path, the profile has
/// no calibration (default constants are not trusted), or the model file
/// cannot be read here. An explicit `profile` that cannot be read is an
/// error.
Result<std::optional<ServerPredictor>> PredictorForServer(const std::string& model_path,
                                                          const std::string& profile, bool enabled,
                                                          std::vector<std::string>* notes);

}  // namespace moetune
