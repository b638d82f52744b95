#include "tune/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "tune/points.h"

namespace moetune {
namespace {

std::string Join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string Verdict(Standing standing) { return std::string(" ") + StandingName(standing); }

// "A: prefill X, decode Y t/s best; B: ... t/s tie" for a choice between two settings.
template <typename Scored>
std::string TwoSettingsEvidence(const std::array<const char*, 2>& names,
                                const std::vector<Scored>& scored, const Choice& choice) {
  std::string out;
  for (size_t i = 0; i < 2; ++i) {
    out += fmt::format("{}{}: prefill {:.1f}, decode {:.1f} t/s{}", i == 0 ? "" : "; ", names[i],
                       scored[i].pp ? scored[i].pp->mean : 0, scored[i].tg ? scored[i].tg->mean : 0,
                       Verdict(choice.standings[i]));
  }
  return out;
}

// The choice of a comparison; the first candidate when none was measured.
size_t Chosen(const Choice& choice) { return choice.chosen.value_or(0); }

Decision MakeDecision(TunePhase phase, std::string choice, std::string rule, std::string evidence) {
  Decision d;
  d.phase = phase;
  d.choice = std::move(choice);
  d.rule = std::move(rule);
  d.evidence = std::move(evidence);
  return d;
}

}  // namespace

Tuner::Tuner(Engine& engine, TuneSpace space, TuneOptions options, Journal* journal,
             ProgressFn progress)
    : engine_(engine),
      space_(std::move(space)),
      opt_(std::move(options)),
      journal_(journal),
      progress_(std::move(progress)) {
  // Every prefill is measured at one size, large enough for the largest
  // micro-batch candidate: the comparisons across phases use the same test.
  opt_.n_prompt = MicroBatchPrompt(space_, opt_);
}

double Tuner::Elapsed() const {
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // The simulated engine answers at once: count the time its runs stand for.
  double engine = 0;
  for (const auto& r : all_) {
    for (int64_t ns : r.samples_ns) engine += static_cast<double>(ns) * 1e-9;
  }
  return std::max(wall, engine);
}

bool Tuner::OutOfTime() const { return Elapsed() >= opt_.budget_seconds; }

bool Tuner::Fits(int n, int ubatch, uint32_t kv) const {
  return !space_.fits || space_.fits(n, ubatch, kv);
}

ServerConfig SettingsConfig(const TuneSpace& space, const TuneSettings& s) {
  ServerConfig c = space.base;
  c.model = space.model;
  c.placement.n_cpu_moe = s.n;
  c.n_ubatch = s.ubatch;
  c.n_batch = std::max(s.batch, s.ubatch);
  c.type_k = s.kv_type;
  c.type_v = s.kv_type;
  c.flash_attn = s.flash_attn;
  c.load_mode = s.load_mode;
  c.threads = s.threads;
  return c;
}

TuneSettings SettingsOf(const ServerConfig& c) {
  TuneSettings s;
  s.n = std::max(0, c.placement.n_cpu_moe);  // a dense model's pick writes none (-1)
  s.threads = c.threads;
  s.ubatch = c.n_ubatch;
  s.batch = c.n_batch;
  s.flash_attn = c.flash_attn;
  s.kv_type = c.type_k;
  s.load_mode = c.load_mode;
  return s;
}

RunConfig TuneRunConfig(const TuneSpace& space, const TuneOptions& o, const TuneSettings& s,
                        bool prefill, int depth) {
  RunConfig c(SettingsConfig(space, s));
  c.n_depth = depth;
  c.n_prompt = prefill ? std::max(o.n_prompt, 1) : 0;
  c.n_gen = prefill ? 0 : std::max(o.n_gen, 1);
  c.repetitions = o.repetitions;
  return c;
}

std::vector<int> LongContextDepths(const TuneOptions& o) {
  std::vector<int> depths;
  if (o.ctx <= o.n_prompt) return depths;
  for (int64_t d : {o.ctx / o.rules.first_depth_divisor, o.ctx - o.n_prompt}) {
    const int di = static_cast<int>(std::max<int64_t>(d, 0));
    if (di > 0 && std::find(depths.begin(), depths.end(), di) == depths.end()) depths.push_back(di);
  }
  return depths;
}

namespace {

int WorkloadPrompt(const TuneOptions& o) {
  return o.workload.prompt_tokens > 0 ? o.workload.prompt_tokens : o.n_prompt;
}

}  // namespace

std::vector<int> MicroBatchCandidates(const TuneSpace& space, const TuneOptions& o) {
  std::vector<int> out;
  for (int ub : space.ubatches) {
    if (ub <= std::max(WorkloadPrompt(o), o.rules.ubatch_always_tried)) out.push_back(ub);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int MicroBatchPrompt(const TuneSpace& space, const TuneOptions& o) {
  const auto ubs = MicroBatchCandidates(space, o);
  const int max_ub = ubs.empty() ? 0 : ubs.back();
  return std::max(o.n_prompt, std::min(max_ub, WorkloadPrompt(o)));
}

RunConfig Tuner::Make(const Settings& s, bool prefill, int depth) const {
  return TuneRunConfig(space_, opt_, s, prefill, depth);
}

std::vector<RunResult> Tuner::Measure(const std::vector<Settings>& settings, int depth, int reps,
                                      const std::string& label) {
  std::vector<RunResult> out;
  // One engine call per placement (one model load), so that a crash or kill
  // loses at most the placement in flight; the journal takes each result at once.
  for (const Settings& s : settings) {
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

std::vector<RunResult> Tuner::MeasureConfigs(const std::vector<RunConfig>& want,
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
  if (OutOfTime()) {
    out_of_time_ = true;
    for (const RunConfig& c : to_run) --occurrences_[Journal::Key(c)];
    return out;
  }
  if (progress_) progress_({phase_, measured_, resumed_, Elapsed(), opt_.budget_seconds, label});
  BenchRun run = engine_.Run(to_run);
  for (RunResult& r : run.results) {
    if (journal_) {
      // Said once, not once per measurement; the command says what was lost.
      auto st = journal_->Append(r);
      if (!st.ok() && journal_->unsaved() == 1)
        result_.notes.push_back("journal: " + st.error().message());
    }
    ++measured_;
    all_.push_back(r);
    out.push_back(std::move(r));
  }
  if (progress_) progress_({phase_, measured_, resumed_, Elapsed(), opt_.budget_seconds, ""});
  return out;
}

std::vector<RunResult> Tuner::PlacementResults(const Settings& f) const {
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

Analysis Tuner::AnalyzeNow(const Settings& fixed, bool with_ctx) const {
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

void Tuner::SearchPlacement() {
  phase_ = TunePhase::kPlacement;
  const int L = space_.n_layer;
  if (!space_.moe) {
    cur_.n = 0;
    result_.placement_tuned = false;
    result_.decisions.push_back(MakeDecision(phase_, "-ngl from the plan", "dense model",
                                             "no routed experts: --n-cpu-moe does not apply"));
    return;
  }
  if (!space_.placement_matters) {
    cur_.n = space_.fixed_n;
    result_.placement_tuned = false;
    result_.decisions.push_back(MakeDecision(
        phase_, "-ngl 0", "no GPU in the engine",
        "the engine has no GPU device, so where the experts live does not change speed: "
        "placement was not measured; every layer runs on the CPU (-ngl 0, no --n-cpu-moe)"));
    return;
  }
  const int b0 = std::clamp(space_.predicted_boundary, 0, L);
  std::set<int> measured;
  std::vector<int> next;
  const TuneRules& rules = opt_.rules;
  for (int offset : rules.start_offsets) {
    const int n = b0 + offset;
    if (n >= 0 && n <= L && std::find(next.begin(), next.end(), n) == next.end()) next.push_back(n);
  }
  int down_step = rules.first_step_toward_gpu, up_step = rules.first_step_toward_cpu;
  Analysis a;
  for (int round = 0; round < rules.placement_rounds && !next.empty(); ++round) {
    std::vector<Settings> batch;
    for (int n : next) {
      Settings s = cur_;
      s.n = n;
      batch.push_back(s);
      measured.insert(n);
    }
    Measure(batch, 0, opt_.repetitions, "placement");
    if (out_of_time_) break;
    a = AnalyzeNow(cur_, true);
    next.clear();
    auto add = [&](int n) {
      if (n >= 0 && n <= L && !measured.count(n) &&
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
      add(std::min(L, hi + up_step));
      up_step *= 2;
      continue;
    }
    if (floor >= 0 && floor < edge) {
      if (edge - floor > 1) add(floor + (edge - floor) / 2);  // bisect the boundary
    } else if (edge == lo && edge > 0) {
      // Still improving toward the GPU, or no worse (a few neighbours within
      // the noise of each other say nothing about the rest of the curve): keep going.
      add(edge - down_step);
      down_step *= 2;
    }
    if (a.shape != CurveShape::kFlat) add(edge + 1);  // the safety rule needs it measured
    if ((a.shape == CurveShape::kMonotonic || edge == hi) && hi < L &&
        a.shape != CurveShape::kFlat) {
      add(std::min(L, hi + up_step));
      up_step *= 2;
    }
  }
  if (!a.recommendation.n_cpu_moe) {
    cur_.n = L;
    result_.decisions.push_back(
        MakeDecision(phase_, fmt::format("--n-cpu-moe {}", L),
                     RecommendationRuleName(RecommendationRule::kNothingUsable),
                     "no placement ran; all experts stay on the CPU"));
    return;
  }
  cur_.n = std::min(*a.recommendation.n_cpu_moe, L);
  std::vector<int> ns(measured.begin(), measured.end());
  std::string evidence = fmt::format(
      "measured N = {} at depth 0 (predicted boundary N = {}); "
      "curve {}",
      Join(ns), b0, CurveShapeName(a.shape));
  for (const auto& c : a.cliffs) {
    evidence += fmt::format("; cliff between N={} and N={} (prefill x{:.2f})", c.n_cpu_moe_safe,
                            c.n_cpu_moe_collapsed, c.prefill_ratio);
  }
  Decision d = MakeDecision(phase_, fmt::format("--n-cpu-moe {}", cur_.n),
                            RecommendationRuleName(a.recommendation.rule), evidence);
  d.reading = a.recommendation;
  result_.decisions.push_back(std::move(d));
}

namespace {

// Rejected for what happens at depth (measured there, not inferred).
bool BadAtDepth(const Analysis& a, int n) {
  const Rejection* r = a.RejectionOf(n);
  return r != nullptr && r->measured_at_depth();
}

}  // namespace

void Tuner::ValidateLongContext() {
  phase_ = TunePhase::kLongContext;
  if (!result_.placement_tuned) return;
  const std::vector<int> depths = LongContextDepths(opt_);
  if (depths.empty()) return;
  std::set<int> validated, at_depth0;
  for (const auto& r : PlacementResults(cur_)) {
    if (r.config.n_depth == 0) at_depth0.insert(r.config.placement.n_cpu_moe);
  }
  Analysis a = AnalyzeNow(cur_, true);
  // Collapse is relative: a placement that should stay healthy at the target
  // context is measured too, the plan's boundary there (it fits with the
  // margin) when it is more conservative than the recommendation.
  std::optional<int> reference;
  if (a.recommendation.n_cpu_moe) {
    reference = std::clamp(std::max(space_.predicted_boundary, *a.recommendation.n_cpu_moe), 0,
                           space_.n_layer);
  }
  int narrowed = 0;
  for (int round = 0; round < opt_.rules.long_context_rounds; ++round) {
    std::set<int> cands;
    if (a.recommendation.edge >= 0) cands.insert(a.recommendation.edge);
    if (a.recommendation.n_cpu_moe) cands.insert(*a.recommendation.n_cpu_moe);
    if (round == 0 && reference) cands.insert(*reference);
    // A placement that fails or collapses at depth bounds the ones below it;
    // bisect toward the nearest healthy one so that the boundary at the target
    // context is known to one layer.
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
    std::vector<Settings> todo, fresh;
    for (int n : cands) {
      if (validated.count(n)) continue;
      validated.insert(n);
      Settings s = cur_;
      s.n = n;
      todo.push_back(s);
      if (!at_depth0.count(n)) fresh.push_back(s);
    }
    if (todo.empty()) {
      // Ties pull the recommendation away from the edge (a tie goes to the
      // safer N): more repetitions at depth 0 for the placements between them
      // narrow the tie, and any new candidate is validated in the next round.
      const int edge = a.recommendation.edge;
      const int rec = a.recommendation.n_cpu_moe.value_or(-1);
      if (narrowed >= opt_.rules.tie_narrowing_rounds || out_of_time_ || edge < 0 ||
          rec <= edge + 1)
        break;
      std::vector<Settings> more;
      for (int n : at_depth0) {
        if (n < edge || n > rec) continue;
        Settings s = cur_;
        s.n = n;
        const Scored sc = Score(s, 0);
        if (sc.pp && static_cast<int>(sc.pp->n) + opt_.repetitions <= opt_.max_repetitions)
          more.push_back(s);
      }
      if (more.size() < 2) break;
      ++narrowed;
      Measure(more, 0, opt_.repetitions, "placement (more repetitions)");
      a = AnalyzeNow(cur_, true);
      continue;
    }
    // The ratio to depth 0 needs depth 0 too.
    if (!fresh.empty()) Measure(fresh, 0, opt_.repetitions, "long context");
    for (const auto& f : fresh) at_depth0.insert(f.n);
    for (int d : depths) Measure(todo, d, opt_.depth_repetitions, "long context");
    if (out_of_time_) break;
    a = AnalyzeNow(cur_, true);
  }
  a = AnalyzeNow(cur_, true);
  result_.analysis = a;
  if (!a.recommendation.n_cpu_moe) {
    // Nothing measured holds at the target context: the most conservative
    // placement, said plainly.
    cur_.n = space_.n_layer;
    Decision d = MakeDecision(phase_, fmt::format("--n-cpu-moe {}", cur_.n),
                              RecommendationRuleName(RecommendationRule::kNothingUsable),
                              "no measured placement runs at the target context without failing "
                              "or collapsing: every expert stays on the CPU");
    d.rejections = a.rejected;
    result_.decisions.push_back(std::move(d));
    result_.notes.push_back(fmt::format(
        "no placement measured at {} tokens of context held: even --n-cpu-moe {} may not fit this "
        "GPU; lower -ngl or the context (moetune plan shows the memory)",
        opt_.ctx, cur_.n));
    return;
  }
  const int before = cur_.n;
  // One layer safer than an edge at the all-CPU end is the all-CPU end.
  cur_.n = std::min(*a.recommendation.n_cpu_moe, space_.n_layer);
  validated_ = cur_;
  Decision d = MakeDecision(
      phase_, fmt::format("--n-cpu-moe {}", cur_.n),
      RecommendationRuleName(a.recommendation.rule) +
          (before != cur_.n ? fmt::format(" (changed from {})", before) : std::string()),
      "");
  d.depth_checks = a.depth_checks;
  for (const auto& r : a.rejected) {
    if (r.kind == RejectionKind::kFailsAtDepth || r.kind == RejectionKind::kInferredAtDepth)
      d.rejections.push_back(r);
  }
  if (d.depth_checks.empty() && d.rejections.empty()) d.evidence = "no depth measurement completed";
  d.reading = a.recommendation;
  result_.decisions.push_back(std::move(d));
}

Tuner::Scored Tuner::Score(const Settings& st, int depth) const {
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

Choice Tuner::MeasureAndChoose(const std::vector<Settings>& cands, const std::string& label,
                               std::vector<Scored>* scored) {
  Measure(cands, 0, opt_.repetitions, label);
  scored->clear();
  for (const auto& c : cands) scored->push_back(Score(c, 0));
  auto choose = [&] {
    std::vector<std::optional<Estimate>> objectives;
    for (const auto& sc : *scored) objectives.push_back(sc.objective);
    return Choose(objectives, opt_.rules.analysis.curve);
  };
  Choice choice = choose();
  // More repetitions for the contenders tied with the best until the intervals
  // separate (or the repetitions or the budget run out).
  for (int round = 0; round < opt_.rules.repetition_rounds && !out_of_time_; ++round) {
    std::vector<Settings> todo;
    for (size_t i = 0; i < cands.size(); ++i) {
      const int n = (*scored)[i].pp ? static_cast<int>((*scored)[i].pp->n) : 0;
      const Standing st = choice.standings[i];
      if ((st == Standing::kBest || st == Standing::kTied) &&
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

void Tuner::TuneThreads() {
  phase_ = TunePhase::kThreads;
  std::vector<ThreadCandidate> cands = space_.threads;
  if (cands.size() < 2) {
    if (!cands.empty()) cur_.threads = cands[0].threads;
    return;
  }
  // Ties go to fewer threads (cores left for the rest of the machine).
  std::sort(cands.begin(), cands.end(),
            [](const auto& x, const auto& y) { return x.threads < y.threads; });
  std::vector<Settings> ss;
  for (const auto& c : cands) {
    Settings s = cur_;
    s.threads = c.threads;
    ss.push_back(s);
  }
  std::vector<Scored> scored;
  const Choice choice = MeasureAndChoose(ss, "threads", &scored);
  const size_t chosen = Chosen(choice);
  cur_.threads = ss[chosen].threads;
  std::string evidence;
  for (size_t i = 0; i < ss.size(); ++i) {
    const auto& c = scored[i];
    evidence +=
        fmt::format("{}-t {} ({}): prefill {:.1f}, decode {:.1f} t/s (n={}){}", i ? "; " : "",
                    ss[i].threads, cands[i].why, c.pp ? c.pp->mean : 0, c.tg ? c.tg->mean : 0,
                    c.pp ? c.pp->n : 0, Verdict(choice.standings[i]));
  }
  result_.decisions.push_back(
      MakeDecision(phase_, fmt::format("-t {}", cur_.threads),
                   choice.standings[chosen] == Standing::kBest
                       ? "fastest beyond the noise"
                       : "within the noise of the best; a tie goes to fewer threads",
                   evidence));
}

namespace {

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

}  // namespace

void Tuner::TuneMicroBatch() {
  phase_ = TunePhase::kMicroBatch;
  std::vector<Settings> ss;
  std::vector<std::string> why;
  std::string skipped;  // sizes not tried, for the decision's evidence
  // The plan moves N for a micro-batch where it agrees that the current,
  // measured setting fits; otherwise the measured setting's GPU allocation
  // bounds a larger micro-batch's. The final check at the target context has
  // the last word (FinalCheck).
  const bool plan_judges = Fits(cur_.n, cur_.ubatch, cur_.kv_type);
  for (int ub : MicroBatchCandidates(space_, opt_)) {
    Settings s = cur_;
    s.ubatch = ub;
    s.batch = std::max(cur_.batch, ub);
    std::string w;
    if (plan_judges && !Fits(s.n, ub, s.kv_type)) {
      if (s.n + 1 > space_.n_layer || !Fits(s.n + 1, ub, s.kv_type)) {
        skipped += fmt::format("; -ub {}: not tried (its compute buffer does not fit)", ub);
        continue;
      }
      s.n += 1;
      w = " (needs one more layer on the CPU for its compute buffer)";
    } else if (!plan_judges) {
      const std::optional<int> n = WithinMeasuredGpuAllocation(space_, cur_, ub);
      if (!n) {
        skipped += fmt::format(
            "; -ub {}: not tried (no N keeps its GPU allocation within the validated one)", ub);
        continue;
      }
      if (*n > s.n)
        w = fmt::format(" (needs {} more layer(s) on the CPU for its compute buffer)", *n - s.n);
      s.n = *n;
    }
    ss.push_back(s);
    why.push_back(w);
  }
  if (ss.size() < 2) {
    if (!skipped.empty())
      result_.decisions.push_back(MakeDecision(phase_,
                                               fmt::format("-ub {} -b {}", cur_.ubatch, cur_.batch),
                                               "the only size that fits", skipped.substr(2)));
    return;
  }
  std::vector<Scored> scored;
  const Choice choice = MeasureAndChoose(ss, "micro-batch", &scored);
  const size_t chosen = Chosen(choice);
  std::string evidence = fmt::format("prefill of {} tokens: ", opt_.n_prompt);
  for (size_t i = 0; i < ss.size(); ++i) {
    evidence +=
        fmt::format("{}-ub {}{}: {:.1f} t/s{}{}", i ? "; " : "", ss[i].ubatch,
                    ss[i].n != cur_.n ? fmt::format(" at N={}", ss[i].n) : "",
                    scored[i].pp ? scored[i].pp->mean : 0, Verdict(choice.standings[i]), why[i]);
  }
  evidence += skipped;
  cur_.ubatch = ss[chosen].ubatch;
  cur_.batch = ss[chosen].batch;
  cur_.n = ss[chosen].n;
  result_.decisions.push_back(
      MakeDecision(phase_, fmt::format("-ub {} -b {}", cur_.ubatch, cur_.batch),
                   choice.standings[chosen] == Standing::kBest
                       ? "fastest beyond the noise"
                       : "within the noise of the best; a tie goes to the smaller micro-batch",
                   evidence));
}

void Tuner::TuneFlashAttention() {
  phase_ = TunePhase::kFlashAttention;
  if (!space_.try_flash_attn) return;
  std::vector<Settings> ss;
  for (FlashAttn fa : {FlashAttn::kOn, FlashAttn::kOff}) {
    Settings s = cur_;
    s.flash_attn = fa;
    // Without flash attention the compute buffer holds the whole score matrix:
    // a pick without it is measured at the target context (FinalCheck).
    ss.push_back(s);
  }
  std::vector<Scored> scored;
  const Choice choice = MeasureAndChoose(ss, "flash attention", &scored);
  const size_t chosen = Chosen(choice);
  cur_.flash_attn = ss[chosen].flash_attn;
  result_.decisions.push_back(
      MakeDecision(phase_, std::string("-fa ") + FlashAttnName(cur_.flash_attn),
                   choice.standings[chosen] == Standing::kBest
                       ? "fastest beyond the noise"
                       : "tie: flash attention stays on (smaller compute buffer)",
                   TwoSettingsEvidence({"on", "off"}, scored, choice)));
}

void Tuner::TuneLoadMode() {
  phase_ = TunePhase::kLoadMode;
  if (!space_.try_load_mode) return;
  std::vector<Settings> ss;
  for (LoadMode lm : {LoadMode::kDefault, LoadMode::kNone}) {
    Settings s = cur_;
    s.load_mode = lm;
    ss.push_back(s);
  }
  std::vector<Scored> scored;
  const Choice choice = MeasureAndChoose(ss, "load mode", &scored);
  const size_t chosen = Chosen(choice);
  cur_.load_mode = ss[chosen].load_mode;
  result_.decisions.push_back(MakeDecision(
      phase_,
      cur_.load_mode == LoadMode::kDefault ? "memory-mapped (default)"
                                           : "-lm none (loaded, pinned; --no-mmap in older builds)",
      choice.standings[chosen] == Standing::kBest ? "fastest beyond the noise"
                                                  : "tie: the default stays",
      TwoSettingsEvidence({"mmap", "loaded"}, scored, choice)));
}

std::optional<DepthSpeeds> Tuner::PrefillAtDepth(const Settings& s, int depth) const {
  const Scored d0 = Score(s, 0), deep = Score(s, depth);
  if (!d0.pp || !deep.pp) return std::nullopt;
  return DepthSpeeds{d0.pp->best, deep.pp->best};
}

void Tuner::TryKvQuant() {
  phase_ = TunePhase::kKvCacheType;
  if (!space_.try_kv_quant || !result_.placement_tuned || cur_.n == 0) return;
  // Only when a q8_0 cache buys a layer of experts on the GPU.
  const int n = cur_.n - 1;
  if (!space_.fits || !Fits(n, cur_.ubatch, ggml_type::kQ8_0) ||
      Fits(n, cur_.ubatch, cur_.kv_type)) {
    const std::string kv = GgmlTypeName(cur_.kv_type);
    result_.decisions.push_back(
        MakeDecision(phase_, "-ctk " + kv + " -ctv " + kv, "not tried",
                     "a q8_0 KV cache does not free enough memory for another layer "
                     "of experts on the GPU"));
    return;
  }
  Settings q = cur_;
  q.n = n;
  q.kv_type = ggml_type::kQ8_0;
  q.flash_attn = FlashAttn::kOn;  // a quantized V cache needs flash attention
  std::vector<Scored> scored;
  const Choice choice = MeasureAndChoose({cur_, q}, "KV cache type", &scored);
  // A layer gained at depth 0 is worth nothing if prefill collapses at the
  // target context: the collapse rule, with the f16 cache as the reference.
  const int deep = static_cast<int>(std::max<int64_t>(opt_.ctx - opt_.n_prompt, 0));
  bool collapses = false;
  if (deep > 0) {
    Measure({cur_, q}, deep, opt_.depth_repetitions, "KV cache type");
    const auto f16 = PrefillAtDepth(cur_, deep), q8 = PrefillAtDepth(q, deep);
    collapses = f16 && q8 && Collapses(*q8, *f16, opt_.rules.analysis.collapse);
  }
  const bool take = choice.standings[1] == Standing::kBest &&
                    choice.standings[0] == Standing::kWorse && !collapses;
  if (take) cur_ = q;
  result_.decisions.push_back(MakeDecision(
      phase_,
      take ? fmt::format("-ctk q8_0 -ctv q8_0 with --n-cpu-moe {}", n) : "-ctk f16 -ctv f16",
      take ? "a q8_0 cache buys a layer and is faster beyond the noise"
           : (collapses ? "rejected: prefill collapses with depth" : "not faster beyond the noise"),
      fmt::format("f16 at N={}: {:.4f} requests/s; q8_0 at N={}: {:.4f} requests/s", n + 1,
                  scored[0].objective ? scored[0].objective->mean : 0, n,
                  scored[1].objective ? scored[1].objective->mean : 0)));
}

void Tuner::FinalCheck() {
  phase_ = TunePhase::kFinalCheck;
  const std::vector<int> depths = LongContextDepths(opt_);
  if (!validated_ || depths.empty()) return;
  const Settings& v = *validated_;
  if (cur_.n == v.n && cur_.ubatch == v.ubatch && cur_.batch == v.batch &&
      cur_.flash_attn == v.flash_attn && cur_.kv_type == v.kv_type)
    return;
  const int deep = depths.back();
  if (!Score(cur_, deep).pp) {
    Measure({cur_}, deep, opt_.depth_repetitions, "final check");
    if (out_of_time_) return;
  }
  // The collapse rule (tune/rules.h), with the validated settings as the
  // reference.
  std::string why;
  if (!Score(cur_, deep).pp) {
    why = fmt::format("it does not run at depth {}", deep);
  } else if (const auto c = PrefillAtDepth(cur_, deep), r = PrefillAtDepth(v, deep);
             c && r && Collapses(*c, *r, opt_.rules.analysis.collapse)) {
    why = fmt::format(
        "its prefill keeps {:.0f}% of its depth-0 speed at depth {}, the validated settings "
        "{:.0f}%",
        c->ratio() * 100, deep, r->ratio() * 100);
  }
  const std::string now = fmt::format("--n-cpu-moe {} -ub {} -fa {} -ctk {}", cur_.n, cur_.ubatch,
                                      FlashAttnName(cur_.flash_attn), GgmlTypeName(cur_.kv_type));
  if (why.empty()) {
    result_.decisions.push_back(
        MakeDecision(phase_, now, "the changed settings hold at the target context",
                     fmt::format("measured at depth {}: no failure, no collapse", deep)));
    return;
  }
  cur_.n = v.n;
  cur_.ubatch = v.ubatch;
  cur_.batch = v.batch;
  cur_.flash_attn = v.flash_attn;
  cur_.kv_type = v.kv_type;
  result_.decisions.push_back(
      MakeDecision(phase_,
                   fmt::format("--n-cpu-moe {} -ub {} -fa {} -ctk {}", cur_.n, cur_.ubatch,
                               FlashAttnName(cur_.flash_attn), GgmlTypeName(cur_.kv_type)),
                   "undone: the changed settings fail at the target context", now + ": " + why));
}

void Tuner::CompareWithDefaults() {
  phase_ = TunePhase::kDefaults;
  if (!space_.defaults) return;
  DefaultsComparison d;
  d.defaults = *space_.defaults;
  d.how = space_.defaults_how;
  const int deep = static_cast<int>(std::max<int64_t>(opt_.ctx - opt_.n_prompt, 0));
  auto measure_config = [&](const ServerConfig& base, int depth, int reps) {
    std::vector<RunConfig> want;
    for (bool prefill : {true, false}) {
      RunConfig c(base);
      c.n_depth = depth;
      c.n_prompt = prefill ? opt_.n_prompt : 0;
      c.n_gen = prefill ? 0 : opt_.n_gen;
      c.repetitions = reps;
      want.push_back(c);
    }
    return MeasureConfigs(
        want, fmt::format("llama.cpp defaults{}", depth ? fmt::format(" @ d{}", depth) : ""));
  };
  auto seconds = [&](const std::vector<RunResult>& rs) -> std::optional<double> {
    Cell cell;
    for (const auto& r : rs) (r.config.n_prompt > 0 ? cell.prefill : cell.decode).push_back(&r);
    const auto p = PointOf(0, cell, opt_.workload);
    if (!p || !p->prefill || !p->decode) return std::nullopt;
    return opt_.workload.SecondsPerRequest(p->prefill->mean, p->decode->mean);
  };
  const ServerConfig tuned = SettingsConfig(space_, cur_);
  d.default_seconds_depth0 = seconds(measure_config(d.defaults, 0, opt_.repetitions));
  d.tuned_seconds_depth0 = seconds(measure_config(tuned, 0, opt_.repetitions));
  if (deep > 0) {
    d.default_seconds_ctx = seconds(measure_config(d.defaults, deep, opt_.depth_repetitions));
    d.tuned_seconds_ctx = seconds(measure_config(tuned, deep, opt_.depth_repetitions));
  }
  if (!d.default_seconds_depth0) d.note = "llama.cpp's defaults did not produce a measurement";
  result_.versus_defaults = d;
}

TuneResult Tuner::Run() {
  start_ = std::chrono::steady_clock::now();
  cur_.threads = space_.threads.empty() ? 1 : space_.threads.front().threads;
  cur_.ubatch = space_.base.n_ubatch;
  cur_.batch = space_.base.n_batch;
  cur_.flash_attn = space_.base.flash_attn;
  cur_.kv_type = space_.base.type_k;
  SearchPlacement();
  if (!out_of_time_) ValidateLongContext();
  if (!out_of_time_) TuneThreads();
  if (!out_of_time_) TuneMicroBatch();
  if (!out_of_time_) TuneFlashAttention();
  if (!out_of_time_) TuneLoadMode();
  if (!out_of_time_) TryKvQuant();
  if (!out_of_time_) FinalCheck();
  if (!out_of_time_) CompareWithDefaults();
  if (result_.analysis.curves.empty()) result_.analysis = AnalyzeNow(cur_, true);
  // The pick as the command runs it: the tuned settings at the target
  // context, one slot, the placement as measured (-fit off).
  result_.best = SettingsConfig(space_, cur_);
  result_.best.ctx_size = opt_.ctx;
  result_.best.n_parallel = 1;
  result_.best.fit = Switch::kOff;
  if (!space_.moe) result_.best.placement.n_cpu_moe = -1;  // dense: no --n-cpu-moe, as plan
  if (!space_.placement_matters) {
    // No GPU: every layer on the host, written as plan writes it (-ngl 0;
    // --n-cpu-moe only moves the experts of GPU layers).
    result_.best.placement.n_gpu_layers = 0;
    result_.best.placement.n_cpu_moe = -1;
  }
  if (space_.memory_of) result_.memory = space_.memory_of(result_.best);
  result_.measurements = all_;
  result_.comparisons =
      CompareTuneDimensions(all_, opt_.workload, cur_.n, opt_.rules.analysis.curve);
  result_.measured = measured_;
  result_.resumed = resumed_;
  result_.seconds = Elapsed();
  result_.budget_exhausted = out_of_time_;
  if (out_of_time_) {
    result_.notes.push_back(fmt::format(
        "the time budget ({:.0f} s) ran out in the {} phase: this is the best configuration so "
        "far; run the same command again with a larger --budget to continue from the journal",
        opt_.budget_seconds, TunePhaseName(phase_)));
  }
  return result_;
}

}  // namespace moetune
