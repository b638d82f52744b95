#include "tune/phase.h"

#include <utility>

namespace moetune {

Decision MakeDecision(TunePhase phase, std::string choice, std::string rule, std::string evidence) {
  Decision d;
  d.phase = phase;
  d.choice = std::move(choice);
  d.rule = std::move(rule);
  d.evidence = std::move(evidence);
  return d;
}

std::string StandingSuffix(Standing standing) { return std::string(" ") + StandingName(standing); }

}  // namespace moetune
