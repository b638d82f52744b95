#include "tune/ledger.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "tune/points.h"

namespace moetune {

namespace {

double SampleSeconds(const RunResult& r) {
  double s = 0;
  for (int64_t ns : r.samples_ns) s += static_cast<double>(ns) * 1e-9;
  return s;
}

// The seconds of one test as llama-bench runs it (tools/llama-bench/
// llama-bench.cpp, the loop over tests): a warm-up, the depth filled once
// (its state is kept and restored for each repetition; older builds refill it
// every time, and the engine's time limit ends what that overruns), then the
// timed repetitions. The warm-up is counted as one more repetition (the
// generation warm-up is one token: an upper bound).
double TestSeconds(const RunConfig& c, double seconds_per_token, double fill_seconds_per_token) {
  const int reps = std::max(1, c.repetitions);
  return (reps + 1) * (c.n_prompt + c.n_gen) * seconds_per_token +
         static_cast<double>(c.n_depth) * fill_seconds_per_token;
}

}  // namespace

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
  return std::max(wall, engine_seconds_);
}

std::optional<double> TuneLedger::SecondsPerToken(const RunConfig& c) const {
  const bool prefill = c.n_prompt > 0;
  const std::string key = Journal::Key(c);
  std::optional<double> best;
  int best_distance = 0;
  for (const RunResult& r : all_) {
    const RunConfig& m = r.config;
    const int tokens = m.n_prompt + m.n_gen;
    if (!r.ok() || r.samples_ns.empty() || tokens <= 0 || (m.n_prompt > 0) != prefill) continue;
    const double spt = SampleSeconds(r) / static_cast<double>(r.samples_ns.size()) / tokens;
    // The same configuration, else the nearest N at the same depth, else any
    // depth; the slower of equally near ones.
    const int distance = Journal::Key(m) == key
                             ? 0
                             : 1 + std::abs(m.placement.n_cpu_moe - c.placement.n_cpu_moe) +
                                   (m.n_depth != c.n_depth ? 1000 : 0);
    if (!best || distance < best_distance || (distance == best_distance && spt > *best)) {
      best = spt;
      best_distance = distance;
    }
  }
  if (best) return best;
  // Before any measurement of its kind: the speed model's prediction.
  if (space_.predicted_tps) {
    const std::optional<double> tps = space_.predicted_tps(c);
    if (tps && *tps > 0) return 1.0 / *tps;
  }
  return std::nullopt;
}

double TuneLedger::FillSecondsPerToken(const RunConfig& c, double fallback) const {
  // The depth is filled at the prefill speed of depth 0 ...
  RunConfig d0 = c;
  d0.n_depth = 0;
  d0.n_prompt = std::max(c.n_prompt, opt_.n_prompt);
  d0.n_gen = 0;
  const double at0 = SecondsPerToken(d0).value_or(fallback);
  // ... unless the same placement was measured at a shallower depth, which the
  // fill passes through: up to there it slows from the depth-0 speed to the
  // one measured (taken as linear), beyond it it is at least that slow. A
  // placement that collapses at 8K fills 32K at its collapsed speed, not at
  // its depth-0 one (ten times the estimate otherwise).
  double fill = at0 * static_cast<double>(c.n_depth);
  for (const RunResult& r : all_) {
    const RunConfig& m = r.config;
    if (!r.ok() || r.samples_ns.empty() || m.n_prompt <= 0 || m.n_depth <= 0 ||
        m.n_depth >= c.n_depth) {
      continue;
    }
    RunConfig same = d0;
    same.n_depth = m.n_depth;
    same.n_prompt = m.n_prompt;
    same.repetitions = m.repetitions;
    if (Journal::Key(same) != Journal::Key(m)) continue;
    const double at = SampleSeconds(r) / static_cast<double>(r.samples_ns.size()) / m.n_prompt;
    const double d = m.n_depth;
    fill = std::max(fill, d * (at0 + at) / 2 + (static_cast<double>(c.n_depth) - d) * at);
  }
  return fill / static_cast<double>(c.n_depth);
}

std::optional<double> TuneLedger::ExpectedSeconds(const std::vector<RunConfig>& configs) const {
  // One load per placement (the engine starts one process per model key).
  std::set<std::string> loads;
  for (const RunConfig& c : configs) loads.insert(c.ModelKey());
  double total = load_seconds_ * static_cast<double>(loads.size());
  for (const RunConfig& c : configs) {
    const std::optional<double> spt = SecondsPerToken(c);
    if (!spt) return std::nullopt;
    total += TestSeconds(c, *spt, c.n_depth > 0 ? FillSecondsPerToken(c, *spt) : *spt);
  }
  return total;
}

void TuneLedger::CountEngineTime(const BenchRun& run) {
  double samples = 0;
  for (const RunResult& r : run.results) samples += SampleSeconds(r);
  double invocations = 0;
  for (std::size_t i = 0; i < run.invocations.size(); ++i) {
    const InvocationReport& inv = run.invocations[i];
    invocations += inv.wall_seconds;
    // What an invocation took beyond its tests (the model load, mostly), from
    // those at depth 0 (a depth fill is not load time).
    double tests = 0;
    bool at_depth = inv.time_limit_reached;
    for (const RunResult& r : run.results) {
      if (r.invocation != static_cast<int>(i) || !r.ok()) continue;
      at_depth = at_depth || r.config.n_depth > 0;
      const double reps = static_cast<double>(std::max<std::size_t>(1, r.samples_ns.size()));
      tests += SampleSeconds(r) * (reps + 1) / reps;
    }
    if (!at_depth) load_seconds_ = std::max(load_seconds_, inv.wall_seconds - tests);
  }
  engine_seconds_ += std::max(samples, invocations);
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
  // The quiet-machine checks run on what the journal gave too, so that a
  // resumed tune repeats the same measurements in the same order.
  auto finish = [&] {
    if (!nested_ && !out_of_time_) {
      RemeasureBusy(&out, label);
      CheckAnchor(out);
    }
    return out;
  };
  for (const RunConfig& c : want) {
    const int occ = occurrences_[Journal::Key(c)]++;
    std::optional<RunResult> cached = journal_ ? journal_->Find(c, occ) : std::nullopt;
    if (cached) {
      engine_seconds_ += SampleSeconds(*cached);
      all_.push_back(*cached);
      out.push_back(*cached);
      ++resumed_;
    } else {
      to_run.push_back(c);
    }
  }
  if (to_run.empty()) return finish();
  // A run that would end past the budget is not started (its expected time
  // from the runs so far, or the speed model before the first).
  const double left = opt_.budget_seconds - Elapsed();
  const std::optional<double> expected = ExpectedSeconds(to_run);
  if (left <= 0 || (expected && *expected > left)) {
    StopForBudget({label, expected.value_or(0), std::max(0.0, left), opt_.budget_seconds, false});
    for (const RunConfig& c : to_run) --occurrences_[Journal::Key(c)];
    return out;
  }
  Report(label);
  // ... and one that overruns is ended at the budget, where the engine can;
  // one over RPC hosts, at what its hosts were seen to need (SlowHostLimit).
  const std::optional<double> host_limit = SlowHostLimit(to_run.front().rpc, expected);
  const bool by_hosts = host_limit && *host_limit < left;
  engine_.set_time_limit(by_hosts ? *host_limit : left);
  BenchRun run = engine_.Run(to_run);
  engine_.set_time_limit(std::nullopt);
  CountEngineTime(run);
  for (RunResult& r : run.results) {
    const bool cut = r.invocation >= 0 &&
                     static_cast<std::size_t>(r.invocation) < run.invocations.size() &&
                     run.invocations[static_cast<std::size_t>(r.invocation)].time_limit_reached;
    if (cut && by_hosts) {
      r.failure = SlowHostFailure(r.config.rpc, *host_limit, *expected);
    } else if (cut) {
      // Ended by the budget: nothing learnt about the configuration; a
      // resumed tune with more time measures it.
      --occurrences_[Journal::Key(r.config)];
      if (!out_of_time_) StopForBudget({label, 0, 0, opt_.budget_seconds, true});
      continue;
    }
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
  return finish();
}

std::optional<double> TuneLedger::SlowHostLimit(const std::vector<std::string>& hosts,
                                                const std::optional<double>& expected) const {
  if (hosts.empty() || !expected || *expected <= 0) return std::nullopt;
  return std::max(opt_.rules.slow_host_floor_seconds, opt_.rules.slow_host_factor * *expected);
}

EngineFailure SlowHostFailure(const std::vector<std::string>& hosts, double limit,
                              double expected) {
  EngineFailure f;
  f.kind = FailureKind::kRpcHost;
  f.exit = "ended by moetune";
  const std::string who = hosts.size() == 1
                              ? fmt::format("RPC host {}", hosts.front())
                              : fmt::format("one of the RPC hosts {}", fmt::join(hosts, ", "));
  if (hosts.size() == 1) f.rpc_host = hosts.front();
  f.message = fmt::format(
      "{} is slower than its earlier runs announced: the run was ended after {:.0f} s, where "
      "about {:.0f} s was expected; check the host's load and its link (a busy host, a "
      "congested or slower link), then tune again to measure it anew",
      who, limit, expected);
  return f;
}

void TuneLedger::StopForBudget(const BudgetStop& stop) {
  out_of_time_ = true;
  budget_stop_ = stop;
  if (stop.ended) {
    AddNote(fmt::format("the budget ended the tune: {} was ended at the {:.0f} s limit", stop.run,
                        stop.budget_seconds));
  } else if (stop.expected_seconds <= 0) {
    AddNote(
        fmt::format("the budget ended the tune: {} was not started: the {:.0f} s budget was "
                    "spent",
                    stop.run, stop.budget_seconds));
  } else {
    AddNote(
        fmt::format("the budget ended the tune: {} was not started: it would take about "
                    "{:.0f} s and {:.0f} s of the {:.0f} s budget were left",
                    stop.run, stop.expected_seconds, stop.left_seconds, stop.budget_seconds));
  }
  if (journal_) {
    auto st = journal_->AppendBudgetStop(stop);
    if (!st.ok()) AddNote("journal: " + st.error().message());
  }
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
  // The same kind of placement: which layers' experts, on which devices in
  // which order (another expert or device order is another curve).
  const Placement want = SettingsConfig(space_, f).placement;
  const std::vector<std::string> want_devices = want.DeviceNames();
  std::vector<RunResult> rs;
  for (const auto& r : all_) {
    const RunConfig& c = r.config;
    if (c.threads == f.threads && c.n_ubatch == f.ubatch && c.type_k == f.kv_type &&
        c.flash_attn == f.flash_attn && c.load_mode == f.load_mode &&
        c.placement.cpu_experts == want.cpu_experts && c.placement.DeviceNames() == want_devices &&
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
