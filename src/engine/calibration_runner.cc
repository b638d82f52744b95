#include "engine/calibration_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "speed/plan_prediction.h"

namespace moetune {

int DeepDecodeDepth(const ModelShape& shape, const MachineSpec& machine) {
  constexpr int kMaxDepth = 32768;
  constexpr int kStep = 1024;
  double per_cell = 0;  // f16 K and V of every layer whose cache grows with depth
  for (const auto& L : shape.layers) {
    if (!L.has_kv) continue;
    if (L.attention != AttentionKind::kFull && L.attention != AttentionKind::kMla) continue;
    per_cell += 2.0 * (L.n_embd_k_gqa + L.n_embd_v_gqa);
  }
  const double llc = static_cast<double>(machine.cpu.llc_bytes);
  if (per_cell <= 0 || llc <= 0) return 0;
  const double cells = std::ceil(1.5 * llc / per_cell / kStep) * kStep;
  return cells > kMaxDepth ? 0 : static_cast<int>(cells);
}

std::vector<RunConfig> CalibrationConfigs(const std::string& model_path, const SpeedModel& model,
                                          const CalibrationRunOptions& o) {
  const MachineSpec& m = model.machine();
  const int max_threads = std::max(1, m.cpu.p_cores);
  std::vector<int> threads = {max_threads};
  if (!o.quick && max_threads > 1) threads.insert(threads.begin(), 1);
  const int reps = o.quick ? std::max(2, o.repetitions - 1) : o.repetitions;
  auto make = [&](int ngl, int ncmoe, int t, int depth, bool prefill) {
    RunConfig c;
    c.model = model_path;
    c.placement.n_gpu_layers = ngl;
    c.placement.n_cpu_moe = ncmoe;
    c.n_ubatch = o.n_ubatch;
    c.n_batch = 2048;
    c.threads = t;
    c.n_depth = depth;
    (prefill ? c.n_prompt : c.n_gen) = prefill ? o.n_prompt : o.n_gen;
    c.repetitions = reps;
    return c;
  };
  const int n_layer = static_cast<int>(model.shape().layers.size());
  std::vector<RunConfig> out;
  // Every layer on the CPU (-ngl 0) pins the CPU constants; threads and depth
  // vary inside one model load.
  for (int t : threads) {
    for (int d : {0, o.depth}) {
      for (bool pp : {true, false}) out.push_back(make(0, 0, t, d, pp));
    }
  }
  // Decode beyond the last-level cache (one thread count: filling the depth is
  // the expensive part). Real models' KV caches are far beyond any LLC.
  const int deep =
      o.deep_depth == 0 ? DeepDecodeDepth(model.shape(), m) : std::max(0, o.deep_depth);
  if (deep > o.depth) {
    RunConfig c = make(0, 0, max_threads, deep, /*prefill=*/false);
    c.repetitions = std::min(c.repetitions, 2);
    out.push_back(c);
  }
  if (m.accel() && model.shape().n_expert > 0) {
    // All experts on the CPU, and the fewest CPU layers that load (strict).
    RunSettings proto;
    proto.n_ubatch = o.n_ubatch;
    proto.n_prompt = o.n_prompt;
    const int n_fit = FirstLoadingNCpuMoe(model, proto).value_or(n_layer);
    std::vector<int> splits = {n_layer};
    if (n_fit < n_layer) splits.push_back(n_fit);
    for (int n : splits) {
      for (bool pp : {true, false}) out.push_back(make(99, n, max_threads, 0, pp));
    }
  }
  return out;
}

namespace {

void NoteFailures(const BenchRun& run, std::vector<std::string>* failures) {
  for (const auto& r : run.results) {
    if (r.ok() || failures == nullptr) continue;
    failures->push_back(fmt::format("{} t={} ncmoe={}: {} ({})", r.config.test_name(),
                                    r.config.threads, r.config.placement.n_cpu_moe,
                                    FailureKindName(r.failure->kind), r.failure->message));
  }
}

}  // namespace

CalibrationRecord CalibrateFromMeasurements(const SpeedModel& model,
                                            const std::vector<Measurement>& ms) {
  const FitResult fit = FitConstants(model, ms, model.constants());
  CalibrationRecord rec;
  rec.constants = fit.constants;
  rec.fitted = fit.fitted;
  rec.points = fit.points;
  rec.median_error_default = fit.median_error_default;
  rec.median_error = fit.median_error;
  rec.uncertainty = SelfCheck(model, ms, model.constants());
  return rec;
}

std::vector<BenchRun> RemeasureUnstable(Engine& engine, const std::vector<RunConfig>& configs,
                                        std::vector<Measurement>* ms,
                                        const ProgressCallback& progress, MeasurementStat stat) {
  std::vector<BenchRun> runs;
  for (int round = 0; round < kUnstableExtraRounds; ++round) {
    std::vector<RunConfig> again;
    for (const auto& c : configs) {
      auto s = RunSettingsFromConfig(c);
      if (!s.ok()) continue;
      const std::string label = MeasurementLabel(*s);
      const bool unstable = std::any_of(ms->begin(), ms->end(), [&](const Measurement& m) {
        return m.label == label && IsUnstable(m);
      });
      if (unstable) again.push_back(c);
    }
    if (again.empty()) break;
    runs.push_back(engine.Run(again, progress));
    for (const auto& fresh : MeasurementsFromRun(runs.back(), stat)) {
      for (auto& m : *ms) {
        if (m.label != fresh.label) continue;
        m.last_round = m.samples.size();
        m.samples.insert(m.samples.end(), fresh.samples.begin(), fresh.samples.end());
        m.rounds += 1;
        m.tokens_per_second = SampleStat(m.samples, stat);
      }
    }
  }
  return runs;
}

Result<CalibrationRecord> RunCalibration(Engine& engine, const std::vector<RunConfig>& configs,
                                         const SpeedModel& model,
                                         std::vector<std::string>* failures,
                                         const ProgressCallback& progress, MeasurementStat stat) {
  std::vector<BenchRun> runs = {engine.Run(configs, progress)};
  auto ms = MeasurementsFromRun(runs[0], stat);
  if (ms.empty()) {
    NoteFailures(runs[0], failures);
    return Error(ErrorKind::kEngine,
                 "no calibration run succeeded; see the failures above (`moetune engine` checks "
                 "the engine)");
  }
  for (auto& again : RemeasureUnstable(engine, configs, &ms, progress, stat))
    runs.push_back(std::move(again));
  CalibrationRecord rec = CalibrateFromMeasurements(model, ms);
  for (const auto& run : runs) {
    NoteFailures(run, failures);
    for (const auto& r : run.results) {
      if (!r.other_cpu_cores) continue;
      rec.uncertainty.other_cores_max =
          std::max(rec.uncertainty.other_cores_max.value_or(0.0), *r.other_cpu_cores);
    }
  }
  return rec;
}

}  // namespace moetune
