#include "tune/ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tune/points.h"

namespace moetune {

TuneLedger::TuneLedger(Engine& engine, TuneSpace space, TuneOptions options, Journal* journal,
                       ProgressFn progress)
    : engine_(engine),
      space_(std::move(space)),
      opt_(std::move(options)),
      journal_(journal),
      progress_(std::move(progress)) {
  opt_.n_prompt = MicroBatchPrompt(space_, opt_);
}

void TuneLedger::StartClock() { start_ = std::chrono::steady_clock::now(); }

double TuneLedger::Elapsed() const {
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // The simulated engine answers at once: count the time its runs stand for.
  double engine = 0;
  for (const auto& r : all_) {
    for (int64_t ns : r.samples_ns) engine += static_cast<double>(ns) * 1e-9;
  }
  return std::max(wall, engine);
}

bool TuneLedger::Fits(int n, int ubatch, uint32_t kv) const {
  return !space_.fits || space_.fits(n, ubatch, kv);
}

RunConfig TuneLedger::Make(const TuneSettings& s, bool prefill, int depth) const {
  return TuneRunConfig(space_, opt_, s, prefill, depth);
}

void TuneLedger::Report(const std::string& current) const {
  if (progress_) progress_({phase_, measured_, resumed_, Elapsed(), opt_.budget_seconds, current});
}

std::vector<RunResult> TuneLedger::Measure(const std::vector<TuneSettings>& settings, int depth,
                                           int reps, const std::string& label) {
  std::vector<RunResult> out;
  // One engine call per placement (one model load), so that a crash or kill
  // loses at most the placement in flight; the journal takes each result at once.
  for (const TuneSettings& s : settings) {
    std::vector<RunConfig> want;
    for (bool prefill : {true, false}) {
      RunConfig c = Make(s, prefill, depth);
      c.repetitions = reps;
      want.push_back(c);
    }
    auto got =
        MeasureConfigs(want, fmt::format("{} N={} t={} ub={}{}", label, s.n, s.threads, s.ubatch,
                                         depth ? fmt::format(" @ d{}", depth) : ""));
    out.insert(out.end(), got.begin(), got.end());
    if (out_of_time_) break;
  }
  return out;
}

std::vector<RunResult> TuneLedger::MeasureConfigs(const std::vector<RunConfig>& want,
                                                  const std::string& label) {
  std::vector<RunResult> out;
  std::vector<RunConfig> to_run;
  for (const RunConfig& c : want) {
    const int occ = occurrences_[Journal::Key(c)]++;
    std::optional<RunResult> cached = journal_ ? journal_->Find(c, occ) : std::nullopt;
    if (cached) {
      all_.push_back(*cached);
      out.push_back(*cached);
      ++resumed_;
    } else {
      to_run.push_back(c);
    }
  }
  if (to_run.empty()) return out;
  if (Elapsed() >= opt_.budget_seconds) {
    out_of_time_ = true;
    for (const RunConfig& c : to_run) --occurrences_[Journal::Key(c)];
    return out;
  }
  Report(label);
  BenchRun run = engine_.Run(to_run);
  for (RunResult& r : run.results) {
    if (journal_) {
      // Said once, not once per measurement; the command says what was lost.
      auto st = journal_->Append(r);
      if (!st.ok() && journal_->unsaved() == 1) AddNote("journal: " + st.error().message());
    }
    ++measured_;
    all_.push_back(r);
    out.push_back(std::move(r));
  }
  Report("");
  return out;
}

TuneLedger::Scored TuneLedger::Score(const TuneSettings& st, int depth) const {
  Cell cell;
  for (bool prefill : {true, false}) {
    RunConfig c = Make(st, prefill, depth);
    if (depth > 0) c.repetitions = opt_.depth_repetitions;  // as Measure ran it
    const std::string k = Journal::Key(c);
    for (const auto& r : all_) {
      if (Journal::Key(r.config) == k) (prefill ? cell.prefill : cell.decode).push_back(&r);
    }
  }
  // Pooled repetitions, objective by the delta method (tune/points.h).
  const auto p = PointOf(st.n, cell, opt_.workload);
  if (!p) return {};
  return {p->prefill, p->decode, p->objective};
}

std::optional<DepthSpeeds> TuneLedger::PrefillAtDepth(const TuneSettings& s, int depth) const {
  const Scored d0 = Score(s, 0), deep = Score(s, depth);
  if (!d0.pp || !deep.pp) return std::nullopt;
  return DepthSpeeds{d0.pp->best, deep.pp->best};
}

Choice TuneLedger::MeasureAndChoose(const std::vector<TuneSettings>& cands,
                                    const std::string& label, std::vector<Scored>* scored) {
  Measure(cands, 0, opt_.repetitions, label);
  scored->clear();
  for (const auto& c : cands) scored->push_back(Score(c, 0));
  auto choose = [&] {
    std::vector<std::optional<Estimate>> objectives;
    for (const auto& sc : *scored) objectives.push_back(sc.objective);
    return Choose(objectives, opt_.rules.analysis.curve);
  };
  Choice choice = choose();
  // More repetitions for the contenders tied with the best, or undecided
  // against it, until the intervals separate or narrow (or the repetitions or
  // the budget run out); a comparison still undecided then is the phase's to
  // report (Choice::undecided).
  for (int round = 0; round < opt_.rules.repetition_rounds && !out_of_time_; ++round) {
    std::vector<TuneSettings> todo;
    for (size_t i = 0; i < cands.size(); ++i) {
      const int n = (*scored)[i].pp ? static_cast<int>((*scored)[i].pp->n) : 0;
      const Standing st = choice.standings[i];
      if ((st == Standing::kBest || st == Standing::kTied || st == Standing::kUndecided) &&
          n + opt_.repetitions <= opt_.max_repetitions)
        todo.push_back(cands[i]);
    }
    if (choice.clear() || todo.size() < 2) break;
    Measure(todo, 0, opt_.repetitions, label + " (more repetitions)");
    for (size_t i = 0; i < cands.size(); ++i) (*scored)[i] = Score(cands[i], 0);
    choice = choose();
  }
  return choice;
}

std::vector<RunResult> TuneLedger::PlacementResults(const TuneSettings& f) const {
  std::vector<RunResult> rs;
  for (const auto& r : all_) {
    const RunConfig& c = r.config;
    if (c.threads == f.threads && c.n_ubatch == f.ubatch && c.type_k == f.kv_type &&
        c.flash_attn == f.flash_attn && c.load_mode == f.load_mode &&
        c.n_prompt == (c.n_prompt > 0 ? opt_.n_prompt : 0) &&
        c.n_gen == (c.n_gen > 0 ? opt_.n_gen : 0))
      rs.push_back(r);
  }
  return rs;
}

Analysis TuneLedger::AnalyzeNow(const TuneSettings& fixed, bool with_ctx) const {
  AnalysisOptions o;
  o.workload = opt_.workload;
  o.rules = opt_.rules.analysis;
  o.take_proven_edge = opt_.take_proven_edge;
  if (with_ctx) o.target_ctx = opt_.ctx;
  const auto rs = PlacementResults(fixed);
  if (space_.headroom) {
    std::set<int> ns;
    for (const auto& r : rs) ns.insert(r.config.placement.n_cpu_moe);
    for (int n : ns) o.gpu_headroom.push_back({n, space_.headroom(n)});
  }
  return Analyze(rs, o);
}

std::size_t Chosen(const Choice& choice) { return choice.chosen.value_or(0); }

}  // namespace moetune
