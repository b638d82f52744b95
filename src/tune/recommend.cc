#include "tune/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>

#include "util/enum_names.h"

namespace moetune {
namespace {

constexpr std::array kRules = {
    RecommendationRule::kNothingUsable,       RecommendationRule::kNoPlacementEffect,
    RecommendationRule::kEverySplitOverflows, RecommendationRule::kEdgeProvenSafe,
    RecommendationRule::kSafetyRule,          RecommendationRule::kSafeNeighbour,
    RecommendationRule::kProvenAtTarget};
constexpr std::array kReadOn = {ReadOn::kTimeToAnswer, ReadOn::kPrefill, ReadOn::kDecode};
constexpr std::array kUnproven = {Unproven::kNotApplicable, Unproven::kNoHeadroom,
                                  Unproven::kNoTargetContextRun, Unproven::kNoTargetContextGiven};

// Whether `n` was measured at the target context without collapse.
bool HealthyAtTarget(int n, const RejectionReading& rejections, const AnalysisOptions& o) {
  if (!o.target_ctx) return false;
  return std::any_of(rejections.depth_checks.begin(), rejections.depth_checks.end(),
                     [&](const DepthCheck& c) {
                       return c.n_cpu_moe == n && !c.collapsed && c.context >= *o.target_ctx;
                     });
}

// The plan's GPU headroom for placement `n`, when tune gave one.
std::optional<int64_t> HeadroomOf(const AnalysisOptions& o, int n) {
  const auto it = std::find_if(o.gpu_headroom.begin(), o.gpu_headroom.end(),
                               [&](const auto& h) { return h.first == n; });
  if (it == o.gpu_headroom.end()) return std::nullopt;
  return it->second;
}

// Whether the edge is proven safe: measured GPU headroom, and a measurement at
// the target context without collapse; else why not.
Unproven ProveEdge(int edge, bool healthy, const AnalysisOptions& o) {
  const std::optional<int64_t> headroom = HeadroomOf(o, edge);
  const bool has_headroom = headroom && *headroom > 0;
  if (has_headroom && healthy) return Unproven::kNotApplicable;
  if (!has_headroom) return Unproven::kNoHeadroom;
  return o.target_ctx ? Unproven::kNoTargetContextRun : Unproven::kNoTargetContextGiven;
}

// The safety rule's layer taken at depth: the nearest placement measured more
// aggressive than the edge is out for what it did at a depth within the target
// context (it fails or collapses there), so the edge is already one layer more
// conservative than the peak.
std::optional<SteppedFrom> SteppedFromOf(const CurveAtDepth& base,
                                         const RejectionReading& rejections, int edge) {
  const CurvePoint* below = nullptr;
  for (const auto& p : base.points) {
    if (p.n_cpu_moe < edge) below = &p;
  }
  if (below == nullptr) return std::nullopt;
  const Rejection* r = FindRejection(rejections.rejected, below->n_cpu_moe);
  if (r == nullptr || !r->measured_at_depth()) return std::nullopt;
  return SteppedFrom{
      r->n_cpu_moe, r->depth,
      r->kind == RejectionKind::kCollapses ? DepthTrouble::kCollapses : DepthTrouble::kFails};
}

// How much better placement `edge` is than `pick` on the curve's objective.
std::optional<double> GainOver(const CurveAtDepth& base, int edge, int pick) {
  std::optional<Estimate> e, p;
  for (const auto& pt : base.points) {
    if (pt.n_cpu_moe == edge) e = pt.objective;
    if (pt.n_cpu_moe == pick) p = pt.objective;
  }
  if (!e || !p || p->mean <= 0) return std::nullopt;
  return e->mean / p->mean - 1;
}

// The safety rule's pick is one layer back from the edge, which is no
// protection when the plan already puts that pick beyond the GPU budget at the
// target context: a placement measured healthy there (the tune validates the
// plan's own boundary) is taken instead, the most aggressive one not rejected.
// Only where the headroom is known (tune; an analyze of files has none).
void TakeProvenOverNoRoom(const CurveAtDepth& base, const RejectionReading& rejections,
                          const AnalysisOptions& o, Recommendation* rec) {
  const int pick = *rec->n_cpu_moe;
  const std::optional<int64_t> headroom = HeadroomOf(o, pick);
  if (!headroom || *headroom >= 0 || HealthyAtTarget(pick, rejections, o)) return;
  for (const auto& p : base.points) {
    if (p.n_cpu_moe <= pick || FindRejection(rejections.rejected, p.n_cpu_moe) ||
        !HealthyAtTarget(p.n_cpu_moe, rejections, o))
      continue;
    rec->unproven_pick = pick;
    rec->unproven_headroom = *headroom;
    rec->n_cpu_moe = p.n_cpu_moe;
    rec->rule = RecommendationRule::kProvenAtTarget;
    rec->unproven = Unproven::kNotApplicable;
    rec->proven_edge.reset();
    rec->measured = true;
    return;
  }
}

// The rules near the edge of a curve with a real optimum: the edge when one
// layer was stepped back at depth already (kSafeNeighbour) or it is proven
// safe, else one layer more conservative (kSafetyRule). Says what a step
// past an edge measured healthy at the target context costs.
void RecommendNearTheEdge(const CurveAtDepth& base, const RejectionReading& rejections,
                          const AnalysisOptions& o, Recommendation* rec,
                          std::vector<std::string>* notes) {
  const bool healthy = HealthyAtTarget(rec->edge, rejections, o);
  rec->unproven = ProveEdge(rec->edge, healthy, o);
  if (healthy) rec->stepped_from = SteppedFromOf(base, rejections, rec->edge);
  if (rec->stepped_from) {
    rec->n_cpu_moe = rec->edge;
    rec->rule = RecommendationRule::kSafeNeighbour;
    rec->unproven = Unproven::kNotApplicable;
    return;
  }
  if (rec->unproven == Unproven::kNotApplicable || (healthy && o.take_proven_edge)) {
    rec->n_cpu_moe = o.take_proven_edge ? rec->edge : rec->safest_tie;
    rec->rule = RecommendationRule::kEdgeProvenSafe;
  } else {
    const int pick = std::max(rec->safest_tie, rec->edge + 1);
    rec->n_cpu_moe = pick;
    rec->rule = RecommendationRule::kSafetyRule;
    rec->measured = std::any_of(base.points.begin(), base.points.end(),
                                [&](const CurvePoint& p) { return p.n_cpu_moe == pick; });
    if (!rec->measured) {
      notes->push_back(fmt::format(
          "the recommended N={} was not measured: the safety rule implies it (one layer more "
          "conservative than N={})",
          pick, rec->edge));
    }
  }
  if (healthy && *rec->n_cpu_moe > rec->edge)
    rec->proven_edge = ProvenEdge{rec->edge, GainOver(base, rec->edge, *rec->n_cpu_moe)};
  if (rec->rule == RecommendationRule::kSafetyRule) TakeProvenOverNoRoom(base, rejections, o, rec);
}

}  // namespace

const char* RecommendationRuleName(RecommendationRule rule) {
  switch (rule) {
    case RecommendationRule::kNothingUsable:
      return "nothing usable";
    case RecommendationRule::kNoPlacementEffect:
      return "no placement effect";
    case RecommendationRule::kEverySplitOverflows:
      return "every split overflows";
    case RecommendationRule::kEdgeProvenSafe:
      return "edge proven safe";
    case RecommendationRule::kSafetyRule:
      return "safety rule";
    case RecommendationRule::kSafeNeighbour:
      return "safe neighbour";
    case RecommendationRule::kProvenAtTarget:
      break;
  }
  return "proven at the target context";
}

std::optional<RecommendationRule> RecommendationRuleFromName(std::string_view name) {
  return EnumFromName(name, kRules, RecommendationRuleName);
}

const char* ReadOnName(ReadOn read_on) {
  switch (read_on) {
    case ReadOn::kTimeToAnswer:
      return "time_to_answer";
    case ReadOn::kPrefill:
      return "prefill";
    case ReadOn::kDecode:
      break;
  }
  return "decode";
}

std::optional<ReadOn> ReadOnFromName(std::string_view name) {
  return EnumFromName(name, kReadOn, ReadOnName);
}

const char* UnprovenName(Unproven unproven) {
  switch (unproven) {
    case Unproven::kNotApplicable:
      return "";
    case Unproven::kNoHeadroom:
      return "no_headroom";
    case Unproven::kNoTargetContextRun:
      return "no_target_context_run";
    case Unproven::kNoTargetContextGiven:
      break;
  }
  return "no_target_context";
}

std::optional<Unproven> UnprovenFromName(std::string_view name) {
  return EnumFromName(name, kUnproven, UnprovenName);
}

Recommendation Recommend(const CurveAtDepth& base, const RejectionReading& rejections,
                         ReadOn read_on, const AnalysisOptions& o,
                         std::vector<std::string>* notes) {
  Recommendation rec;
  rec.read_on = read_on;
  if (read_on == ReadOn::kTimeToAnswer) rec.workload = o.workload.name;
  rec.target_ctx = o.target_ctx;
  // The tie rule over the placements not rejected, in order of ascending N:
  // the earliest tied with the best is the edge, the last the safest.
  std::vector<std::optional<Estimate>> candidates;
  for (const auto& p : base.points) {
    candidates.push_back(FindRejection(rejections.rejected, p.n_cpu_moe) ? std::nullopt
                                                                         : p.objective);
  }
  const Choice choice = Choose(candidates, o.rules.curve);
  if (!choice.best) {
    rec.rule = RecommendationRule::kNothingUsable;
    return rec;
  }
  rec.best_n = base.points[*choice.best].n_cpu_moe;
  rec.edge = base.points[*choice.chosen].n_cpu_moe;
  for (size_t i = 0; i < base.points.size(); ++i) {
    // An undecided placement is not shown worse either: analyze cannot measure
    // again, so it counts as tied (the safer N stays within reach).
    const Standing st = choice.standings[i];
    if (st == Standing::kBest || st == Standing::kTied || st == Standing::kUndecided)
      rec.safest_tie = base.points[i].n_cpu_moe;
  }
  const int max_n = base.points.back().n_cpu_moe;
  if (base.shape == CurveShape::kFlat) {
    // No placement effect: the most conservative N measured and not rejected
    // (docs/cli.md). The shape reads one series (prefill when any), the tie
    // rule the workload's objective: on a flat curve a conservative N the
    // objective calls slower by a hair is still what the rule promises.
    for (auto it = base.points.rbegin(); it != base.points.rend(); ++it) {
      if (!FindRejection(rejections.rejected, it->n_cpu_moe)) {
        rec.n_cpu_moe = it->n_cpu_moe;
        break;
      }
    }
    rec.rule = RecommendationRule::kNoPlacementEffect;
    return rec;
  }
  if (base.shape == CurveShape::kMonotonic) {
    rec.n_cpu_moe = rec.safest_tie;
    rec.rule = RecommendationRule::kEverySplitOverflows;
    if (rec.safest_tie == max_n) {
      notes->push_back(fmt::format(
          "the best N is the largest one measured ({}); if the model has more layers, measure "
          "larger N too",
          max_n));
    }
    return rec;
  }
  RecommendNearTheEdge(base, rejections, o, &rec, notes);
  return rec;
}

}  // namespace moetune
