#include "tune/check_phases.h"

#include <fmt/format.h>

#include <vector>

#include "tune/points.h"

namespace moetune {
namespace {

// What the final check compares: the settings that change what is held on the GPU.
bool SameGpuHolding(const TuneSettings& a, const TuneSettings& b) {
  return a.n == b.n && a.ubatch == b.ubatch && a.batch == b.batch && a.flash_attn == b.flash_attn &&
         a.kv_type == b.kv_type;
}

std::string GpuHoldingText(const TuneSettings& s) {
  return fmt::format("--n-cpu-moe {} -ub {} -fa {} -ctk {}", s.n, s.ubatch,
                     FlashAttnName(s.flash_attn), GgmlTypeName(s.kv_type));
}

// Why `cur` fails at `deep` against the validated settings `v`; empty when it holds.
std::string FailsAtDepth(const TuneLedger& ledger, const TuneSettings& cur, const TuneSettings& v,
                         int deep) {
  if (!ledger.Score(cur, deep).pp) return fmt::format("it does not run at depth {}", deep);
  const auto c = ledger.PrefillAtDepth(cur, deep), r = ledger.PrefillAtDepth(v, deep);
  if (c && r && Collapses(*c, *r, ledger.options().rules.analysis.collapse)) {
    return fmt::format(
        "its prefill keeps {:.0f}% of its depth-0 speed at depth {}, the validated settings "
        "{:.0f}%",
        c->ratio() * 100, deep, r->ratio() * 100);
  }
  return "";
}

// Prefill and decode of `config` at `depth`, `reps` repetitions (journal first).
std::vector<RunResult> MeasureServer(TuneLedger& ledger, const ServerConfig& config, int depth,
                                     int reps, const std::string& label) {
  const TuneOptions& opt = ledger.options();
  std::vector<RunConfig> want;
  for (bool prefill : {true, false}) {
    RunConfig c(config);
    c.n_depth = depth;
    c.n_prompt = prefill ? opt.n_prompt : 0;
    c.n_gen = prefill ? 0 : opt.n_gen;
    c.repetitions = reps;
    want.push_back(c);
  }
  return ledger.MeasureConfigs(
      want, fmt::format("{}{}", label, depth ? fmt::format(" @ d{}", depth) : ""));
}

// Seconds per request of the workload from a prefill and a decode measurement.
std::optional<double> SecondsPerRequest(const std::vector<RunResult>& rs, const Workload& w) {
  Cell cell;
  for (const auto& r : rs) (r.config.n_prompt > 0 ? cell.prefill : cell.decode).push_back(&r);
  const auto p = PointOf(0, cell, w);
  if (!p || !p->prefill || !p->decode) return std::nullopt;
  return w.SecondsPerRequest(p->prefill->mean, p->decode->mean);
}

}  // namespace

PhaseOutcome RunFinalCheckPhase(TuneLedger& ledger, TuneSettings cur,
                                const std::optional<TuneSettings>& validated) {
  constexpr TunePhase kPhase = TunePhase::kFinalCheck;
  ledger.set_phase(kPhase);
  const std::vector<int> depths = LongContextDepths(ledger.options());
  if (!validated || depths.empty() || SameGpuHolding(cur, *validated)) return {cur, std::nullopt};
  const TuneSettings& v = *validated;
  const int deep = depths.back();
  if (!ledger.Score(cur, deep).pp) {
    ledger.Measure({cur}, deep, ledger.options().depth_repetitions, "final check");
    if (ledger.out_of_time()) return {cur, std::nullopt};
  }
  const std::string why = FailsAtDepth(ledger, cur, v, deep);
  const std::string now = GpuHoldingText(cur);
  if (why.empty()) {
    return {cur, MakeDecision(kPhase, now, "the changed settings hold at the target context",
                              fmt::format("measured at depth {}: no failure, no collapse", deep))};
  }
  cur.n = v.n;
  cur.ubatch = v.ubatch;
  cur.batch = v.batch;
  cur.flash_attn = v.flash_attn;
  cur.kv_type = v.kv_type;
  return {cur, MakeDecision(kPhase, GpuHoldingText(cur),
                            "undone: the changed settings fail at the target context",
                            now + ": " + why)};
}

BaselineComparisons RunDefaultsPhase(TuneLedger& ledger, const TuneSettings& cur) {
  ledger.set_phase(TunePhase::kDefaults);
  const TuneSpace& space = ledger.space();
  const TuneOptions& opt = ledger.options();
  const int deep = DeepestDepth(opt);
  const ServerConfig tuned = SettingsConfig(space, cur);
  auto seconds = [&](const ServerConfig& c, int depth, const std::string& label) {
    const int reps = depth > 0 ? opt.depth_repetitions : opt.repetitions;
    return SecondsPerRequest(MeasureServer(ledger, c, depth, reps, label), opt.workload);
  };
  // Each baseline just before the pick at the same depth (the report pairs
  // them so: tune_document.cc VersusDefaultsMeasurements); the pick is
  // measured once, and a later baseline is compared with the same figures.
  std::vector<int> depths = {0};
  if (deep > 0) depths.push_back(deep);
  std::optional<DefaultsComparison> pick;
  auto compare = [&](const ServerConfig& baseline, const std::string& how,
                     const std::string& label) {
    DefaultsComparison d;
    d.defaults = baseline;
    d.how = how;
    for (int depth : depths) {
      auto& base_s = depth == 0 ? d.default_seconds_depth0 : d.default_seconds_ctx;
      auto& pick_s = depth == 0 ? d.tuned_seconds_depth0 : d.tuned_seconds_ctx;
      base_s = seconds(baseline, depth, label);
      pick_s = pick ? (depth == 0 ? pick->tuned_seconds_depth0 : pick->tuned_seconds_ctx)
                    : seconds(tuned, depth, "pick");
    }
    if (!d.default_seconds_depth0) d.note = label + " did not produce a measurement";
    if (!pick) pick = d;
    return d;
  };
  BaselineComparisons out;
  if (space.defaults) {
    out.defaults = compare(*space.defaults, space.defaults_how, "llama.cpp's defaults");
  }
  if (space.ollama && !ledger.out_of_time()) {
    out.ollama = compare(*space.ollama, space.ollama_how, "Ollama's split");
  }
  return out;
}

}  // namespace moetune
