#include "tune/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "tune/measurements.h"

namespace moetune {
namespace {

// Settings that stay fixed along the N curve (everything but N, depth and the test).
using SettingsKey =
    std::tuple<int, std::string, int, int, int, FlashAttn, uint32_t, uint32_t, LoadMode>;

SettingsKey KeyOf(const RunConfig& c) {
  return {c.placement.n_gpu_layers,
          c.placement.OverrideTensor(),
          c.threads,
          c.n_ubatch,
          c.n_batch,
          c.flash_attn,
          c.type_k,
          c.type_v,
          c.load_mode};
}

std::string Describe(const RunConfig& c) {
  std::string s = fmt::format("-ngl {} -t {} -ub {} -b {}", c.placement.n_gpu_layers, c.threads,
                              c.n_ubatch, c.n_batch);
  if (c.flash_attn != FlashAttn::kDefault) s += std::string(" -fa ") + FlashAttnName(c.flash_attn);
  if (c.type_k != ggml_type::kF16 || c.type_v != ggml_type::kF16)
    s += fmt::format(" -ctk {} -ctv {}", GgmlTypeName(c.type_k), GgmlTypeName(c.type_v));
  if (!c.placement.OverrideTensor().empty()) s += " -ot " + c.placement.OverrideTensor();
  if (c.load_mode != LoadMode::kDefault) s += std::string(" -lm ") + LoadModeName(c.load_mode);
  return s;
}

bool IsPrefill(const RunConfig& c) { return c.n_prompt > 0 && c.n_gen == 0; }
bool IsDecode(const RunConfig& c) { return c.n_gen > 0 && c.n_prompt == 0; }

// Merges the results of one configuration and kind (repeated runs, merged
// files) into one summary: pooled samples when they exist.
std::optional<Summary> Pool(const std::vector<const RunResult*>& rs, bool* assumed_n) {
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
    Summary s = ResultStats(*only, 5, &assumed);
    if (assumed && assumed_n != nullptr) *assumed_n = true;
    return s;
  }
  RunResult pooled;
  pooled.samples_ts = samples;
  return ResultStats(pooled);
}

// requests/s = 1 / (P/pp + A/tg), with its spread by the delta method.
std::optional<Estimate> Objective(const std::optional<Summary>& pp,
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

struct Cell {
  std::vector<const RunResult*> prefill, decode;
};

// Builds points (ascending N) from results grouped by N.
std::vector<CurvePoint> Points(const std::map<int, Cell>& by_n, const Workload& w, bool* assumed) {
  std::vector<CurvePoint> pts;
  for (const auto& [n, cell] : by_n) {
    CurvePoint p;
    p.n_cpu_moe = n;
    p.prefill = Pool(cell.prefill, assumed);
    p.decode = Pool(cell.decode, assumed);
    if (!p.prefill && !p.decode) {
      std::vector<const RunResult*> all = cell.prefill;
      all.insert(all.end(), cell.decode.begin(), cell.decode.end());
      p.failure = FailureText(all);
      if (p.failure.empty()) continue;
    }
    p.objective = Objective(p.prefill, p.decode, w);
    pts.push_back(std::move(p));
  }
  return pts;
}

void CompareDimension(const std::vector<const RunResult*>& rs, const std::string& dimension,
                      std::optional<int> prefer_n, const AnalysisOptions& o, Analysis* a) {
  // Group depth-0 results by every setting except `dimension` (N included).
  auto value_of = [&](const RunConfig& c) {
    return dimension == "threads" ? c.threads : c.n_ubatch;
  };
  std::map<std::tuple<int, SettingsKey>, std::map<int, Cell>> groups;
  for (const RunResult* r : rs) {
    if (r->config.n_depth != 0) continue;
    RunConfig c = r->config;
    const int v = value_of(c);
    if (dimension == "threads")
      c.threads = 0;
    else
      c.n_ubatch = 0;
    Cell& cell = groups[{c.placement.n_cpu_moe, KeyOf(c)}][v];
    if (IsPrefill(r->config)) cell.prefill.push_back(r);
    if (IsDecode(r->config)) cell.decode.push_back(r);
  }
  const std::map<int, Cell>* best_group = nullptr;
  int best_n = 0;
  for (const auto& [key, by_value] : groups) {
    if (by_value.size() < 2) continue;
    const int n = std::get<0>(key);
    const bool preferred = prefer_n && n == *prefer_n;
    const bool cur_preferred = best_group && prefer_n && best_n == *prefer_n;
    if (!best_group || (preferred && !cur_preferred) ||
        (preferred == cur_preferred && by_value.size() > best_group->size())) {
      best_group = &by_value;
      best_n = n;
    }
  }
  if (!best_group) return;
  DimensionComparison d;
  d.dimension = dimension;
  d.n_cpu_moe = best_n;
  bool assumed = false;
  for (const auto& [v, cell] : *best_group) {
    DimensionComparison::Entry e;
    e.value = v;
    e.prefill = Pool(cell.prefill, &assumed);
    e.decode = Pool(cell.decode, &assumed);
    e.objective = Objective(e.prefill, e.decode, o.workload);
    d.entries.push_back(std::move(e));
  }
  const DimensionComparison::Entry* best = nullptr;
  for (const auto& e : d.entries) {
    if (e.objective && (!best || e.objective->mean > best->objective->mean)) best = &e;
  }
  if (!best) return;
  const int best_value = best->value;
  const Estimate best_obj = *best->objective;
  std::optional<int> chosen;
  for (auto& e : d.entries) {
    if (!e.objective) continue;
    e.versus_best = e.value == best_value ? 1 : CompareEstimates(*e.objective, best_obj, o.rules);
    // Ties go to the smaller value: fewer threads leave cores to the rest of
    // the machine; a smaller micro-batch needs a smaller compute buffer.
    if (e.versus_best >= 0 && !chosen) chosen = e.value;
  }
  d.chosen = *chosen;
  const int tied = static_cast<int>(std::count_if(
      d.entries.begin(), d.entries.end(), [](const auto& e) { return e.versus_best == 0; }));
  if (d.chosen == best_value && tied == 0) {
    d.reason =
        fmt::format("{} {} is faster than every other value beyond the noise", dimension, d.chosen);
  } else if (d.chosen == best_value) {
    d.reason = fmt::format("{} {} measured best", dimension, d.chosen);
  } else {
    d.reason = fmt::format(
        "{} {} is within the noise of the best measured ({}); a tie goes to the smaller value",
        dimension, d.chosen, best_value);
  }
  if (dimension == "threads")
    a->recommendation.threads = d.chosen;
  else
    a->recommendation.n_ubatch = d.chosen;
  a->comparisons.push_back(std::move(d));
}

}  // namespace

Analysis Analyze(const std::vector<RunResult>& all, const AnalysisOptions& o) {
  Analysis a;
  if (all.empty()) {
    a.notes.push_back("no results to analyse");
    return a;
  }
  // One model at a time: the most measured one.
  std::map<std::string, int> per_model;
  for (const auto& r : all) ++per_model[r.config.model];
  a.model = std::max_element(per_model.begin(), per_model.end(), [](const auto& x, const auto& y) {
              return x.second < y.second;
            })->first;
  if (per_model.size() > 1) {
    a.notes.push_back(fmt::format(
        "the results cover {} models; analysing '{}' ({} results), the most measured one",
        per_model.size(), a.model, per_model[a.model]));
  }
  std::vector<const RunResult*> rs;
  int combined = 0;
  for (const auto& r : all) {
    if (r.config.model != a.model) continue;
    if (r.config.n_prompt > 0 && r.config.n_gen > 0) {
      ++combined;
      continue;
    }
    rs.push_back(&r);
    a.has_prefill = a.has_prefill || IsPrefill(r.config);
    a.has_decode = a.has_decode || IsDecode(r.config);
  }
  if (combined > 0) {
    a.notes.push_back(fmt::format(
        "{} combined prefill+decode test(s) (-pg) left out: they do not separate the two speeds",
        combined));
  }
  if (rs.empty()) {
    a.notes.push_back("no prefill (-p) or decode (-n) results to analyse");
    return a;
  }
  if (!a.has_prefill) {
    a.notes.push_back(
        "decode only: the VRAM cliff shows in prefill first; measure prefill too (-p 512)");
  }

  // The slice for the N curve: the fixed settings with the most distinct N.
  std::map<SettingsKey, std::set<int>> n_per_key;
  std::map<SettingsKey, int> count_per_key;
  for (const RunResult* r : rs) {
    n_per_key[KeyOf(r->config)].insert(r->config.placement.n_cpu_moe);
    ++count_per_key[KeyOf(r->config)];
  }
  const SettingsKey* key = nullptr;
  for (const auto& [k, ns] : n_per_key) {
    if (!key || ns.size() > n_per_key[*key].size() ||
        (ns.size() == n_per_key[*key].size() && count_per_key[k] > count_per_key[*key])) {
      key = &k;
    }
  }
  const RunResult* sample = nullptr;
  std::map<int, std::map<int, Cell>> by_depth;  // depth -> N -> results
  std::map<int, int> test_tokens;               // depth -> tokens a test adds to it
  for (const RunResult* r : rs) {
    if (KeyOf(r->config) != *key) continue;
    sample = r;
    int& tokens = test_tokens[r->config.n_depth];
    tokens = std::max(tokens, r->config.n_prompt + r->config.n_gen);
    Cell& c = by_depth[r->config.n_depth][r->config.placement.n_cpu_moe];
    (IsPrefill(r->config) ? c.prefill : c.decode).push_back(r);
  }
  a.settings = Describe(sample->config);
  bool assumed = false;
  for (const auto& [depth, by_n] : by_depth) {
    CurveAtDepth c;
    c.depth = depth;
    c.points = Points(by_n, o.workload, &assumed);
    c.cliffs = FindCliffs(c.points, o.rules);
    c.shape = ClassifyCurve(c.points, c.cliffs, o.rules);
    a.curves.push_back(std::move(c));
  }
  if (assumed) {
    a.notes.push_back(
        "some results carry a mean and standard deviation but no samples; 5 repetitions "
        "(llama-bench's default) were assumed for their intervals");
  }
  const CurveAtDepth& base = a.curves.front();
  a.shape = base.shape;
  a.cliffs = base.cliffs;
  if (base.depth != 0) {
    a.notes.push_back(fmt::format(
        "no depth-0 results; the shallowest curve (depth {}) stands in for it", base.depth));
  }

  // Rejections: failed placements, the GPU side of the first cliff, collapse with depth.
  std::map<int, std::string> rejected;
  for (const auto& p : base.points) {
    if (p.failed()) rejected[p.n_cpu_moe] = "failed to run: " + p.failure;
  }
  if (!base.cliffs.empty()) {
    const Cliff& top = base.cliffs.front();  // found walking from the CPU end
    for (const auto& p : base.points) {
      if (p.n_cpu_moe < top.n_cpu_moe_safe && !rejected.count(p.n_cpu_moe)) {
        rejected[p.n_cpu_moe] = fmt::format(
            "beyond the cliff: prefill drops to {:.0f}% between N={} and N={} (VRAM overflow)",
            top.prefill_ratio * 100, top.n_cpu_moe_safe, top.n_cpu_moe_collapsed);
      }
    }
    if (top.n_cpu_moe_safe - top.n_cpu_moe_collapsed > 1) {
      a.notes.push_back(fmt::format(
          "the VRAM boundary lies somewhere between N={} and N={}; measuring the values between "
          "them can recover up to {} layer(s)",
          top.n_cpu_moe_collapsed, top.n_cpu_moe_safe,
          top.n_cpu_moe_safe - top.n_cpu_moe_collapsed - 1));
    }
  }
  std::map<int, const CurvePoint*> base_by_n;
  for (const auto& p : base.points) base_by_n[p.n_cpu_moe] = &p;
  for (size_t i = 1; i < a.curves.size(); ++i) {
    const CurveAtDepth& deep = a.curves[i];
    const bool counts = !o.target_ctx || deep.depth <= *o.target_ctx;
    // N -> what goes wrong at this depth ("" when nothing), for the placements measured here.
    std::map<int, std::string> bad_here;
    for (const auto& p : deep.points) {
      bad_here[p.n_cpu_moe] = p.failed() ? "fails to run" : "";
      // A placement that does not even run at a depth the user will reach is out.
      if (p.failed() && counts && !rejected.count(p.n_cpu_moe)) {
        rejected[p.n_cpu_moe] = fmt::format("fails to run at depth {}: {}", deep.depth, p.failure);
      }
    }
    std::vector<DepthCheck> checks;
    std::vector<double> base_tps, added;  // per check: depth-0 prefill, seconds/token depth adds
    for (const auto& p : deep.points) {
      auto it = base_by_n.find(p.n_cpu_moe);
      if (it == base_by_n.end() || !p.prefill || !it->second->prefill ||
          it->second->prefill->max <= 0 || p.prefill->max <= 0)
        continue;
      // Each test's fastest repetition: interference only ever slows a run
      // down, so one slow repetition must not pass for a collapse.
      const double b = it->second->prefill->max, d = p.prefill->max;
      checks.push_back(
          {p.n_cpu_moe, deep.depth, deep.depth + test_tokens[deep.depth], d / b, 0, false});
      base_tps.push_back(b);
      added.push_back(1.0 / d - 1.0 / b);
    }
    for (size_t k = 0; k < checks.size(); ++k) {
      DepthCheck& c = checks[k];
      // The healthiest placement of comparable speed: attention over the cache
      // costs every placement about the same time per token, which is a larger
      // share of a fast placement's time, so a much slower one is no yardstick.
      size_t ref = k;
      for (size_t j = 0; j < checks.size(); ++j) {
        if (base_tps[j] >= base_tps[k] / 3 && checks[j].ratio > checks[ref].ratio) ref = j;
      }
      c.reference_ratio = checks[ref].ratio;
      // A collapse: the ratio falls far below the reference's, and depth adds
      // several times the reference's time per token (a spill, not attention).
      c.collapsed = ref != k && c.ratio < o.collapse_ratio * c.reference_ratio &&
                    added[k] > 3 * std::max(0.0, added[ref]);
      if (c.collapsed) bad_here[c.n_cpu_moe] = "collapses";
      if (c.collapsed && counts && !rejected.count(c.n_cpu_moe)) {
        rejected[c.n_cpu_moe] = fmt::format(
            "prefill collapses with depth: at depth {} it keeps {:.0f}% of its depth-0 speed, "
            "while N={} keeps {:.0f}%",
            c.depth, c.ratio * 100, checks[ref].n_cpu_moe, c.reference_ratio * 100);
      }
      a.depth_checks.push_back(c);
    }
    // A placement not measured at this depth with more experts on the GPU than
    // the next measured one, which fails or collapses here, holds more in VRAM
    // and would do the same.
    if (counts) {
      for (const auto& p : base.points) {
        if (bad_here.count(p.n_cpu_moe) || rejected.count(p.n_cpu_moe)) continue;
        auto above = bad_here.upper_bound(p.n_cpu_moe);
        if (above != bad_here.end() && !above->second.empty()) {
          rejected[p.n_cpu_moe] = fmt::format(
              "more experts on the GPU than N={}, which {} at depth {}: it holds more in VRAM",
              above->first, above->second, deep.depth);
        }
      }
    }
    if (checks.empty()) continue;
    if (checks.size() < 2) {
      a.notes.push_back(fmt::format(
          "depth {}: one placement measured, so collapse cannot be told from normal attention "
          "cost; measure a more conservative N at the same depth too",
          deep.depth));
    }
  }
  for (const auto& [n, why] : rejected) a.rejected.push_back({n, why});

  // The recommendation on the shallowest curve.
  Recommendation& rec = a.recommendation;
  const CurvePoint* best = nullptr;
  for (const auto& p : base.points) {
    if (rejected.count(p.n_cpu_moe) || !p.objective) continue;
    if (!best || p.objective->mean > best->objective->mean) best = &p;
  }
  if (!best) {
    rec.rule = "nothing usable";
    rec.reason = "every measured placement failed or was rejected; see the rejections";
  } else {
    int safest_tie = best->n_cpu_moe, edge = best->n_cpu_moe;
    for (const auto& p : base.points) {
      if (rejected.count(p.n_cpu_moe) || !p.objective) continue;
      if (CompareEstimates(*p.objective, *best->objective, o.rules) == 0) {
        safest_tie = std::max(safest_tie, p.n_cpu_moe);
        edge = std::min(edge, p.n_cpu_moe);
      }
    }
    rec.edge = edge;
    const int max_n = base.points.back().n_cpu_moe;
    std::set<int> measured_n;
    for (const auto& p : base.points) measured_n.insert(p.n_cpu_moe);
    const std::string what = a.has_prefill && a.has_decode
                                 ? fmt::format("time to answer ({} workload)", o.workload.name)
                                 : (a.has_prefill ? "prefill" : "decode");
    if (base.shape == CurveShape::kFlat) {
      rec.n_cpu_moe = safest_tie;
      rec.rule = "no placement effect";
      rec.reason = fmt::format(
          "placement does not change {} beyond the noise; the most conservative N measured ({}) "
          "is as fast and the safest",
          what, safest_tie);
    } else if (base.shape == CurveShape::kMonotonic) {
      rec.n_cpu_moe = safest_tie;
      rec.rule = "every split overflows";
      rec.reason = fmt::format(
          "{} only falls as experts move to the GPU: keep the experts on the CPU (N={})", what,
          safest_tie);
      if (safest_tie == max_n) {
        a.notes.push_back(fmt::format(
            "the best N is the largest one measured ({}); if the model has more layers, measure "
            "larger N too",
            max_n));
      }
    } else {
      // Safety rule: one layer more conservative than the edge, unless the edge
      // is proven safe at the target context with measured GPU headroom.
      bool proven = false;
      std::string proof;
      auto headroom = std::find_if(o.gpu_headroom.begin(), o.gpu_headroom.end(),
                                   [&](const auto& h) { return h.first == edge; });
      bool deep_ok = false;
      for (const auto& c : a.depth_checks) {
        if (c.n_cpu_moe == edge && !c.collapsed && o.target_ctx && c.context >= *o.target_ctx)
          deep_ok = true;
      }
      if (headroom != o.gpu_headroom.end() && headroom->second > 0 && deep_ok) {
        proven = true;
      } else if (headroom == o.gpu_headroom.end() || headroom->second <= 0) {
        proof = "no measured GPU memory headroom for it";
      } else {
        proof = o.target_ctx
                    ? fmt::format("no measurement at the target context ({} tokens)", *o.target_ctx)
                    : "no target context given (--ctx)";
      }
      if (proven) {
        rec.n_cpu_moe = safest_tie;
        rec.rule = "edge proven safe";
        rec.reason = fmt::format(
            "N={} is best for {} and was measured at the target context without collapse, with "
            "GPU headroom left",
            safest_tie, what);
      } else {
        const int pick = std::max(safest_tie, edge + 1);
        rec.n_cpu_moe = pick;
        rec.rule = "safety rule";
        rec.measured = measured_n.count(pick) > 0;
        rec.reason = pick == safest_tie && safest_tie > edge
                         ? fmt::format(
                               "N={} is within the noise of the best (N={}) and already one layer "
                               "more conservative than the edge",
                               pick, best->n_cpu_moe)
                         : fmt::format(
                               "N={} is best for {}; one layer more conservative than the edge "
                               "({}) protects against overflow as the context grows",
                               edge, what, proof);
        if (!rec.measured) {
          a.notes.push_back(fmt::format(
              "the recommended N={} was not measured: the safety rule implies it (one layer more "
              "conservative than N={})",
              pick, edge));
        }
      }
    }
  }
  CompareDimension(rs, "threads", rec.n_cpu_moe, o, &a);
  CompareDimension(rs, "n_ubatch", rec.n_cpu_moe, o, &a);
  return a;
}

}  // namespace moetune
