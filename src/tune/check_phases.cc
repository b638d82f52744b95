#include "tune/check_phases.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <vector>

#include "config/flags.h"
#include "tune/points.h"
#include "util/enum_names.h"

namespace moetune {
namespace {

// What the final check compares: the settings that change what is held on the GPU.
bool SameGpuHolding(const TuneSettings& a, const TuneSettings& b) {
  return a.n == b.n && a.cpu_experts == b.cpu_experts && a.device_order == b.device_order &&
         a.ubatch == b.ubatch && a.batch == b.batch && a.flash_attn == b.flash_attn &&
         a.kv_type == b.kv_type;
}

std::string GpuHoldingText(const TuneSpace& space, const TuneSettings& s) {
  const std::string order = DeviceOrderText(space, s);
  return fmt::format("{} {} {} {}", FlagText(FlagId::kNCpuMoe, s.n),
                     FlagText(FlagId::kUbatch, s.ubatch),
                     FlagText(FlagId::kFlashAttn, FlashAttnName(s.flash_attn)),
                     FlagText(FlagId::kCacheTypeK, GgmlTypeName(s.kv_type))) +
         (s.cpu_experts == CpuExpertsFrom::kLast ? " (the last layers' experts)" : "") +
         (order.empty() ? "" : " " + order);
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

// Requests/s of the workload, with its spread, from prefill and decode
// results (every repetition pooled, tune/points.h); nullopt unless both ran.
std::optional<Estimate> ObjectiveOf(const std::vector<RunResult>& rs, const Workload& w) {
  Cell cell;
  for (const auto& r : rs) (r.config.n_prompt > 0 ? cell.prefill : cell.decode).push_back(&r);
  const auto p = PointOf(0, cell, w);
  if (!p || !p->prefill || !p->decode || !p->objective) return std::nullopt;
  return p->objective;
}

// Seconds per request of the workload: the inverse of its requests/s.
std::optional<double> SecondsOf(const std::optional<Estimate>& requests_per_second) {
  if (!requests_per_second || requests_per_second->mean <= 0) return std::nullopt;
  return 1.0 / requests_per_second->mean;
}

// Results of one configuration at each depth, in the order they were measured.
using RunsByDepth = std::map<int, std::vector<RunResult>>;

// The pick against the baseline by the tie rule at the deepest depth both
// ran at; a baseline that looks faster is measured again, both alike, before
// it is believed (one fast run of the baseline must not unseat the pick).
void JudgeVersus(TuneLedger& ledger, const ServerConfig& tuned, const ServerConfig& baseline,
                 const std::string& label, RunsByDepth& pick_runs, RunsByDepth& base_runs,
                 DefaultsComparison* d) {
  const TuneOptions& opt = ledger.options();
  std::optional<int> depth;
  for (const auto& [k, runs] : base_runs) {
    if (ObjectiveOf(runs, opt.workload) && ObjectiveOf(pick_runs[k], opt.workload)) depth = k;
  }
  if (!depth) return;
  d->compared_depth = *depth;
  auto read = [&] {
    d->tuned_objective = ObjectiveOf(pick_runs[*depth], opt.workload);
    d->default_objective = ObjectiveOf(base_runs[*depth], opt.workload);
    const int c =
        CompareEstimates(*d->tuned_objective, *d->default_objective, opt.rules.analysis.curve);
    d->pick = c > 0 ? Versus::kFaster : (c < 0 ? Versus::kSlower : Versus::kTied);
  };
  read();
  // Measured again when the pick is slower beyond the noise, and when it is
  // behind on the means with an interval too wide to call that a tie (one
  // disturbed repetition of two): a tie is a statement about the data.
  const CurveRules& rules = opt.rules.analysis.curve;
  const bool behind_unclear =
      d->pick == Versus::kTied && d->tuned_objective->mean < d->default_objective->mean &&
      (TooWideToTell(*d->tuned_objective, rules) || TooWideToTell(*d->default_objective, rules));
  if ((d->pick != Versus::kSlower && !behind_unclear) || ledger.out_of_time()) return;
  const int reps = *depth > 0 ? opt.depth_repetitions : opt.repetitions;
  auto again = [&](const ServerConfig& c, const std::string& what, RunsByDepth& into) {
    auto more = MeasureServer(ledger, c, *depth, reps, what + " (measured again)");
    into[*depth].insert(into[*depth].end(), more.begin(), more.end());
  };
  again(baseline, label, base_runs);
  again(tuned, "pick", pick_runs);
  read();
}

}  // namespace

const char* VersusName(Versus versus) {
  switch (versus) {
    case Versus::kFaster:
      return "faster";
    case Versus::kTied:
      return "tie";
    case Versus::kSlower:
      return "slower";
    case Versus::kUnmeasured:
      break;
  }
  return "not measured";
}

std::optional<Versus> VersusFromName(std::string_view name) {
  constexpr std::array kAll = {Versus::kFaster, Versus::kTied, Versus::kSlower,
                               Versus::kUnmeasured};
  return EnumFromName(name, kAll, VersusName);
}

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
  const std::string now = GpuHoldingText(ledger.space(), cur);
  if (why.empty()) {
    return {cur, MakeDecision(kPhase, now, "the changed settings hold at the target context",
                              fmt::format("measured at depth {}: no failure, no collapse", deep))};
  }
  cur.n = v.n;
  cur.cpu_experts = v.cpu_experts;
  cur.device_order = v.device_order;
  cur.ubatch = v.ubatch;
  cur.batch = v.batch;
  cur.flash_attn = v.flash_attn;
  cur.kv_type = v.kv_type;
  return {cur, MakeDecision(kPhase, GpuHoldingText(ledger.space(), cur),
                            "undone: the changed settings fail at the target context",
                            now + ": " + why)};
}

BaselineComparisons RunDefaultsPhase(TuneLedger& ledger, const TuneSettings& cur) {
  ledger.set_phase(TunePhase::kDefaults);
  const TuneSpace& space = ledger.space();
  const TuneOptions& opt = ledger.options();
  const int deep = DeepestDepth(opt);
  const ServerConfig tuned = SettingsConfig(space, cur);
  auto reps_at = [&](int depth) { return depth > 0 ? opt.depth_repetitions : opt.repetitions; };
  // Each baseline just before the pick at the same depth (the report pairs
  // them so: tune_document.cc VersusDefaultsMeasurements); the pick is
  // measured once, and a later baseline is compared with the same figures.
  std::vector<int> depths = {0};
  if (deep > 0) depths.push_back(deep);
  RunsByDepth pick_runs;
  auto compare = [&](const ServerConfig& baseline, const std::string& how,
                     const std::string& label) {
    DefaultsComparison d;
    d.defaults = baseline;
    d.how = how;
    RunsByDepth base_runs;
    for (int depth : depths) {
      base_runs[depth] = MeasureServer(ledger, baseline, depth, reps_at(depth), label);
      if (!pick_runs.count(depth))
        pick_runs[depth] = MeasureServer(ledger, tuned, depth, reps_at(depth), "pick");
    }
    JudgeVersus(ledger, tuned, baseline, label, pick_runs, base_runs, &d);
    d.default_seconds_depth0 = SecondsOf(ObjectiveOf(base_runs[0], opt.workload));
    d.tuned_seconds_depth0 = SecondsOf(ObjectiveOf(pick_runs[0], opt.workload));
    if (deep > 0) {
      d.default_seconds_ctx = SecondsOf(ObjectiveOf(base_runs[deep], opt.workload));
      d.tuned_seconds_ctx = SecondsOf(ObjectiveOf(pick_runs[deep], opt.workload));
    }
    if (!d.default_seconds_depth0) d.note = label + " did not produce a measurement";
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

std::optional<Decision> DefaultsWinDecision(const DefaultsComparison& d, const Workload& w) {
  if (d.pick != Versus::kSlower || !d.tuned_objective || !d.default_objective) return std::nullopt;
  const std::string where = d.compared_depth > 0
                                ? fmt::format("with {} tokens in the context", d.compared_depth)
                                : std::string("on an empty context");
  return MakeDecision(
      TunePhase::kDefaults, "llama.cpp's defaults",
      "the defaults are faster beyond the noise on the workload: they are the pick (tune is "
      "never behind them)",
      fmt::format("{} workload {}: tuned settings {:.4f} requests/s (n={}), llama.cpp's defaults "
                  "{:.4f} requests/s (n={}), both measured again before the defaults were "
                  "believed; the defaults: {}",
                  w.name, where, d.tuned_objective->mean, d.tuned_objective->n,
                  d.default_objective->mean, d.default_objective->n, d.how));
}

}  // namespace moetune
