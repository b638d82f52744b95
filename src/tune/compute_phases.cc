#include "tune/compute_phases.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "config/flags.h"

namespace moetune {
namespace {

// "-ub 1024 -b 2048": the micro-batch phase's choice.
std::string BatchText(const TuneSettings& s) {
  return FlagText(FlagId::kUbatch, s.ubatch) + " " + FlagText(FlagId::kBatch, s.batch);
}

// The measured setting `cur` runs at the target context beyond the plan's
// margin (the plan cannot judge it). With a silent spill the edge is a cliff,
// and a larger micro-batch's compute buffer moves it: micro-batch `ubatch`
// keeps no more bytes on the GPU than `cur` does, with the fewest extra layers
// of experts on the CPU. nullopt when no N does, or the plan cannot size one;
// `cur.n` unchanged when the plan has no figure for `cur` itself.
std::optional<int> WithinMeasuredGpuAllocation(const TuneSpace& space, const TuneSettings& cur,
                                               int ubatch) {
  if (!space.gpu_bytes) return cur.n;
  const int64_t measured = space.gpu_bytes(cur.n, cur.ubatch, cur.kv_type);
  if (measured <= 0) return cur.n;
  for (int n = cur.n; n <= space.n_layer; ++n) {
    const int64_t bytes = space.gpu_bytes(n, ubatch, cur.kv_type);
    if (bytes < 0) return std::nullopt;
    if (bytes <= measured) return n;
  }
  return std::nullopt;
}

// (N, micro-batch, KV type) fits every device's memory at the target context
// when the margin is not counted.
bool FitsWithoutMargin(const TuneSpace& space, int n, int ubatch, uint32_t kv) {
  if (!space.room) return false;
  const std::optional<int64_t> room = space.room(n, ubatch, kv);
  return room && *room >= 0;
}

// The micro-batch sizes that can be compared, each with the N it runs at.
struct MicroBatchContenders {
  std::vector<TuneSettings> settings;
  std::vector<std::string> why;  // what each needs, for the evidence
  std::string skipped;           // "; -ub X: not tried (...)" for each size left out
};

MicroBatchContenders ContendersOf(const TuneLedger& ledger, const TuneSettings& cur) {
  const TuneSpace& space = ledger.space();
  MicroBatchContenders out;
  // The plan moves N for a micro-batch where it agrees that the current,
  // measured setting fits; otherwise the measured setting's GPU allocation
  // bounds a larger micro-batch's. The final check at the target context has
  // the last word (RunFinalCheckPhase).
  const bool plan_judges = ledger.Fits(cur.n, cur.ubatch, cur.kv_type);
  for (int ub : MicroBatchCandidates(space, ledger.options())) {
    TuneSettings s = cur;
    s.ubatch = ub;
    s.batch = std::max(cur.batch, ub);
    std::string w;
    if (plan_judges && !ledger.Fits(s.n, ub, s.kv_type)) {
      if (s.n + 1 > space.n_layer || !ledger.Fits(s.n + 1, ub, s.kv_type)) {
        out.skipped += fmt::format("; {}: not tried (its compute buffer does not fit)",
                                   FlagText(FlagId::kUbatch, ub));
        continue;
      }
      s.n += 1;
      w = " (needs one more layer on the CPU for its compute buffer)";
    } else if (!plan_judges && FitsWithoutMargin(space, cur.n, ub, s.kv_type)) {
      // The measured setting already runs inside the margin; the same N with
      // this micro-batch still fits every device's memory, and the final
      // check at the target context decides (RunFinalCheckPhase).
      w = " (inside the plan's margin, as the measured setting is)";
    } else if (!plan_judges) {
      const std::optional<int> n = WithinMeasuredGpuAllocation(space, cur, ub);
      if (!n) {
        out.skipped +=
            fmt::format("; {}: not tried (no N keeps its GPU allocation within the validated one)",
                        FlagText(FlagId::kUbatch, ub));
        continue;
      }
      if (*n > s.n)
        w = fmt::format(" (needs {} more layer(s) on the CPU for its compute buffer)", *n - s.n);
      s.n = *n;
    }
    out.settings.push_back(s);
    out.why.push_back(w);
  }
  return out;
}

}  // namespace

PhaseOutcome RunThreadsPhase(TuneLedger& ledger, TuneSettings cur) {
  ledger.set_phase(TunePhase::kThreads);
  std::vector<ThreadCandidate> cands = ledger.space().threads;
  if (cands.size() < 2) {
    if (!cands.empty()) cur.threads = cands[0].threads;
    return {cur, std::nullopt};
  }
  // Ties go to fewer threads (cores left for the rest of the machine).
  std::sort(cands.begin(), cands.end(),
            [](const auto& x, const auto& y) { return x.threads < y.threads; });
  std::vector<TuneSettings> ss;
  for (const auto& c : cands) {
    TuneSettings s = cur;
    s.threads = c.threads;
    ss.push_back(s);
  }
  std::vector<TuneLedger::Scored> scored;
  const Choice choice = ledger.MeasureAndChoose(ss, "threads", &scored);
  const size_t chosen = Chosen(choice);
  const int start = cur.threads;
  if (!choice.undecided()) cur.threads = ss[chosen].threads;
  std::string evidence;
  std::vector<std::string> names;
  names.reserve(ss.size());
  for (const auto& s : ss) names.push_back(FlagText(FlagId::kThreads, s.threads));
  for (size_t i = 0; i < ss.size(); ++i) {
    const auto& c = scored[i];
    evidence +=
        fmt::format("{}-t {} ({}): prefill {:.1f}, decode {:.1f} t/s (n={}){}", i ? "; " : "",
                    ss[i].threads, cands[i].why, c.pp ? c.pp->mean : 0, c.tg ? c.tg->mean : 0,
                    c.pp ? c.pp->n : 0, StandingSuffix(choice, i, scored));
  }
  if (auto u = UndecidedOf(choice, scored, names, FlagText(FlagId::kThreads, start))) {
    return {cur, UndecidedDecision(TunePhase::kThreads, FlagText(FlagId::kThreads, cur.threads),
                                   std::move(*u), evidence)};
  }
  return {cur,
          MakeDecision(TunePhase::kThreads, FlagText(FlagId::kThreads, cur.threads),
                       choice.clear() ? "fastest beyond the noise"
                                      : "within the noise of the best; a tie goes to fewer threads",
                       evidence)};
}

PhaseOutcome RunMicroBatchPhase(TuneLedger& ledger, TuneSettings cur) {
  ledger.set_phase(TunePhase::kMicroBatch);
  const MicroBatchContenders c = ContendersOf(ledger, cur);
  const std::vector<TuneSettings>& ss = c.settings;
  if (ss.size() < 2) {
    if (c.skipped.empty()) return {cur, std::nullopt};
    return {cur, MakeDecision(TunePhase::kMicroBatch, BatchText(cur), "the only size that fits",
                              c.skipped.substr(2))};
  }
  std::vector<TuneLedger::Scored> scored;
  const Choice choice = ledger.MeasureAndChoose(ss, "micro-batch", &scored);
  const size_t chosen = Chosen(choice);
  std::string evidence = fmt::format("prefill of {} tokens: ", ledger.options().n_prompt);
  for (size_t i = 0; i < ss.size(); ++i) {
    evidence += fmt::format(
        "{}{}{}: {:.1f} t/s{}{}", i ? "; " : "", FlagText(FlagId::kUbatch, ss[i].ubatch),
        ss[i].n != cur.n ? fmt::format(" at N={}", ss[i].n) : "",
        scored[i].pp ? scored[i].pp->mean : 0, StandingSuffix(choice, i, scored), c.why[i]);
  }
  evidence += c.skipped;
  std::vector<std::string> names;
  names.reserve(ss.size());
  for (const auto& s : ss) names.push_back(FlagText(FlagId::kUbatch, s.ubatch));
  if (auto u = UndecidedOf(choice, scored, names, FlagText(FlagId::kUbatch, cur.ubatch))) {
    return {cur,
            UndecidedDecision(TunePhase::kMicroBatch, BatchText(cur), std::move(*u), evidence)};
  }
  cur.ubatch = ss[chosen].ubatch;
  cur.batch = ss[chosen].batch;
  cur.n = ss[chosen].n;
  return {cur,
          MakeDecision(TunePhase::kMicroBatch, BatchText(cur),
                       choice.clear()
                           ? "fastest beyond the noise"
                           : "within the noise of the best; a tie goes to the smaller micro-batch",
                       evidence)};
}

}  // namespace moetune
