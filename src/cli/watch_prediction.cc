#include "cli/watch_prediction.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/machine_flags.h"
#include "report/uncertainty_report.h"

namespace moetune {

Result<std::optional<ServerPredictor>> PredictorForServer(const std::string& model_path,
                                                          const std::string& profile, bool enabled,
                                                          std::vector<std::string>* notes) {
  if (!enabled) return std::optional<ServerPredictor>();
  MachineFlags flags;
  flags.profile = profile;
  MOETUNE_ASSIGN_OR_RETURN(ResolvedMachine m, ResolveMachine(flags));
  if (!m.profile_found) {
    notes->push_back(
        "no machine profile (`moetune doctor` writes one): no predicted baseline, the session's "
        "own first requests are the reference");
    return std::optional<ServerPredictor>();
  }
  if (!m.calibration) {
    notes->push_back(
        fmt::format("the machine profile {} has no calibration: no predicted baseline ({})",
                    m.profile_path, UncertaintyText(m.uncertainty)));
    return std::optional<ServerPredictor>();
  }
  std::error_code ec;
  if (model_path.empty() || !std::filesystem::is_regular_file(model_path, ec)) {
    notes->push_back(
        fmt::format("the model file '{}' cannot be read here: no predicted baseline", model_path));
    return std::optional<ServerPredictor>();
  }
  auto model = LoadModelInfo(model_path);
  if (!model.ok()) {
    notes->push_back("no predicted baseline: " + model.error().message());
    return std::optional<ServerPredictor>();
  }
  ServerPredictor p;
  p.model = std::make_shared<const ModelInfo>(std::move(model).value());
  p.machine = m.spec;
  p.constants = m.constants;
  p.constants_source = fmt::format("constants calibrated on {} at {}; {}", m.calibration->hostname,
                                   m.calibration->created_at, UncertaintyText(m.uncertainty));
  return std::optional<ServerPredictor>(std::move(p));
}

}  // namespace moetune
