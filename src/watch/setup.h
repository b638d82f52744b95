#pragma once
/// Wiring shared by `moetune watch` and `moetune serve`: the baseline from a
/// --from file (or the speed model's prediction once it is wired), the GPU
/// scan, and the layer count that caps a proposed --n-cpu-moe.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu.h"
#include "watch/baseline.h"
#include "watch/tuned_file.h"

namespace moetune {

/// The baseline for a server at `n_cpu_moe`: the measured curves of `tuned`
/// when it has an analysis, else the speed model's prediction when one is
/// wired (SetSpeedPredictionFactory), else null (the session's own first
/// requests become the baseline). Problems go to `notes`, never fail.
/// `command` is the server's argument vector (for the prediction).
std::shared_ptr<const Baseline> BaselineFor(const std::optional<TunedFile>& tuned,
                                            std::optional<int> n_cpu_moe,
                                            const std::vector<std::string>& command,
                                            std::vector<std::string>* notes);

/// The seam for the speed model (src/perf): a factory that, for a server
/// command (argument vector), returns the predicted speed against depth, or
/// nullopt when it cannot predict (unknown model, no machine profile). Not
/// set by default; the command layer sets it once the speed model exists.
using SpeedPredictionFactory =
    std::function<std::optional<SpeedPrediction>(const std::vector<std::string>& command)>;
void SetSpeedPredictionFactory(SpeedPredictionFactory factory);

/// A GPU scan through NVML, or an empty function when there is no NVIDIA
/// driver (or `enabled` is false).
std::function<std::vector<GpuInfo>()> MakeGpuScan(bool enabled);

/// The model's layer count from its header, when the file can be read.
std::optional<int> ModelLayerCount(const std::string& path);

}  // namespace moetune
