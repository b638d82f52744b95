#include "tune/points.h"

#include <algorithm>
#include <cmath>

#include "tune/measurements.h"

namespace moetune {
namespace {

// llama-bench's default repetitions, assumed for a result that gives a mean
// and a standard deviation without its samples.
constexpr int kLlamaBenchRepetitions = 5;

std::string FailureText(const std::vector<const RunResult*>& rs) {
  for (const RunResult* r : rs) {
    if (r->ok()) return "";
  }
  for (const RunResult* r : rs) {
    if (r->failure) {
      return r->failure->message.empty()
                 ? std::string(FailureKindName(r->failure->kind))
                 : std::string(FailureKindName(r->failure->kind)) + ": " + r->failure->message;
    }
  }
  return "";
}

}  // namespace

std::optional<Summary> PoolResults(const std::vector<const RunResult*>& rs, bool* assumed_n) {
  std::vector<double> samples;
  const RunResult* only = nullptr;
  int usable = 0;
  for (const RunResult* r : rs) {
    if (!r->ok()) continue;
    ++usable;
    only = r;
    if (r->samples_ts.size() >= 2)
      samples.insert(samples.end(), r->samples_ts.begin(), r->samples_ts.end());
  }
  if (usable == 0) return std::nullopt;
  if (usable == 1 || samples.size() < 2) {
    bool assumed = false;
    Summary s = ResultStats(*only, kLlamaBenchRepetitions, &assumed);
    if (assumed && assumed_n != nullptr) *assumed_n = true;
    return s;
  }
  RunResult pooled;
  pooled.samples_ts = samples;
  return ResultStats(pooled);
}

std::optional<Estimate> WorkloadObjective(const std::optional<Summary>& pp,
                                          const std::optional<Summary>& tg, const Workload& w) {
  if (pp && tg && pp->mean > 0 && tg->mean > 0 && w.prompt_tokens + w.answer_tokens > 0) {
    const double t = w.SecondsPerRequest(pp->mean, tg->mean);
    Estimate e;
    e.mean = 1.0 / t;
    e.n = static_cast<int>(std::min(pp->n, tg->n));
    if (pp->stddev && tg->stddev && e.n >= 2) {
      // Standard errors of each mean, propagated to T = P/pp + A/tg, then to 1/T.
      const double se_pp = *pp->stddev / std::sqrt(static_cast<double>(pp->n));
      const double se_tg = *tg->stddev / std::sqrt(static_cast<double>(tg->n));
      const double dpp = w.prompt_tokens / (pp->mean * pp->mean) * se_pp;
      const double dtg = w.answer_tokens / (tg->mean * tg->mean) * se_tg;
      const double se_t = std::sqrt(dpp * dpp + dtg * dtg);
      e.sd = se_t / (t * t) * std::sqrt(static_cast<double>(e.n));
    }
    return e;
  }
  if (pp && pp->mean > 0) return FromSummary(*pp);
  if (tg && tg->mean > 0) return FromSummary(*tg);
  return std::nullopt;
}

std::optional<CurvePoint> PointOf(int n, const Cell& cell, const Workload& workload,
                                  bool* assumed_n) {
  CurvePoint p;
  p.n_cpu_moe = n;
  p.prefill = PoolResults(cell.prefill, assumed_n);
  p.decode = PoolResults(cell.decode, assumed_n);
  if (!p.prefill && !p.decode) {
    std::vector<const RunResult*> all = cell.prefill;
    all.insert(all.end(), cell.decode.begin(), cell.decode.end());
    p.failure = FailureText(all);
    if (p.failure.empty()) return std::nullopt;
  }
  p.objective = WorkloadObjective(p.prefill, p.decode, workload);
  return p;
}

}  // namespace moetune
