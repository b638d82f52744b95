#include "tune/grid_test_util.h"

#include <fmt/format.h>

#include <algorithm>

#include "tune/journal.h"

namespace moetune {
namespace {

std::vector<FlashAttn> FlashAttnValues(const TuneSpace& space) {
  std::vector<FlashAttn> v = {space.base.flash_attn};
  if (space.try_flash_attn) {
    for (FlashAttn fa : {FlashAttn::kOn, FlashAttn::kOff}) {
      if (std::find(v.begin(), v.end(), fa) == v.end()) v.push_back(fa);
    }
  }
  return v;
}

std::vector<int> Threads(const TuneSpace& space) {
  std::vector<int> t;
  for (const auto& c : space.threads) t.push_back(c.threads);
  if (t.empty()) t.push_back(1);
  if (space.threads.size() >= 2) std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  // One candidate: the tuner keeps it without measuring others.
  if (space.threads.size() < 2) t.resize(1);
  return t;
}

// The objective of N on the slice's depth-0 curve.
std::optional<Estimate> ObjectiveAt(const Analysis& a, int n) {
  if (a.curves.empty() || a.curves.front().depth != 0) return std::nullopt;
  for (const auto& p : a.curves.front().points) {
    if (p.n_cpu_moe == n) return p.objective;
  }
  return std::nullopt;
}

// The noise-free objective of a configuration from the simulated engine's
// records (predicted tokens/s), when both tests carry one.
std::optional<double> PredictedObjective(const GridResult& g, const TuneSettings& s) {
  std::optional<double> pp, tg;
  for (bool prefill : {true, false}) {
    const std::string key = Journal::Key(TuneRunConfig(g.space, g.options, s, prefill, 0));
    for (const auto& r : g.results) {
      if (!r.ok() || !r.record.is_object() || !r.record.contains("predicted_tps")) continue;
      if (Journal::Key(r.config) != key || !r.record["predicted_tps"].is_number()) continue;
      (prefill ? pp : tg) = r.record["predicted_tps"].get<double>();
      break;
    }
  }
  if (!pp || !tg) return std::nullopt;
  const double t = g.options.workload.SecondsPerRequest(*pp, *tg);
  return t > 0 ? std::optional<double>(1.0 / t) : std::nullopt;
}

}  // namespace

std::vector<TuneSettings> GridCandidateSettings(const TuneSpace& space, const TuneOptions& o) {
  std::vector<int> ubs = MicroBatchCandidates(space, o);
  if (ubs.size() < 2) ubs = {space.base.n_ubatch};
  std::vector<uint32_t> kvs = {space.base.type_k};
  if (space.try_kv_quant && space.placement_matters && space.moe &&
      space.base.type_k != ggml_type::kQ8_0)
    kvs.push_back(ggml_type::kQ8_0);
  std::vector<LoadMode> lms = {LoadMode::kDefault};
  if (space.try_load_mode) lms.push_back(LoadMode::kNone);
  std::vector<TuneSettings> out;
  for (int order = 0; order <= static_cast<int>(space.other_orders.size()); ++order) {
    for (const auto& kv : kvs) {
      for (const auto& lm : lms) {
        for (const auto& fa : FlashAttnValues(space)) {
          // A quantized V cache needs flash attention (the tuner sets it on).
          if (kv != space.base.type_k && fa != FlashAttn::kOn) continue;
          for (int ub : ubs) {
            for (int t : Threads(space)) {
              TuneSettings s;
              s.threads = t;
              s.ubatch = ub;
              s.batch = std::max(space.base.n_batch, ub);
              s.flash_attn = fa;
              s.kv_type = kv;
              s.load_mode = lm;
              s.device_order = order;
              out.push_back(s);
            }
          }
        }
      }
    }
  }
  return out;
}

std::vector<int> GridPlacements(const TuneSpace& space) {
  if (!space.moe) return {0};
  if (!space.placement_matters) return {space.fixed_n};
  std::vector<int> ns;
  for (int n = 0; n <= space.n_layer; ++n) ns.push_back(n);
  return ns;
}

GridResult RunExhaustiveGrid(Engine& engine, const TuneSpace& space, const TuneOptions& options) {
  GridResult g;
  g.space = space;
  g.options = options;
  g.options.n_prompt = MicroBatchPrompt(space, options);
  std::vector<int> depths = {0};
  if (space.placement_matters && space.moe) {
    for (int d : LongContextDepths(g.options)) depths.push_back(d);
  }
  const std::vector<int> ns = GridPlacements(space);
  for (TuneSettings s : GridCandidateSettings(space, g.options)) {
    // One engine call per (settings, N): one model load, as the tuner measures.
    std::vector<RunResult> slice;
    for (int n : ns) {
      s.n = n;
      std::vector<RunConfig> want;
      for (int d : depths) {
        for (bool prefill : {true, false}) {
          RunConfig c = TuneRunConfig(space, g.options, s, prefill, d);
          if (d > 0) c.repetitions = g.options.depth_repetitions;
          want.push_back(c);
        }
      }
      BenchRun run = engine.Run(want);
      for (auto& r : run.results) {
        ++g.runs;
        g.samples += static_cast<std::size_t>(std::max(1, r.config.repetitions));
        slice.push_back(r);
        g.results.push_back(std::move(r));
      }
    }
    AnalysisOptions ao;
    ao.workload = g.options.workload;
    ao.rules = g.options.rules.analysis;
    ao.target_ctx = g.options.ctx;
    ao.take_proven_edge = g.options.take_proven_edge;
    if (space.headroom) {
      for (int n : ns) ao.gpu_headroom.push_back({n, space.headroom(n)});
    }
    GridSlice gs;
    gs.settings = s;
    gs.analysis = Analyze(slice, ao);
    if (gs.analysis.recommendation.n_cpu_moe) {
      gs.settings.n = std::clamp(*gs.analysis.recommendation.n_cpu_moe, ns.front(), ns.back());
      gs.objective = ObjectiveAt(gs.analysis, gs.settings.n);
      gs.usable = gs.objective.has_value();
    }
    g.slices.push_back(std::move(gs));
  }
  // The tie rule over the slices in preference order: the earliest tied with
  // the best is the pick.
  std::vector<std::optional<Estimate>> objectives;
  for (const auto& slice : g.slices) {
    objectives.push_back(slice.usable ? slice.objective : std::nullopt);
  }
  g.pick = Choose(objectives, g.options.rules.analysis.curve).chosen;
  return g;
}

std::string DescribeSettings(const TuneSettings& s, const TuneSpace* space) {
  std::string d = fmt::format("-ncmoe {} -t {} -ub {}", s.n, s.threads, s.ubatch);
  if (space != nullptr && !space->devices.empty()) {
    std::string names;
    for (const DeviceBudget& b : OrderDevices(*space, s))
      names += (names.empty() ? "" : ",") + b.name;
    d += " -dev " + names;
  } else if (s.device_order > 0) {
    d += fmt::format(" (device order {})", s.device_order);
  }
  if (s.flash_attn != FlashAttn::kDefault) d += std::string(" -fa ") + FlashAttnName(s.flash_attn);
  if (s.kv_type != ggml_type::kF16) d += " -ctk/v " + GgmlTypeName(s.kv_type);
  if (s.load_mode == LoadMode::kNone) d += " -lm none";
  return d;
}

GridVerdict JudgeAgainstGrid(const GridResult& g, const ServerConfig& pick) {
  GridVerdict v;
  TuneSettings want = SettingsOf(g.space, pick);
  const GridSlice* slice = nullptr;
  for (const auto& s : g.slices) {
    TuneSettings other = s.settings;
    other.n = want.n;
    if (other == want) slice = &s;
  }
  if (slice == nullptr) {
    v.explanation =
        "the pick's settings (" + DescribeSettings(want, &g.space) + ") are not in the grid";
    return v;
  }
  v.found = true;
  v.slice_edge = slice->analysis.recommendation.edge;
  v.slice_rule = slice->analysis.recommendation.rule;
  v.objective = ObjectiveAt(slice->analysis, want.n);
  if (!g.pick) {
    v.explanation = "the grid found nothing usable";
    return v;
  }
  const GridSlice& best = g.slices[*g.pick];
  v.exact = best.settings == want;
  if (const Rejection* r = slice->analysis.RejectionOf(want.n)) v.rejection = *r;
  // The safety rule asks for one layer more than the edge; the other rules
  // accept the edge itself (proven at the target context, placement makes no
  // difference, or the edge is already the all-CPU end).
  const bool edge_ok = v.slice_rule != RecommendationRule::kSafetyRule;
  v.safe = !v.rejection && slice->usable && v.slice_edge >= 0 &&
           (want.n > v.slice_edge || (want.n == v.slice_edge && edge_ok));
  v.tie = v.objective && best.objective &&
          (v.exact ||
           CompareEstimates(*v.objective, *best.objective, g.options.rules.analysis.curve) >= 0);
  const auto mine = PredictedObjective(g, want);
  const auto theirs = PredictedObjective(g, best.settings);
  if (mine && theirs && *theirs > 0) v.predicted_ratio = *mine / *theirs;
  if (v.exact) {
    v.explanation = "the grid picks the same configuration";
  } else {
    v.explanation = fmt::format(
        "grid pick {} ({:.4f} requests/s), tune pick {} ({}); on the pick's slice the edge is "
        "N={} ({}){}",
        DescribeSettings(best.settings, &g.space), best.objective->mean,
        DescribeSettings(want, &g.space),
        v.objective ? fmt::format("{:.4f} requests/s, {}", v.objective->mean,
                                  v.tie ? "within the noise" : "worse beyond the noise")
                    : std::string("not measured"),
        v.slice_edge, RecommendationRuleName(v.slice_rule),
        v.rejection
            ? fmt::format("; the pick is rejected there ({})", RejectionKindName(v.rejection->kind))
            : "");
  }
  return v;
}

}  // namespace moetune
