#include "speed/calibration_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "stats/summary.h"

namespace moetune {
namespace {

struct Bounds {
  double lo, hi;
  bool linear;  // fitted on a linear scale (may cross zero) instead of log
};

// Physically plausible ranges (docs/speed-model.md). Efficiencies above 1 are
// allowed where the reference figure can be beaten (a cache-resident model beats
// the RAM bandwidth the doctor measured).
const std::map<std::string, Bounds>& FitBounds() {
  static const std::map<std::string, Bounds> kBounds = {
      {"cpu_bw_efficiency", {0.05, 3.0, false}},
      {"cpu_matmul_efficiency", {0.02, 2.0, false}},
      {"cpu_matvec_efficiency", {0.01, 2.0, false}},
      {"cpu_attn_prefill_efficiency", {0.005, 2.0, false}},
      {"cpu_attn_decode_efficiency", {0.001, 1.0, false}},
      {"thread_efficiency_prefill", {-0.95, 1.0, true}},
      {"thread_efficiency_decode", {-0.95, 1.0, true}},
      {"smt_gain", {0.01, 1.0, false}},
      {"cpu_layer_overhead_us", {0.1, 2000, false}},
      {"llc_bw_factor", {1, 20, false}},
      {"gpu_bw_efficiency", {0.2, 1.0, false}},
      {"gpu_compute_efficiency", {0.02, 1.0, false}},
      {"gpu_layer_overhead_us", {1, 500, false}},
      {"handover_us", {1, 2000, false}},
      {"link_efficiency", {0.1, 2.0, false}},
      {"spill_efficiency", {0.05, 1.0, false}},
      {"spill_latency_us", {1, 1000, false}},
      {"activation_traffic", {1, 30, false}},
      {"rpc_link_gbps", {0.05, 50, false}},
      {"rpc_handover_us", {10, 20000, false}},
      {"rpc_layer_overhead_us", {1, 20000, false}},
  };
  return kBounds;
}

double Predicted(const SpeedModel& m, const RunSettings& run, bool* loads) {
  auto p = m.Predict(run);
  *loads = p.ok() && p->loads;
  return *loads ? p->tokens_per_second : 0;
}

bool IsPrefill(const RunSettings& r) { return r.n_prompt > 0 && r.n_gen == 0; }

}  // namespace

double RepetitionSpread(const std::vector<double>& samples) {
  return Summarize(samples).cv().value_or(0.0);
}

double LastRoundSpread(const Measurement& m) {
  const std::size_t from = std::min(m.last_round, m.samples.size());
  return RepetitionSpread(
      std::vector<double>(m.samples.begin() + static_cast<long>(from), m.samples.end()));
}

bool IsUnstable(const Measurement& m) { return LastRoundSpread(m) > kUnstableRepetitionSpread; }

double FitWeight(const Measurement& m) { return IsUnstable(m) ? kUnstableWeight : 1.0; }

std::vector<std::string> IdentifiableConstants(const std::vector<Measurement>& ms,
                                               const MachineSpec& machine) {
  // CPU constants from runs where every layer is on the CPU (no accelerator, or
  // -ngl 0); accelerator and link constants from runs with layers offloaded.
  std::set<int> threads;
  bool pp = false, tg = false, pp_depth = false, tg_depth = false;
  bool acc_pp = false, acc_tg = false, acc_pp_split = false, acc_tg_split = false;
  for (const auto& m : ms) {
    const bool prefill = IsPrefill(m.run);
    if (!machine.accel() || m.run.n_gpu_layers == 0) {
      threads.insert(m.run.threads);
      (prefill ? pp : tg) = true;
      if (m.run.n_depth > 0) (prefill ? pp_depth : tg_depth) = true;
    } else {
      (prefill ? acc_pp : acc_tg) = true;
      if (m.run.n_cpu_moe > 0) (prefill ? acc_pp_split : acc_tg_split) = true;
    }
  }
  std::vector<std::string> out;
  if (pp) out.push_back("cpu_matmul_efficiency");
  if (tg) out.insert(out.end(), {"cpu_bw_efficiency", "cpu_matvec_efficiency"});
  if (pp_depth) out.push_back("cpu_attn_prefill_efficiency");
  if (tg_depth) out.push_back("cpu_attn_decode_efficiency");
  if (threads.size() > 1) {
    if (pp) out.push_back("thread_efficiency_prefill");
    if (tg) out.push_back("thread_efficiency_decode");
  }
  if (machine.accel() && machine.accel()->kind == AcceleratorKind::kRpcCpu) {
    if (acc_tg) out.push_back("rpc_layer_overhead_us");
    if (acc_pp_split || acc_tg_split) out.insert(out.end(), {"rpc_link_gbps", "rpc_handover_us"});
  } else if (machine.accel()) {
    if (acc_tg) out.insert(out.end(), {"gpu_bw_efficiency", "gpu_layer_overhead_us"});
    if (acc_pp) out.push_back("gpu_compute_efficiency");
    if (acc_pp_split) out.push_back("link_efficiency");
    if (acc_tg_split) out.push_back("handover_us");
  }
  return out;
}

std::vector<CalibrationPoint> ComparePredictions(const SpeedModel& model,
                                                 const std::vector<Measurement>& ms) {
  std::vector<CalibrationPoint> pts;
  for (const auto& m : ms) {
    CalibrationPoint p;
    p.label = m.label;
    p.prefill = IsPrefill(m.run);
    p.threads = m.run.threads;
    p.n_ubatch = m.run.n_ubatch;
    p.n_depth = m.run.n_depth;
    p.n_tokens = p.prefill ? m.run.n_prompt : m.run.n_gen;
    p.n_cpu_moe = m.run.n_cpu_moe;
    p.n_gpu_layers = m.run.n_gpu_layers;
    p.rpc = m.rpc;
    p.measured_tps = m.tokens_per_second;
    bool loads = false;
    p.predicted_tps = Predicted(model, m.run, &loads);
    p.predicted_default_tps = p.predicted_tps;
    p.spread = LastRoundSpread(m);
    p.rounds = m.rounds;
    p.unstable = IsUnstable(m);
    pts.push_back(p);
  }
  return pts;
}

double MedianAbsError(const std::vector<CalibrationPoint>& points, bool prefill) {
  std::vector<double> e;
  for (const auto& p : points) {
    if (p.prefill != prefill || p.measured_tps <= 0) continue;
    e.push_back(std::fabs(p.predicted_tps / p.measured_tps - 1.0));
  }
  if (e.empty()) return 0;
  std::sort(e.begin(), e.end());
  const size_t n = e.size();
  return n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
}

CalibrationConstants MinimizeConstants(
    const std::vector<std::string>& names, const CalibrationConstants& start,
    const std::function<double(const CalibrationConstants&)>& loss, int sweeps) {
  const CalibrationConstants prior = start;
  auto objective = [&](const CalibrationConstants& c) {
    double s = loss(c);
    // Weak prior toward the defaults keeps constants the runs cannot see in place.
    CalibrationConstants copy = c;
    CalibrationConstants pr = prior;
    auto fields = copy.Fields();
    auto pfields = pr.Fields();
    for (size_t i = 0; i < fields.size(); ++i) {
      const auto& b = FitBounds().at(fields[i].first);
      const double z = b.linear ? (*fields[i].second - *pfields[i].second)
                                : std::log(*fields[i].second / *pfields[i].second);
      s += 1e-4 * z * z;
    }
    return s;
  };
  CalibrationConstants c = start;
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    for (const auto& name : names) {
      auto it = FitBounds().find(name);
      if (it == FitBounds().end()) continue;
      const Bounds b = it->second;
      double* target = nullptr;
      for (auto& [n, ptr] : c.Fields()) {
        if (n == name) target = ptr;
      }
      if (target == nullptr) continue;
      const double old = *target;
      // Golden-section search over the coordinate (log scale unless linear).
      auto to = [&](double v) { return b.linear ? v : std::log(v); };
      auto from = [&](double x) { return b.linear ? x : std::exp(x); };
      double lo = to(b.lo), hi = to(b.hi);
      const double g = (std::sqrt(5.0) - 1) / 2;
      double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
      auto eval = [&](double x) {
        *target = from(x);
        return objective(c);
      };
      double f1 = eval(x1), f2 = eval(x2);
      for (int it2 = 0; it2 < 40; ++it2) {
        if (f1 < f2) {
          hi = x2;
          x2 = x1;
          f2 = f1;
          x1 = hi - g * (hi - lo);
          f1 = eval(x1);
        } else {
          lo = x1;
          x1 = x2;
          f1 = f2;
          x2 = lo + g * (hi - lo);
          f2 = eval(x2);
        }
      }
      const double best = f1 < f2 ? x1 : x2;
      // Keep the old value unless the new one is better.
      *target = old;
      const double f_old = objective(c);
      *target = from(best);
      if (objective(c) > f_old) *target = old;
    }
  }
  return c;
}

double LogErrorLoss(const SpeedModel& m, const RunSettings& run, double measured) {
  bool loads = false;
  const double pred = Predicted(m, run, &loads);
  const double e = loads && pred > 0 ? std::log(pred / measured) : 5.0;
  return e * e;
}

FitResult FitConstants(const SpeedModel& model_in, const std::vector<Measurement>& ms,
                       const CalibrationConstants& start, std::vector<std::string> names) {
  SpeedModel model = model_in;
  if (names.empty()) names = IdentifiableConstants(ms, model.machine());
  FitResult r;
  r.constants = start;
  r.fitted = names;
  // Measurements the model can evaluate (a configuration that does not load in
  // the model cannot inform it).
  std::vector<const Measurement*> use;
  model.set_constants(start);
  for (const auto& m : ms) {
    bool loads = false;
    Predicted(model, m.run, &loads);
    if (loads && m.tokens_per_second > 0) use.push_back(&m);
  }
  CalibrationConstants c = start;
  if (!use.empty()) {
    c = MinimizeConstants(names, start, [&](const CalibrationConstants& k) {
      model.set_constants(k);
      double s = 0;
      for (const Measurement* m : use)
        s += FitWeight(*m) * LogErrorLoss(model, m->run, m->tokens_per_second);
      return s;
    });
  }
  r.constants = c;
  SpeedModel before = model_in;
  before.set_constants(start);
  model.set_constants(c);
  auto pts_before = ComparePredictions(before, ms);
  r.points = ComparePredictions(model, ms);
  for (size_t i = 0; i < r.points.size(); ++i)
    r.points[i].predicted_default_tps = pts_before[i].predicted_tps;
  auto med = [](const std::vector<CalibrationPoint>& pts) {
    std::vector<double> e;
    for (const auto& p : pts) {
      if (p.measured_tps > 0) e.push_back(std::fabs(p.predicted_tps / p.measured_tps - 1.0));
    }
    if (e.empty()) return 0.0;
    std::sort(e.begin(), e.end());
    return e[e.size() / 2];
  };
  r.median_error_default = med(pts_before);
  r.median_error = med(r.points);
  return r;
}

HeldOutCheck HeldOutPredictions(const SpeedModel& model, const std::vector<Measurement>& ms,
                                const CalibrationConstants& start) {
  HeldOutCheck out;
  const int n = static_cast<int>(ms.size());
  if (n < kHeldOutMinTests) return out;
  out.folds = std::min(n, kHeldOutFolds);
  std::vector<CalibrationPoint> by_test(ms.size());
  for (int fold = 0; fold < out.folds; ++fold) {
    std::vector<Measurement> train, held;
    std::vector<std::size_t> held_index;
    for (int i = 0; i < n; ++i) {
      if (i % out.folds == fold) {
        held.push_back(ms[i]);
        held_index.push_back(static_cast<std::size_t>(i));
      } else {
        train.push_back(ms[i]);
      }
    }
    SpeedModel fitted = model;
    fitted.set_constants(FitConstants(model, train, start).constants);
    const auto pts = ComparePredictions(fitted, held);
    for (std::size_t j = 0; j < pts.size(); ++j) by_test[held_index[j]] = pts[j];
  }
  out.points = std::move(by_test);
  return out;
}

CalibrationUncertainty SelfCheck(const SpeedModel& model, const std::vector<Measurement>& ms,
                                 const CalibrationConstants& start) {
  CalibrationUncertainty u;
  const HeldOutCheck held = HeldOutPredictions(model, ms, start);
  u.held_out_folds = held.folds;
  u.held_out_prefill = MedianAbsError(held.points, true);
  u.held_out_decode = MedianAbsError(held.points, false);
  std::vector<double> spreads;
  spreads.reserve(ms.size());
  for (const auto& m : ms) spreads.push_back(LastRoundSpread(m));
  u.spread_median = Median(spreads);
  u.spread_max = spreads.empty() ? 0 : *std::max_element(spreads.begin(), spreads.end());
  return u;
}

}  // namespace moetune
