#pragma once
/// Wiring shared by `moetune watch` and `moetune serve`: the baseline from a
/// --from file or the speed model's prediction, the GPU scan, and the layer
/// count that caps a proposed --n-cpu-moe.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu.h"
#include "watch/baseline.h"
#include "watch/prediction.h"
#include "watch/tuned_file.h"

namespace moetune {

/// The baseline for a server at `n_cpu_moe`, best first:
/// 1. measured: the curves of `tuned` when it has an analysis;
/// 2. predicted: the predicted speeds `tuned` holds (plan --predict), else
///    the speed model for `command` (the server's argument vector) when
///    `predictor` is given (a machine profile is known);
/// 3. null: the session's own first requests become the baseline.
/// Problems go to `notes`, never fail.
std::shared_ptr<const Baseline> BaselineFor(const std::optional<TunedFile>& tuned,
                                            std::optional<int> n_cpu_moe,
                                            const std::vector<std::string>& command,
                                            const ServerPredictor* predictor,
                                            std::vector<std::string>* notes);

/// A GPU scan through NVML, or an empty function when there is no NVIDIA
/// driver (or `enabled` is false).
std::function<std::vector<GpuInfo>()> MakeGpuScan(bool enabled);

/// The model's layer count from its header, when the file can be read.
std::optional<int> ModelLayerCount(const std::string& path);

}  // namespace moetune
