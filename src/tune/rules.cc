#include "tune/rules.h"

#include <algorithm>
#include <array>

#include "stats/interval.h"
#include "util/enum_names.h"

namespace moetune {

Estimate FromSummary(const Summary& s) {
  return Estimate{s.mean, s.stddev, static_cast<int>(std::max<std::size_t>(s.n, 1))};
}

int CompareEstimates(const Estimate& a, const Estimate& b, const CurveRules& rules) {
  switch (CompareMeans(a.mean, a.sd, a.n, b.mean, b.sd, b.n, rules.level, rules.min_relative)) {
    case Comparison::kGreater:
      return 1;
    case Comparison::kLess:
      return -1;
    case Comparison::kTie:
      break;
  }
  return 0;
}

const char* StandingName(Standing standing) {
  switch (standing) {
    case Standing::kBest:
      return "best";
    case Standing::kTied:
      return "tie";
    case Standing::kWorse:
      return "worse";
    case Standing::kUndecided:
      return "undecided";
    case Standing::kUnmeasured:
      break;
  }
  return "not measured";
}

std::optional<Standing> StandingFromName(std::string_view name) {
  constexpr std::array kAll = {Standing::kBest, Standing::kTied, Standing::kWorse,
                               Standing::kUnmeasured, Standing::kUndecided};
  return EnumFromName(name, kAll, StandingName);
}

bool TooWideToTell(const Estimate& e, const CurveRules& rules) {
  if (!e.sd || e.n < 2 || e.mean <= 0) return false;
  const Interval i = MeanInterval(e.mean, e.sd, e.n, rules.level);
  return i.high - i.mean > rules.undecided_width * e.mean;
}

bool Choice::clear() const {
  return best && std::count(standings.begin(), standings.end(), Standing::kTied) == 0 &&
         !undecided();
}

bool Choice::undecided() const {
  return std::count(standings.begin(), standings.end(), Standing::kUndecided) > 0;
}

Choice Choose(const std::vector<std::optional<Estimate>>& candidates, const CurveRules& rules) {
  Choice c;
  c.standings.assign(candidates.size(), Standing::kUnmeasured);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i] && (!c.best || candidates[i]->mean > candidates[*c.best]->mean)) c.best = i;
  }
  if (!c.best) return c;
  const Estimate& best = *candidates[*c.best];
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!candidates[i]) continue;
    if (i == *c.best) {
      c.standings[i] = Standing::kBest;
    } else {
      const Estimate& e = *candidates[i];
      c.standings[i] = CompareEstimates(e, best, rules) < 0 ? Standing::kWorse
                       : TooWideToTell(e, rules) || TooWideToTell(best, rules)
                           ? Standing::kUndecided
                           : Standing::kTied;
    }
    if (!c.chosen && c.standings[i] != Standing::kWorse) c.chosen = i;
  }
  return c;
}

bool Collapses(const DepthSpeeds& candidate, const DepthSpeeds& reference,
               const CollapseRules& rules) {
  if (!candidate.valid() || !reference.valid()) return false;
  return candidate.ratio() < rules.ratio * reference.ratio() &&
         candidate.added() > rules.added_time_factor * std::max(0.0, reference.added());
}

std::size_t CollapseReference(const std::vector<DepthSpeeds>& placements, std::size_t k,
                              const CollapseRules& rules) {
  std::size_t ref = k;
  for (std::size_t j = 0; j < placements.size(); ++j) {
    if (placements[j].depth0 >= placements[k].depth0 * rules.comparable_speed &&
        placements[j].ratio() > placements[ref].ratio())
      ref = j;
  }
  return ref;
}

}  // namespace moetune
