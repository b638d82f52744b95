#include "tune/recommend.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

#include "util/enum_names.h"

namespace moetune {
namespace {

constexpr std::array kRules = {
    RecommendationRule::kNothingUsable, RecommendationRule::kNoPlacementEffect,
    RecommendationRule::kEverySplitOverflows, RecommendationRule::kEdgeProvenSafe,
    RecommendationRule::kSafetyRule};
constexpr std::array kReadOn = {ReadOn::kTimeToAnswer, ReadOn::kPrefill, ReadOn::kDecode};
constexpr std::array kUnproven = {Unproven::kNotApplicable, Unproven::kNoHeadroom,
                                  Unproven::kNoTargetContextRun, Unproven::kNoTargetContextGiven};

// Whether the edge is proven safe: measured GPU headroom, and a measurement at
// the target context without collapse; else why not.
Unproven ProveEdge(int edge, const RejectionReading& rejections, const AnalysisOptions& o) {
  auto headroom = std::find_if(o.gpu_headroom.begin(), o.gpu_headroom.end(),
                               [&](const auto& h) { return h.first == edge; });
  bool deep_ok = false;
  for (const auto& c : rejections.depth_checks) {
    if (c.n_cpu_moe == edge && !c.collapsed && o.target_ctx && c.context >= *o.target_ctx)
      deep_ok = true;
  }
  if (headroom != o.gpu_headroom.end() && headroom->second > 0 && deep_ok)
    return Unproven::kNotApplicable;
  if (headroom == o.gpu_headroom.end() || headroom->second <= 0) return Unproven::kNoHeadroom;
  return o.target_ctx ? Unproven::kNoTargetContextRun : Unproven::kNoTargetContextGiven;
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
      break;
  }
  return "safety rule";
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
    if (choice.standings[i] == Standing::kBest || choice.standings[i] == Standing::kTied)
      rec.safest_tie = base.points[i].n_cpu_moe;
  }
  const int max_n = base.points.back().n_cpu_moe;
  if (base.shape == CurveShape::kFlat) {
    rec.n_cpu_moe = rec.safest_tie;
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
  // Safety rule: one layer more conservative than the edge, unless the edge
  // is proven safe at the target context with measured GPU headroom.
  rec.unproven = ProveEdge(rec.edge, rejections, o);
  if (rec.unproven == Unproven::kNotApplicable) {
    rec.n_cpu_moe = rec.safest_tie;
    rec.rule = RecommendationRule::kEdgeProvenSafe;
    return rec;
  }
  const int pick = std::max(rec.safest_tie, rec.edge + 1);
  rec.n_cpu_moe = pick;
  rec.rule = RecommendationRule::kSafetyRule;
  std::set<int> measured_n;
  for (const auto& p : base.points) measured_n.insert(p.n_cpu_moe);
  rec.measured = measured_n.count(pick) > 0;
  if (!rec.measured) {
    notes->push_back(fmt::format(
        "the recommended N={} was not measured: the safety rule implies it (one layer more "
        "conservative than N={})",
        pick, rec.edge));
  }
  return rec;
}

}  // namespace moetune
