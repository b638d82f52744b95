#pragma once
/// The `--report` document of each command, composed from the shared pieces
/// (report/report_blocks.h, report/curve_figures.h, report/memory_figures.h):
/// the verdict first, then the figures, the decisions with their rules, the
/// machine and engine, warnings, the raw numbers (collapsed) and how to
/// reproduce. Render with RenderReport (report/document.h).

#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_info.h"
#include "model/model_info.h"
#include "plan/placement.h"
#include "report/analysis_report.h"
#include "report/curve_figures.h"
#include "report/document.h"

namespace moetune {

/// The sections an analysis gives (speed against N, long context, threads and
/// batch sizes), for any document that holds one (analyze, bench, tune).
std::vector<Section> AnalysisSections(const Analysis& analysis, std::optional<int64_t> target_ctx,
                                      const NCurveOptions& curve = {});

/// `moetune analyze ... --report FILE`. `invocation` is the command line that
/// produced it (shown under "How to reproduce").
Report AnalyzeDocument(const AnalysisReport& report, const std::vector<RunResult>& results,
                       const std::vector<std::string>& invocation);

struct PlanDocumentExtras {
  std::vector<std::string> invocation;
  /// The engine found on this machine (for its version and devices), if any.
  std::optional<EngineInfo> engine;
  /// Predicted speeds per N (the speed model), drawn as a dashed curve.
  std::vector<PredictedSpeed> predicted;
  /// The band of those predictions (calibrated or not).
  std::optional<PredictionUncertainty> uncertainty;
};

/// `moetune plan ... --report FILE`.
Report PlanDocument(const ModelInfo& model, const Plan& plan, const PlanRequest& request,
                    const PlanDocumentExtras& extras);

/// `moetune bench ... --report FILE`: every configuration with its interval,
/// and `analysis` (Analyze of the run's results) where the sweep varies N,
/// threads or micro-batch.
Report BenchDocument(const BenchRun& run, const Analysis& analysis, const EngineInfo& engine,
                     double wall_seconds, const std::vector<std::string>& invocation);

}  // namespace moetune
