#include "tune/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include "tune/measurements.h"

namespace moetune {
namespace {

std::string Join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

namespace {

// The best objective; ties (within the noise) go to the earliest candidate.
template <typename S>
size_t Choose(const std::vector<S>& s, std::vector<int>* cmp) {
  const CurveRules rules;
  size_t best = 0;
  bool any = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].objective && (!any || s[i].objective->mean > s[best].objective->mean)) {
      best = i;
      any = true;
    }
  }
  cmp->assign(s.size(), -2);
  if (!any) return 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].objective)
      (*cmp)[i] = i == best ? 1 : CompareEstimates(*s[i].objective, *s[best].objective, rules);
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if ((*cmp)[i] >= 0) return i;
  }
  return best;
}

std::string Verdict(int cmp) {
  return cmp == 1 ? " best" : (cmp == 0 ? " tie" : (cmp == -1 ? " worse" : " not measured"));
}

// "A: prefill X, decode Y t/s best; B: ... t/s tie" for a choice between two settings.
template <typename Scored>
std::string TwoSettingsEvidence(const std::array<const char*, 2>& names,
                                const std::vector<Scored>& scored, const std::vector<int>& cmp) {
  std::string out;
  for (size_t i = 0; i < 2; ++i) {
    out += fmt::format("{}{}: prefill {:.1f}, decode {:.1f} t/s{}", i == 0 ? "" : "; ", names[i],
                       scored[i].pp ? scored[i].pp->mean : 0, scored[i].tg ? scored[i].tg->mean : 0,
                       Verdict(cmp[i]));
  }
  return out;
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

bool Tuner::Fits(int n, int ubatch, const std::string& kv) const {
  return !space_.fits || space_.fits(n, ubatch, kv);
}

RunConfig TuneRunConfig(const TuneSpace& space, const TuneOptions& o, const TuneSettings& s,
                        bool prefill, int depth) {
  RunConfig c;
  c.model = space.model;
  c.placement = space.base;
  c.placement.n_cpu_moe = s.n;
  c.placement.n_ubatch = s.ubatch;
  c.placement.n_batch = std::max(s.batch, s.ubatch);
  c.placement.type_k = s.kv_type;
  c.placement.type_v = s.kv_type;
  c.placement.flash_attn = s.flash_attn;
  c.load_mode = s.load_mode;
  c.threads = s.threads;
  c.n_depth = depth;
  c.n_prompt = prefill ? std::max(o.n_prompt, 1) : 0;
  c.n_gen = prefill ? 0 : std::max(o.n_gen, 1);
  c.repetitions = o.repetitions;
  return c;
}

std::vector<int> LongContextDepths(const TuneOptions& o) {
  std::vector<int> depths;
  if (o.ctx <= o.n_prompt) return depths;
  for (int64_t d : {o.ctx / 4, o.ctx - o.n_prompt}) {
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
    if (ub <= std::max(WorkloadPrompt(o), 512)) out.push_back(ub);
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
      auto st = journal_->Append(r);
      if (!st.ok()) result_.notes.push_back("journal: " + st.error().message());
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
    if (c.threads == f.threads && c.placement.n_ubatch == f.ubatch &&
        c.placement.type_k == f.kv_type && c.placement.flash_attn == f.flash_attn &&
        c.load_mode == f.load_mode && c.n_prompt == (c.n_prompt > 0 ? opt_.n_prompt : 0) &&
        c.n_gen == (c.n_gen > 0 ? opt_.n_gen : 0))
      rs.push_back(r);
  }
  return rs;
}

Analysis Tuner::AnalyzeNow(const Settings& fixed, bool with_ctx) const {
  AnalysisOptions o;
  o.workload = opt_.workload;
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
  phase_ = "placement";
  const int L = space_.n_layer;
  if (!space_.moe) {
    cur_.n = 0;
    result_.placement_tuned = false;
    result_.decisions.push_back({phase_, "-ngl from the plan", "dense model",
                                 "no routed experts: --n-cpu-moe does not apply"});
    return;
  }
  if (!space_.placement_matters) {
    cur_.n = space_.fixed_n;
    result_.placement_tuned = false;
    result_.decisions.push_back(
        {phase_, fmt::format("--n-cpu-moe {}", cur_.n), "no GPU in the engine",
         "the engine has no GPU device, so where the experts live does not change speed: "
         "placement was not measured; N comes from the memory plan"});
    return;
  }
  const int b0 = std::clamp(space_.predicted_boundary, 0, L);
  std::set<int> measured;
  std::vector<int> next;
  for (int n : {b0 - 1, b0, b0 + 1, b0 + 3}) {
    if (n >= 0 && n <= L && std::find(next.begin(), next.end(), n) == next.end()) next.push_back(n);
  }
  int down_step = 1, up_step = 3;
  Analysis a;
  for (int round = 0; round < 24 && !next.empty(); ++round) {
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
      if (rj.reason.rfind("beyond the cliff", 0) == 0 || rj.reason.rfind("failed", 0) == 0)
        floor = std::max(floor, rj.n_cpu_moe);
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
    result_.decisions.push_back({phase_, fmt::format("--n-cpu-moe {}", L), "nothing usable",
                                 "no placement ran; all experts stay on the CPU"});
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
  evidence += "; " + a.recommendation.reason;
  result_.decisions.push_back(
      {phase_, fmt::format("--n-cpu-moe {}", cur_.n), a.recommendation.rule, evidence});
}

namespace {

// Rejected for what happens at depth (measured there, not inferred).
bool BadAtDepth(const Analysis& a, int n) {
  for (const auto& r : a.rejected) {
    if (r.n_cpu_moe == n && (r.reason.rfind("prefill collapses", 0) == 0 ||
                             r.reason.rfind("fails to run at depth", 0) == 0))
      return true;
  }
  return false;
}

}  // namespace

void Tuner::ValidateLongContext() {
  phase_ = "long context";
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
  for (int round = 0; round < 16; ++round) {
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
      if (narrowed >= 2 || out_of_time_ || edge < 0 || rec <= edge + 1) break;
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
    std::string why;
    for (const auto& r : a.rejected)
      why += fmt::format("{}N={}: {}", why.empty() ? "" : "; ", r.n_cpu_moe, r.reason);
    result_.decisions.push_back(
        {phase_, fmt::format("--n-cpu-moe {}", cur_.n), "nothing usable",
         "no measured placement runs at the target context without failing or collapsing (" + why +
             "); every expert stays on the CPU"});
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
  std::string evidence;
  for (const auto& c : a.depth_checks) {
    evidence += fmt::format("{}N={} at depth {}: prefill x{:.2f} of depth 0 (healthiest x{:.2f}){}",
                            evidence.empty() ? "" : "; ", c.n_cpu_moe, c.depth, c.ratio,
                            c.reference_ratio, c.collapsed ? ", COLLAPSED" : "");
  }
  for (const auto& r : a.rejected) {
    if (r.reason.rfind("fails to run at depth", 0) == 0 ||
        r.reason.rfind("more experts on the GPU", 0) == 0)
      evidence += fmt::format("{}N={} {}", evidence.empty() ? "" : "; ", r.n_cpu_moe, r.reason);
  }
  if (evidence.empty()) evidence = "no depth measurement completed";
  result_.decisions.push_back(
      {phase_, fmt::format("--n-cpu-moe {}", cur_.n),
       a.recommendation.rule + (before != cur_.n ? fmt::format(" (changed from {})", before) : ""),
       evidence + "; " + a.recommendation.reason});
}

Tuner::Scored Tuner::Score(const Settings& st, int depth) const {
  std::vector<RunResult> rs;
  for (bool prefill : {true, false}) {
    RunConfig c = Make(st, prefill, depth);
    if (depth > 0) c.repetitions = opt_.depth_repetitions;  // as Measure ran it
    const std::string k = Journal::Key(c);
    for (const auto& r : all_) {
      if (Journal::Key(r.config) == k) rs.push_back(r);
    }
  }
  AnalysisOptions o;
  o.workload = opt_.workload;
  const Analysis x = Analyze(rs, o);  // pools repeated measurements, objective by delta method
  if (x.curves.empty() || x.curves.front().points.empty()) return {};
  const auto& p = x.curves.front().points.front();
  return {p.prefill, p.decode, p.objective};
}

size_t Tuner::MeasureAndChoose(const std::vector<Settings>& cands, const std::string& label,
                               std::vector<Scored>* scored, std::vector<int>* cmp) {
  Measure(cands, 0, opt_.repetitions, label);
  scored->clear();
  for (const auto& c : cands) scored->push_back(Score(c, 0));
  size_t chosen = Choose(*scored, cmp);
  // More repetitions for the contenders tied with the best until the intervals
  // separate (or the repetitions or the budget run out).
  for (int round = 0; round < 4 && !out_of_time_; ++round) {
    std::vector<Settings> todo;
    for (size_t i = 0; i < cands.size(); ++i) {
      const int n = (*scored)[i].pp ? static_cast<int>((*scored)[i].pp->n) : 0;
      if ((*cmp)[i] >= 0 && n + opt_.repetitions <= opt_.max_repetitions) todo.push_back(cands[i]);
    }
    const bool tied = std::count(cmp->begin(), cmp->end(), 0) > 0;
    if (!tied || todo.size() < 2) break;
    Measure(todo, 0, opt_.repetitions, label + " (more repetitions)");
    for (size_t i = 0; i < cands.size(); ++i) (*scored)[i] = Score(cands[i], 0);
    chosen = Choose(*scored, cmp);
  }
  return chosen;
}

void Tuner::TuneThreads() {
  phase_ = "threads";
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
  std::vector<int> cmp;
  const size_t chosen = MeasureAndChoose(ss, "threads", &scored, &cmp);
  cur_.threads = ss[chosen].threads;
  std::string evidence;
  for (size_t i = 0; i < ss.size(); ++i) {
    const auto& c = scored[i];
    evidence += fmt::format("{}-t {} ({}): prefill {:.1f}, decode {:.1f} t/s (n={}){}",
                            i ? "; " : "", ss[i].threads, cands[i].why, c.pp ? c.pp->mean : 0,
                            c.tg ? c.tg->mean : 0, c.pp ? c.pp->n : 0, Verdict(cmp[i]));
  }
  result_.decisions.push_back({phase_, fmt::format("-t {}", cur_.threads),
                               cmp[chosen] == 1
                                   ? "fastest beyond the noise"
                                   : "within the noise of the best; a tie goes to fewer threads",
                               evidence});
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
  phase_ = "micro-batch";
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
      result_.decisions.push_back({phase_, fmt::format("-ub {} -b {}", cur_.ubatch, cur_.batch),
                                   "the only size that fits", skipped.substr(2)});
    return;
  }
  std::vector<Scored> scored;
  std::vector<int> cmp;
  const size_t chosen = MeasureAndChoose(ss, "micro-batch", &scored, &cmp);
  std::string evidence = fmt::format("prefill of {} tokens: ", opt_.n_prompt);
  for (size_t i = 0; i < ss.size(); ++i) {
    evidence += fmt::format("{}-ub {}{}: {:.1f} t/s{}{}", i ? "; " : "", ss[i].ubatch,
                            ss[i].n != cur_.n ? fmt::format(" at N={}", ss[i].n) : "",
                            scored[i].pp ? scored[i].pp->mean : 0, Verdict(cmp[i]), why[i]);
  }
  evidence += skipped;
  cur_.ubatch = ss[chosen].ubatch;
  cur_.batch = ss[chosen].batch;
  cur_.n = ss[chosen].n;
  result_.decisions.push_back(
      {phase_, fmt::format("-ub {} -b {}", cur_.ubatch, cur_.batch),
       cmp[chosen] == 1 ? "fastest beyond the noise"
                        : "within the noise of the best; a tie goes to the smaller micro-batch",
       evidence});
}

void Tuner::TuneFlashAttention() {
  phase_ = "flash attention";
  if (!space_.try_flash_attn) return;
  std::vector<Settings> ss;
  for (const char* fa : {"on", "off"}) {
    Settings s = cur_;
    s.flash_attn = fa;
    // Without flash attention the compute buffer holds the whole score matrix:
    // a pick without it is measured at the target context (FinalCheck).
    ss.push_back(s);
  }
  std::vector<Scored> scored;
  std::vector<int> cmp;
  const size_t chosen = MeasureAndChoose(ss, "flash attention", &scored, &cmp);
  cur_.flash_attn = ss[chosen].flash_attn;
  result_.decisions.push_back({phase_, "-fa " + cur_.flash_attn,
                               cmp[chosen] == 1
                                   ? "fastest beyond the noise"
                                   : "tie: flash attention stays on (smaller compute buffer)",
                               TwoSettingsEvidence({"on", "off"}, scored, cmp)});
}

void Tuner::TuneLoadMode() {
  phase_ = "load mode";
  if (!space_.try_load_mode) return;
  std::vector<Settings> ss;
  for (const char* lm : {"", "none"}) {
    Settings s = cur_;
    s.load_mode = lm;
    ss.push_back(s);
  }
  std::vector<Scored> scored;
  std::vector<int> cmp;
  const size_t chosen = MeasureAndChoose(ss, "load mode", &scored, &cmp);
  cur_.load_mode = ss[chosen].load_mode;
  result_.decisions.push_back(
      {phase_,
       cur_.load_mode.empty() ? "memory-mapped (default)"
                              : "-lm none (loaded, pinned; --no-mmap in older builds)",
       cmp[chosen] == 1 ? "fastest beyond the noise" : "tie: the default stays",
       TwoSettingsEvidence({"mmap", "loaded"}, scored, cmp)});
}

void Tuner::TryKvQuant() {
  phase_ = "KV cache type";
  if (!space_.try_kv_quant || !result_.placement_tuned || cur_.n == 0) return;
  // Only when a q8_0 cache buys a layer of experts on the GPU.
  const int n = cur_.n - 1;
  if (!space_.fits || !Fits(n, cur_.ubatch, "q8_0") || Fits(n, cur_.ubatch, cur_.kv_type)) {
    result_.decisions.push_back({phase_, "-ctk " + cur_.kv_type + " -ctv " + cur_.kv_type,
                                 "not tried",
                                 "a q8_0 KV cache does not free enough memory for another layer "
                                 "of experts on the GPU"});
    return;
  }
  Settings q = cur_;
  q.n = n;
  q.kv_type = "q8_0";
  q.flash_attn = "on";  // a quantized V cache needs flash attention
  std::vector<Scored> scored;
  std::vector<int> cmp;
  MeasureAndChoose({cur_, q}, "KV cache type", &scored, &cmp);
  // A layer gained at depth 0 is worth nothing if prefill collapses at the target context.
  const int deep = static_cast<int>(std::max<int64_t>(opt_.ctx - opt_.n_prompt, 0));
  bool collapses = false;
  if (deep > 0) {
    Measure({cur_, q}, deep, opt_.depth_repetitions, "KV cache type");
    const Scored d0 = Score(cur_, deep), d1 = Score(q, deep);
    if (d0.pp && d1.pp && scored[0].pp && scored[1].pp && scored[0].pp->mean > 0 &&
        scored[1].pp->mean > 0) {
      collapses = d1.pp->mean / scored[1].pp->mean < 0.7 * (d0.pp->mean / scored[0].pp->mean);
    }
  }
  const bool take = cmp[1] == 1 && cmp[0] == -1 && !collapses;
  if (take) cur_ = q;
  result_.decisions.push_back(
      {phase_,
       take ? fmt::format("-ctk q8_0 -ctv q8_0 with --n-cpu-moe {}", n) : "-ctk f16 -ctv f16",
       take
           ? "a q8_0 cache buys a layer and is faster beyond the noise"
           : (collapses ? "rejected: prefill collapses with depth" : "not faster beyond the noise"),
       fmt::format("f16 at N={}: {:.4f} requests/s; q8_0 at N={}: {:.4f} requests/s", n + 1,
                   scored[0].objective ? scored[0].objective->mean : 0, n,
                   scored[1].objective ? scored[1].objective->mean : 0)});
}

void Tuner::FinalCheck() {
  phase_ = "final check";
  const std::vector<int> depths = LongContextDepths(opt_);
  if (!validated_ || depths.empty()) return;
  const Settings& v = *validated_;
  if (cur_.n == v.n && cur_.ubatch == v.ubatch && cur_.batch == v.batch &&
      cur_.flash_attn == v.flash_attn && cur_.kv_type == v.kv_type)
    return;
  const int deep = depths.back();
  // Prefill at the target context relative to depth 0, from the fastest
  // repetitions (as the collapse rule of tune/analysis.h reads it).
  auto best = [&](const Settings& s, int depth) -> std::optional<double> {
    RunConfig c = Make(s, true, depth);
    if (depth > 0) c.repetitions = opt_.depth_repetitions;
    const std::string k = Journal::Key(c);
    std::optional<double> m;
    for (const auto& r : all_) {
      if (!r.ok() || Journal::Key(r.config) != k) continue;
      for (double x : r.samples_ts) m = std::max(m.value_or(0.0), x);
    }
    return m;
  };
  if (!best(cur_, deep)) {
    Measure({cur_}, deep, opt_.depth_repetitions, "final check");
    if (out_of_time_) return;
  }
  const auto c0 = best(cur_, 0), cd = best(cur_, deep), v0 = best(v, 0), vd = best(v, deep);
  std::string why;
  if (!cd) {
    why = fmt::format("it does not run at depth {}", deep);
  } else if (c0 && v0 && vd && *c0 > 0 && *cd > 0 && *v0 > 0 && *vd > 0) {
    const double rc = *cd / *c0, rv = *vd / *v0;
    const double added_c = 1 / *cd - 1 / *c0, added_v = 1 / *vd - 1 / *v0;
    if (rc < 0.7 * rv && added_c > 3 * std::max(0.0, added_v)) {
      why = fmt::format(
          "its prefill keeps {:.0f}% of its depth-0 speed at depth {}, the validated settings "
          "{:.0f}%",
          rc * 100, deep, rv * 100);
    }
  }
  const std::string now = fmt::format("--n-cpu-moe {} -ub {} -fa {} -ctk {}", cur_.n, cur_.ubatch,
                                      cur_.flash_attn, cur_.kv_type);
  if (why.empty()) {
    result_.decisions.push_back(
        {phase_, now, "the changed settings hold at the target context",
         fmt::format("measured at depth {}: no failure, no collapse", deep)});
    return;
  }
  cur_.n = v.n;
  cur_.ubatch = v.ubatch;
  cur_.batch = v.batch;
  cur_.flash_attn = v.flash_attn;
  cur_.kv_type = v.kv_type;
  result_.decisions.push_back({phase_,
                               fmt::format("--n-cpu-moe {} -ub {} -fa {} -ctk {}", cur_.n,
                                           cur_.ubatch, cur_.flash_attn, cur_.kv_type),
                               "undone: the changed settings fail at the target context",
                               now + ": " + why});
}

void Tuner::CompareWithDefaults() {
  phase_ = "defaults";
  if (!space_.defaults) return;
  DefaultsComparison d;
  d.defaults = *space_.defaults;
  d.how = space_.defaults_how;
  const int deep = static_cast<int>(std::max<int64_t>(opt_.ctx - opt_.n_prompt, 0));
  auto measure_config = [&](const RunConfig& base, int depth, int reps) {
    std::vector<RunConfig> want;
    for (bool prefill : {true, false}) {
      RunConfig c = base;
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
    AnalysisOptions o;
    o.workload = opt_.workload;
    const Analysis x = Analyze(rs, o);
    if (x.curves.empty() || x.curves.front().points.empty()) return std::nullopt;
    const auto& p = x.curves.front().points.front();
    if (!p.prefill || !p.decode) return std::nullopt;
    return opt_.workload.SecondsPerRequest(p.prefill->mean, p.decode->mean);
  };
  const RunConfig tuned = Make(cur_, true, 0);
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
  result_.best = Make(cur_, true, 0);
  result_.measurements = all_;
  result_.measured = measured_;
  result_.resumed = resumed_;
  result_.seconds = Elapsed();
  result_.budget_exhausted = out_of_time_;
  if (out_of_time_) {
    result_.notes.push_back(fmt::format(
        "the time budget ({:.0f} s) ran out in the {} phase: this is the best configuration so "
        "far; run the same command again with a larger --budget to continue from the journal",
        opt_.budget_seconds, phase_));
  }
  return result_;
}

}  // namespace moetune
