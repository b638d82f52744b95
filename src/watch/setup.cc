#include "watch/setup.h"

#include <filesystem>

#include "hw/gpu_nvidia.h"
#include "model/model_info.h"

namespace moetune {

std::shared_ptr<const Baseline> BaselineFor(const std::optional<TunedFile>& tuned,
                                            std::optional<int> n_cpu_moe,
                                            const std::vector<std::string>& command,
                                            const ServerPredictor* predictor,
                                            std::vector<std::string>* notes) {
  if (tuned && tuned->analysis) {
    auto b = BaselineFromAnalysis(*tuned->analysis, n_cpu_moe, tuned->path, notes);
    if (b.ok()) return std::shared_ptr<const Baseline>(std::move(b).value());
    if (notes != nullptr) notes->push_back(b.error().message());
  }
  const ServerSettings settings = command.empty() ? ServerSettings{} : SettingsFromArgv(command);
  if (tuned && tuned->prediction) {
    // A fine fill (-ot on top of --n-cpu-moe N) sits between N and N + 1: the
    // prediction of N + 1 is the one the server cannot beat.
    std::optional<int> n = n_cpu_moe;
    if (n && !settings.config.placement.OverrideTensor().empty()) *n += 1;
    auto b = BaselineFromPlanPrediction(*tuned->prediction, n, tuned->path, notes);
    if (b.ok()) return std::shared_ptr<const Baseline>(std::move(b).value());
    if (notes != nullptr) notes->push_back(b.error().message());
  }
  if (predictor != nullptr && !command.empty()) {
    auto b = PredictServer(*predictor, settings, n_cpu_moe, notes);
    if (b.ok()) return std::shared_ptr<const Baseline>(std::move(b).value());
    if (notes != nullptr) notes->push_back(b.error().message());
  }
  return nullptr;
}

std::function<std::vector<GpuInfo>()> MakeGpuScan(bool enabled) {
  if (!enabled) return {};
  const NvidiaScan first = ScanNvidiaGpus();
  if (!first.library_loaded || !first.initialized) return {};
  return [] { return ScanNvidiaGpus().gpus; };
}

std::optional<int> ModelLayerCount(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  auto m = LoadModelInfo(path);
  if (!m.ok() || m->arch.hp.n_layer == 0) return std::nullopt;
  return static_cast<int>(m->arch.hp.n_layer);
}

}  // namespace moetune
