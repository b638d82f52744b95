#include "tune/placement_phases.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/flags.h"

namespace moetune {
namespace {

std::string Join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// The settings `cur` at each of `ns`.
std::vector<TuneSettings> AtPlacements(const TuneSettings& cur, const std::vector<int>& ns) {
  std::vector<TuneSettings> out;
  for (int n : ns) {
    TuneSettings s = cur;
    s.n = n;
    out.push_back(s);
  }
  return out;
}

// The placement phase when placement is not searched: a dense model (no
// routed experts) or an engine without a GPU.
PlacementOutcome UnsearchedPlacement(const TuneSpace& space, TuneSettings cur) {
  PlacementOutcome out;
  out.tuned = false;
  if (!space.moe) {
    cur.n = 0;
    out.decision = MakeDecision(TunePhase::kPlacement, "-ngl from the plan", "dense model",
                                "no routed experts: --n-cpu-moe does not apply");
  } else {
    cur.n = space.fixed_n;
    out.decision = MakeDecision(
        TunePhase::kPlacement, "-ngl 0", "no GPU in the engine",
        "the engine has no GPU device, so where the experts live does not change speed: "
        "placement was not measured; every layer runs on the CPU (-ngl 0, no --n-cpu-moe)");
  }
  out.settings = cur;
  return out;
}

// The first N measured: the rules' offsets around the predicted boundary b0.
std::vector<int> StartingPlacements(int b0, int n_layer, const TuneRules& rules) {
  std::vector<int> next;
  for (int offset : rules.start_offsets) {
    const int n = b0 + offset;
    if (n >= 0 && n <= n_layer && std::find(next.begin(), next.end(), n) == next.end())
      next.push_back(n);
  }
  return next;
}

// The steps of the walks toward the GPU and toward the CPU, each growing
// every round it is taken.
struct Steps {
  int toward_gpu = 0;
  int toward_cpu = 0;
  int growth = 1;
};

// The placements the reading `a` of those `measured` asks for next: toward the
// CPU while nothing is usable, the bisection of a boundary between a bad N and
// the edge, toward the GPU while the edge is the lowest N measured, the edge's
// safer neighbour (the safety rule needs it), and toward the CPU while the
// curve still rises at its CPU end.
std::vector<int> NextPlacements(const Analysis& a, const std::set<int>& measured, int n_layer,
                                bool several_devices, Steps* steps) {
  std::vector<int> next;
  auto add = [&](int n) {
    if (n >= 0 && n <= n_layer && !measured.count(n) &&
        std::find(next.begin(), next.end(), n) == next.end())
      next.push_back(n);
  };
  // The highest N known to be bad (failed or beyond a cliff).
  int floor = -1;
  for (const auto& rj : a.rejected) {
    if (rj.at_depth0()) floor = std::max(floor, rj.n_cpu_moe);
  }
  const int edge = a.recommendation.edge;
  const int lo = *measured.begin(), hi = *measured.rbegin();
  if (edge < 0) {  // nothing usable yet: move toward the CPU
    add(std::min(n_layer, hi + steps->toward_cpu));
    steps->toward_cpu *= steps->growth;
    return next;
  }
  if (floor >= 0 && floor < edge) {
    if (edge - floor > 1) add(floor + (edge - floor) / 2);  // bisect the boundary
  } else if (edge == lo && edge > 0) {
    // Still improving toward the GPU, or no worse (a few neighbours within
    // the noise of each other say nothing about the rest of the curve): keep going.
    add(edge - steps->toward_gpu);
    steps->toward_gpu *= steps->growth;
  }
  // Across several devices the split changes with N (the tightest device's
  // room decides it), so a window of N within the noise says nothing about the
  // far end, where fewer layers may cross a slow link: it is measured once.
  if (a.shape == CurveShape::kFlat && several_devices) add(n_layer);
  if (a.shape != CurveShape::kFlat) add(edge + 1);  // the safety rule needs it measured
  if ((a.shape == CurveShape::kMonotonic || edge == hi) && hi < n_layer &&
      a.shape != CurveShape::kFlat) {
    add(std::min(n_layer, hi + steps->toward_cpu));
    steps->toward_cpu *= steps->growth;
  }
  return next;
}

// The decision that follows the placement reading `a`.
Decision PlacementDecision(const Analysis& a, const std::set<int>& measured, int b0, int n) {
  std::vector<int> ns(measured.begin(), measured.end());
  std::string evidence = fmt::format(
      "measured N = {} at depth 0 (predicted boundary N = {}); "
      "curve {}",
      Join(ns), b0, CurveShapeName(a.shape));
  for (const auto& c : a.cliffs) {
    evidence += fmt::format("; cliff between N={} and N={} (prefill x{:.2f})", c.n_cpu_moe_safe,
                            c.n_cpu_moe_collapsed, c.prefill_ratio);
  }
  Decision d = MakeDecision(TunePhase::kPlacement, FlagText(FlagId::kNCpuMoe, n),
                            RecommendationRuleName(a.recommendation.rule), evidence);
  d.reading = a.recommendation;
  return d;
}

// Rejected for what happens at depth (measured there, not inferred).
bool BadAtDepth(const Analysis& a, int n) {
  const Rejection* r = a.RejectionOf(n);
  return r != nullptr && r->measured_at_depth();
}

// The placements to validate at depth this round: the edge, the
// recommendation, the references (first round only) and, when a placement
// fails or collapses at depth, the bisection toward the nearest healthy one
// above it, so that the boundary at the target context is known to one layer.
std::set<int> DepthCandidates(const Analysis& a, const std::set<int>& validated,
                              const std::vector<int>& first_round) {
  std::set<int> cands(first_round.begin(), first_round.end());
  if (a.recommendation.edge >= 0) cands.insert(a.recommendation.edge);
  if (a.recommendation.n_cpu_moe) cands.insert(*a.recommendation.n_cpu_moe);
  int worst_bad = -1;
  for (int n : validated) {
    if (BadAtDepth(a, n)) worst_bad = std::max(worst_bad, n);
  }
  if (worst_bad >= 0) {
    for (int n : validated) {
      if (n > worst_bad && !BadAtDepth(a, n)) {
        if (n - worst_bad > 1) cands.insert(worst_bad + (n - worst_bad) / 2);
        break;
      }
    }
  }
  return cands;
}

// Ties pull the recommendation away from the edge (a tie goes to the safer
// N): more repetitions at depth 0 for the placements between them narrow the
// tie. False when there is nothing (more) to narrow.
bool NarrowTie(TuneLedger& ledger, const TuneSettings& cur, const Analysis& a,
               const std::set<int>& at_depth0, int* narrowed) {
  const TuneOptions& opt = ledger.options();
  const int edge = a.recommendation.edge;
  const int rec = a.recommendation.n_cpu_moe.value_or(-1);
  // A pick taken for its proof at the target context is no tie to narrow.
  if (*narrowed >= opt.rules.tie_narrowing_rounds || ledger.out_of_time() || edge < 0 ||
      rec <= edge + 1 || a.recommendation.rule == RecommendationRule::kProvenAtTarget)
    return false;
  // The best, the recommendation and every placement between the edge and it
  // whose interval is too wide to tell (an undecided comparison counts as a
  // tie in the reading, and pulls the recommendation toward the CPU on the
  // strength of one disturbed repetition); the tied ones with tight intervals
  // are what they are.
  std::vector<TuneSettings> more;
  bool too_wide = false;
  for (int n : at_depth0) {
    if ((n < edge || n > rec) && n != a.recommendation.best_n) continue;
    TuneSettings s = cur;
    s.n = n;
    const TuneLedger::Scored sc = ledger.Score(s, 0);
    if (!sc.pp || static_cast<int>(sc.pp->n) + opt.repetitions > opt.max_repetitions) continue;
    const bool wide = sc.objective && TooWideToTell(*sc.objective, opt.rules.analysis.curve);
    too_wide = too_wide || wide;
    if (wide || n == rec || n == edge || n == a.recommendation.best_n) more.push_back(s);
  }
  if (more.size() < 2 && !too_wide) return false;
  ++*narrowed;
  ledger.Measure(more, 0, opt.repetitions, "placement (more repetitions)");
  return true;
}

// Whether the plan puts placement `n` over the GPU budget at the target
// context: no room there even without the margin. The memory plan is exact to
// a percent (docs/memory.md), so such a placement spills or fails there; it is
// measured at the first depth (a quarter of the context, where it may still
// fit, and where a collapse shows), but not filled to the target context,
// which would only confirm the plan after minutes at the collapsed speed.
bool NoRoomAtTarget(const TuneSpace& space, const TuneSettings& cur, int n) {
  if (!space.room) return false;
  const std::optional<int64_t> room = space.room(n, cur.ubatch, cur.kv_type);
  return room && *room < 0;
}

// Collapse is relative: a placement that should stay healthy at the target
// context is measured too, the plan's boundary there (it fits with the
// margin) when it is more conservative than the recommendation.
std::vector<int> DepthReferences(const TuneSpace& space, const Analysis& a) {
  if (!a.recommendation.n_cpu_moe) return {};
  return {std::clamp(std::max(space.predicted_boundary, *a.recommendation.n_cpu_moe), 0,
                     space.n_layer)};
}

// Measures `todo` at each depth, the most conservative placement first: it
// is the reference the others' collapse is read against, and the proof the
// pick needs when the budget ends early. What fails or collapses at a depth,
// and every more aggressive placement (inferred: more experts on the GPU only
// leaves less room for the cache), is not filled to that depth or deeper:
// the cache only grows, and filling it at a collapsed speed is the most
// expensive measurement of a tune.
void MeasureAtDepths(TuneLedger& ledger, const TuneSettings& cur, const std::vector<int>& depths,
                     std::vector<int>* todo, Analysis* a, std::set<int>* no_room) {
  const TuneOptions& opt = ledger.options();
  std::sort(todo->begin(), todo->end(), std::greater<>());
  for (int d : depths) {
    std::optional<int> worst;  // the most conservative placement in trouble at d
    for (int n : *todo) {
      if (worst && n < *worst) continue;
      if (d == depths.back() && depths.size() > 1 && NoRoomAtTarget(ledger.space(), cur, n)) {
        no_room->insert(n);
        continue;
      }
      ledger.Measure(AtPlacements(cur, {n}), d, opt.depth_repetitions, "long context");
      if (ledger.out_of_time()) return;
      *a = ledger.AnalyzeNow(cur, true);
      for (int m : *todo) {
        if (BadAtDepth(*a, m) && (!worst || m > *worst)) worst = m;
      }
    }
    if (worst) std::erase_if(*todo, [&](int n) { return n <= *worst; });
  }
}

// The rounds of the long-context validation: each measures the new
// candidates at every depth (and at depth 0 when they lack it), or narrows a
// tie when there is no new candidate.
void ValidateAtDepths(TuneLedger& ledger, const TuneSettings& cur, const std::vector<int>& depths) {
  const TuneOptions& opt = ledger.options();
  const TuneSpace& space = ledger.space();
  std::set<int> validated, at_depth0;
  for (const auto& r : ledger.PlacementResults(cur)) {
    if (r.config.n_depth == 0) at_depth0.insert(r.config.placement.n_cpu_moe);
  }
  Analysis a = ledger.AnalyzeNow(cur, true);
  const std::vector<int> references = DepthReferences(space, a);
  std::set<int> no_room;
  int narrowed = 0;
  for (int round = 0; round < opt.rules.long_context_rounds; ++round) {
    std::vector<int> todo, fresh;
    for (int n : DepthCandidates(a, validated, round == 0 ? references : std::vector<int>{})) {
      if (!validated.insert(n).second) continue;
      todo.push_back(n);
      if (!at_depth0.count(n)) fresh.push_back(n);
    }
    if (todo.empty()) {
      // Any new candidate of a narrowed tie is validated in the next round.
      if (!NarrowTie(ledger, cur, a, at_depth0, &narrowed)) break;
      a = ledger.AnalyzeNow(cur, true);
      continue;
    }
    // The ratio to depth 0 needs depth 0 too.
    if (!fresh.empty())
      ledger.Measure(AtPlacements(cur, fresh), 0, opt.repetitions, "long context");
    at_depth0.insert(fresh.begin(), fresh.end());
    MeasureAtDepths(ledger, cur, depths, &todo, &a, &no_room);
    if (ledger.out_of_time()) break;
  }
  if (!no_room.empty()) {
    ledger.AddNote(fmt::format(
        "not filled to the target context: the plan puts N = {} over the GPU budget at {} tokens "
        "of context (filling it at a spilled speed takes many minutes per run); none of them is "
        "picked unproven",
        Join(std::vector<int>(no_room.begin(), no_room.end())), opt.ctx));
  }
}

// The decision that follows the reading at depth `a`, N moved from `before`.
Decision LongContextDecision(const Analysis& a, int before, int n) {
  Decision d =
      MakeDecision(TunePhase::kLongContext, FlagText(FlagId::kNCpuMoe, n),
                   RecommendationRuleName(a.recommendation.rule) +
                       (before != n ? fmt::format(" (changed from {})", before) : std::string()),
                   "");
  d.depth_checks = a.depth_checks;
  for (const auto& r : a.rejected) {
    if (r.kind == RejectionKind::kFailsAtDepth || r.kind == RejectionKind::kInferredAtDepth)
      d.rejections.push_back(r);
  }
  if (d.depth_checks.empty() && d.rejections.empty()) d.evidence = "no depth measurement completed";
  d.reading = a.recommendation;
  return d;
}

}  // namespace

PlacementOutcome RunPlacementPhase(TuneLedger& ledger, TuneSettings cur) {
  ledger.set_phase(TunePhase::kPlacement);
  const TuneSpace& space = ledger.space();
  const TuneOptions& opt = ledger.options();
  if (!space.moe || !space.placement_matters) return UnsearchedPlacement(space, cur);
  const int n_layer = space.n_layer;
  const int b0 = std::clamp(space.predicted_boundary, 0, n_layer);
  std::set<int> measured;
  std::vector<int> next = StartingPlacements(b0, n_layer, opt.rules);
  Steps steps{opt.rules.first_step_toward_gpu, opt.rules.first_step_toward_cpu,
              opt.rules.step_growth};
  Analysis a;
  for (int round = 0; round < opt.rules.placement_rounds && !next.empty(); ++round) {
    measured.insert(next.begin(), next.end());
    ledger.Measure(AtPlacements(cur, next), 0, opt.repetitions, "placement");
    if (ledger.out_of_time()) break;
    a = ledger.AnalyzeNow(cur, true);
    next = NextPlacements(a, measured, n_layer, space.devices.size() > 1, &steps);
  }
  // A recommendation pulled from the edge by ties is narrowed before the
  // long-context phase validates it at depth (fill time spent on a placement
  // that more repetitions show slower would be lost).
  if (!ledger.out_of_time() && a.recommendation.n_cpu_moe) {
    int narrowed = 0;
    while (NarrowTie(ledger, cur, a, measured, &narrowed)) {
      a = ledger.AnalyzeNow(cur, true);
      if (ledger.out_of_time()) break;
    }
  }
  PlacementOutcome out;
  if (!a.recommendation.n_cpu_moe) {
    cur.n = n_layer;
    out.decision = MakeDecision(TunePhase::kPlacement, FlagText(FlagId::kNCpuMoe, n_layer),
                                RecommendationRuleName(RecommendationRule::kNothingUsable),
                                "no placement ran; all experts stay on the CPU");
  } else {
    cur.n = std::min(*a.recommendation.n_cpu_moe, n_layer);
    out.decision = PlacementDecision(a, measured, b0, cur.n);
  }
  out.settings = cur;
  return out;
}

LongContextOutcome RunLongContextPhase(TuneLedger& ledger, TuneSettings cur, bool placement_tuned) {
  ledger.set_phase(TunePhase::kLongContext);
  LongContextOutcome out;
  out.settings = cur;
  if (!placement_tuned) return out;
  const std::vector<int> depths = LongContextDepths(ledger.options());
  if (depths.empty()) return out;
  ValidateAtDepths(ledger, cur, depths);
  const Analysis a = ledger.AnalyzeNow(cur, true);
  out.analysis = a;
  const int n_layer = ledger.space().n_layer;
  if (!a.recommendation.n_cpu_moe) {
    // Nothing measured holds at the target context: the most conservative
    // placement, said plainly.
    cur.n = n_layer;
    Decision d = MakeDecision(TunePhase::kLongContext, FlagText(FlagId::kNCpuMoe, cur.n),
                              RecommendationRuleName(RecommendationRule::kNothingUsable),
                              "no measured placement runs at the target context without failing "
                              "or collapsing: every expert stays on the CPU");
    d.rejections = a.rejected;
    out.decision = std::move(d);
    ledger.AddNote(fmt::format(
        "no placement measured at {} tokens of context held: even --n-cpu-moe {} may not fit this "
        "GPU; lower -ngl or the context (moetune plan shows the memory)",
        ledger.options().ctx, cur.n));
    out.settings = cur;
    return out;
  }
  const int before = cur.n;
  // One layer safer than an edge at the all-CPU end is the all-CPU end.
  cur.n = std::min(*a.recommendation.n_cpu_moe, n_layer);
  out.settings = cur;
  out.validated = cur;
  out.decision = LongContextDecision(a, before, cur.n);
  return out;
}

}  // namespace moetune
