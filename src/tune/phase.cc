#include "tune/phase.h"

#include <fmt/format.h>

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

std::string StandingSuffix(const Choice& choice, std::size_t i,
                           const std::vector<TuneLedger::Scored>& scored) {
  std::string s;
  if (i < scored.size() && scored[i].objective)
    s += fmt::format(", {:.4g} requests/s", scored[i].objective->mean);
  s += std::string(" ") + StandingName(choice.standings[i]);
  if (!choice.undecided() && i == Chosen(choice)) s += ", chosen";
  return s;
}

std::optional<Undecided> UndecidedOf(const Choice& choice,
                                     const std::vector<TuneLedger::Scored>& scored,
                                     const std::vector<std::string>& names,
                                     const std::string& kept) {
  if (!choice.undecided()) return std::nullopt;
  std::optional<Undecided> widest;
  double widest_ratio = 0;
  for (std::size_t i = 0; i < scored.size() && i < names.size(); ++i) {
    const Standing st = choice.standings[i];
    if (st != Standing::kBest && st != Standing::kUndecided) continue;
    for (bool prefill : {true, false}) {
      const std::optional<Summary>& s = prefill ? scored[i].pp : scored[i].tg;
      if (!s || s->min <= 0) continue;
      // The spread as the ratio of the fastest repetition to the slowest.
      const double ratio = s->max / s->min;
      if (widest && ratio <= widest_ratio) continue;
      widest_ratio = ratio;
      widest = Undecided{names[i], prefill ? "prefill" : "decode", s->min,
                         s->max,   static_cast<int>(s->n),         kept};
    }
  }
  if (!widest) widest = Undecided{names.empty() ? "" : names[0], "", 0, 0, 0, kept};
  return widest;
}

Decision UndecidedDecision(TunePhase phase, std::string choice, Undecided undecided,
                           std::string evidence) {
  Decision d = MakeDecision(phase, std::move(choice), "could not decide; the starting value stays",
                            std::move(evidence));
  d.undecided = std::move(undecided);
  return d;
}

}  // namespace moetune
