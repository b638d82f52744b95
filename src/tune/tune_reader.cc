#include "tune/tune_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "config/server_argv.h"
#include "config/server_config_json.h"
#include "engine/result_json.h"
#include "model/arch.h"
#include "tune/dimensions.h"
#include "util/command_files.h"
#include "util/json_parse.h"
#include "util/read_file.h"

namespace moetune {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxTuneFileBytes = std::size_t{64} << 20;
constexpr int64_t kMaxBytes = int64_t{1} << 50;

// Typed access to JSON fields that remembers the first field of the wrong
// type (a missing or null field takes its fallback).
class Fields {
 public:
  const json* Get(const json& j, const char* key) const {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
  }
  std::string Str(const json& j, const char* key, const std::string& where) {
    const json* v = Get(j, key);
    if (v == nullptr) return "";
    if (!v->is_string()) return Fail(where, key, "a string"), "";
    return v->get<std::string>();
  }
  bool Bool(const json& j, const char* key, const std::string& where) {
    const json* v = Get(j, key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) return Fail(where, key, "true or false"), false;
    return v->get<bool>();
  }
  std::optional<double> OptNum(const json& j, const char* key, const std::string& where) {
    const json* v = Get(j, key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number() || !std::isfinite(v->get<double>()))
      return Fail(where, key, "a finite number"), std::nullopt;
    return v->get<double>();
  }
  double Num(const json& j, const char* key, const std::string& where) {
    return OptNum(j, key, where).value_or(0);
  }
  std::optional<int64_t> OptInt(const json& j, const char* key, const std::string& where,
                                int64_t lo = std::numeric_limits<int>::min(),
                                int64_t hi = std::numeric_limits<int>::max()) {
    const json* v = Get(j, key);
    if (v == nullptr) return std::nullopt;
    const bool too_large =
        v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi);
    if (v->is_number_integer() && !too_large) {
      const int64_t x = v->get<int64_t>();
      if (x >= lo && x <= hi) return x;
    }
    return Fail(where, key, fmt::format("an integer from {} to {}", lo, hi)), std::nullopt;
  }
  int Int(const json& j, const char* key, const std::string& where, int fallback = 0) {
    return static_cast<int>(OptInt(j, key, where).value_or(fallback));
  }
  // Up to a pebibyte each, so that sums of a dozen of them stay far from overflow.
  int64_t Bytes(const json& j, const char* key, const std::string& where) {
    return OptInt(j, key, where, -kMaxBytes, kMaxBytes).value_or(0);
  }
  std::vector<std::string> Strings(const json& j, const char* key, const std::string& where) {
    std::vector<std::string> out;
    for (const json& v : Array(j, key, where)) {
      if (!v.is_string())
        return Fail(where, key, "an array of strings"), std::vector<std::string>{};
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  // The elements of an array field (empty when missing).
  const json& Array(const json& j, const char* key, const std::string& where) {
    static const json kEmpty = json::array();
    const json* v = Get(j, key);
    if (v == nullptr) return kEmpty;
    if (!v->is_array()) return Fail(where, key, "an array"), kEmpty;
    return *v;
  }
  // An object field, or nullptr when missing or null.
  const json* Object(const json& j, const char* key, const std::string& where) {
    const json* v = Get(j, key);
    if (v != nullptr && !v->is_object()) return Fail(where, key, "an object"), nullptr;
    return v;
  }
  // A nested reader's message, kept as it is.
  void FailWith(const std::string& message) {
    if (error_.empty()) error_ = message;
  }
  void Fail(const std::string& where, const std::string& key, const std::string& want) {
    if (error_.empty()) error_ = fmt::format("{}{} should be {}", where, key, want);
  }
  Status status() const {
    if (error_.empty()) return OkStatus();
    return Error(ErrorKind::kFormat, "tune JSON: " + error_);
  }

 private:
  std::string error_;
};

std::optional<Summary> SummaryFrom(Fields& f, const json& j, const char* key,
                                   const std::string& where) {
  const json* o = f.Object(j, key, where);
  if (o == nullptr) return std::nullopt;
  const std::string w = where + key + ".";
  Summary s;
  s.mean = f.Num(*o, "mean", w);
  s.stddev = f.OptNum(*o, "sd", w);
  s.n = static_cast<std::size_t>(f.OptInt(*o, "n", w, 0, 1 << 20).value_or(1));
  s.median = f.OptNum(*o, "median", w).value_or(s.mean);
  s.min = s.max = s.best = s.mean;
  return s;
}

std::optional<Estimate> EstimateFrom(Fields& f, const json& j, const char* key,
                                     const std::string& where) {
  const json* o = f.Object(j, key, where);
  if (o == nullptr) return std::nullopt;
  const std::string w = where + key + ".";
  Estimate e;
  e.mean = f.Num(*o, "mean", w);
  e.sd = f.OptNum(*o, "sd", w);
  e.n = static_cast<int>(f.OptInt(*o, "n", w, 0, 1 << 20).value_or(1));
  return e;
}

Cliff CliffFrom(Fields& f, const json& c, const std::string& where) {
  return {f.Int(c, "n_cpu_moe_safe", where), f.Int(c, "n_cpu_moe_collapsed", where),
          f.Num(c, "prefill_ratio", where)};
}

std::vector<Cliff> CliffsFrom(Fields& f, const json& j, const std::string& where) {
  std::vector<Cliff> out;
  for (const json& c : f.Array(j, "cliffs", where))
    out.push_back(CliffFrom(f, c, where + "cliffs[]."));
  return out;
}

// An enum from its stable name (tune's own names, never prose); a field error
// naming the accepted names when it is none of them.
template <typename E>
std::optional<E> NameFrom(Fields& f, const json& j, const char* key, const std::string& where,
                          std::optional<E> (*from_name)(std::string_view), const char* accepted) {
  if (f.Get(j, key) == nullptr) return std::nullopt;
  const std::string name = f.Str(j, key, where);
  auto e = from_name(name);
  if (!e) f.Fail(where, key, accepted);
  return e;
}

// A rejection by its kind and figures; a file written before kinds were
// recorded gives its reason, kept as it is (kRecorded).
Rejection RejectionFrom(Fields& f, const json& j, const std::string& w) {
  Rejection r;
  r.n_cpu_moe = f.Int(j, "n_cpu_moe", w);
  const auto kind = NameFrom(f, j, "kind", w, RejectionKindFromName,
                             "failed, beyond_cliff, fails_at_depth, collapses, inferred_at_depth "
                             "or recorded");
  r.kind = kind.value_or(RejectionKind::kRecorded);
  if (r.kind == RejectionKind::kRecorded) {
    r.recorded = f.Str(j, "reason", w);
    return r;
  }
  r.failure = f.Str(j, "failure", w);
  if (const json* c = f.Object(j, "cliff", w)) r.cliff = CliffFrom(f, *c, w + "cliff.");
  r.depth = f.Int(j, "depth", w);
  r.ratio = f.Num(j, "prefill_ratio", w);
  r.reference_n = f.Int(j, "reference_n_cpu_moe", w);
  r.reference_ratio = f.Num(j, "reference_ratio", w);
  r.trouble = NameFrom(f, j, "trouble", w, DepthTroubleFromName, "fails or collapses")
                  .value_or(DepthTrouble::kFails);
  return r;
}

CurveShape ShapeFrom(Fields& f, const json& j, const std::string& where) {
  const std::string name = f.Str(j, "shape", where);
  for (CurveShape s :
       {CurveShape::kFlat, CurveShape::kMonotonic, CurveShape::kPeak, CurveShape::kCliff}) {
    if (name == CurveShapeName(s)) return s;
  }
  if (!name.empty()) f.Fail(where, "shape", "flat, monotonic, peak or cliff");
  return CurveShape::kFlat;
}

CurveAtDepth CurveFrom(Fields& f, const json& j, const std::string& where) {
  CurveAtDepth c;
  c.depth = f.Int(j, "depth", where);
  c.shape = ShapeFrom(f, j, where);
  c.cliffs = CliffsFrom(f, j, where);
  const std::string w = where + "points[].";
  for (const json& p : f.Array(j, "points", where)) {
    CurvePoint pt;
    pt.n_cpu_moe = f.Int(p, "n_cpu_moe", w);
    pt.prefill = SummaryFrom(f, p, "prefill_tps", w);
    pt.decode = SummaryFrom(f, p, "decode_tps", w);
    pt.objective = EstimateFrom(f, p, "objective", w);
    pt.failure = f.Str(p, "failure", w);
    c.points.push_back(std::move(pt));
  }
  return c;
}

// The figures of a step back at depth (stepped_from) and past a proven edge
// (proven_edge); files written before them have neither.
void ReadStepBack(Fields& f, const json& j, const std::string& where, Recommendation* r) {
  if (const json* s = f.Object(j, "stepped_from", where)) {
    const std::string w = where + "stepped_from.";
    SteppedFrom from;
    from.n_cpu_moe = f.Int(*s, "n_cpu_moe", w, 0);
    from.depth = f.Int(*s, "depth", w, 0);
    from.trouble = NameFrom(f, *s, "trouble", w, DepthTroubleFromName, "fails or collapses")
                       .value_or(DepthTrouble::kCollapses);
    r->stepped_from = from;
  }
  if (const json* e = f.Object(j, "proven_edge", where)) {
    const std::string w = where + "proven_edge.";
    ProvenEdge edge;
    edge.n_cpu_moe = f.Int(*e, "n_cpu_moe", w, 0);
    edge.gain = f.OptNum(*e, "gain", w);
    r->proven_edge = edge;
  }
  if (const json* u = f.Object(j, "unproven_pick", where)) {
    const std::string w = where + "unproven_pick.";
    r->unproven_pick = f.Int(*u, "n_cpu_moe", w, -1);
    r->unproven_headroom = f.Bytes(*u, "headroom_bytes", w);
  }
}

Recommendation RecommendationFrom(Fields& f, const json& j, const std::string& where) {
  Recommendation r;
  if (auto n = f.OptInt(j, "n_cpu_moe", where)) r.n_cpu_moe = static_cast<int>(*n);
  r.measured = f.Get(j, "measured") == nullptr || f.Bool(j, "measured", where);
  r.edge = f.Int(j, "edge", where, -1);
  r.rule = NameFrom(f, j, "rule", where, RecommendationRuleFromName,
                    "nothing usable, no placement effect, every split overflows, edge proven "
                    "safe, safety rule, safe neighbour or proven at the target context")
               .value_or(RecommendationRule::kNothingUsable);
  if (f.Get(j, "read_on") == nullptr) {
    // Written before the figures were recorded: the reason as it was written.
    r.recorded_reason = f.Str(j, "reason", where);
  } else {
    r.read_on =
        NameFrom(f, j, "read_on", where, ReadOnFromName, "time_to_answer, prefill or decode")
            .value_or(ReadOn::kTimeToAnswer);
    r.best_n = f.Int(j, "best_n_cpu_moe", where, -1);
    r.safest_tie = f.Int(j, "safest_tie", where, -1);
    r.workload = f.Str(j, "workload", where);
    r.unproven = NameFrom(f, j, "unproven", where, UnprovenFromName,
                          "no_headroom, no_target_context_run or no_target_context")
                     .value_or(Unproven::kNotApplicable);
    if (auto c = f.OptInt(j, "target_ctx", where, 0, int64_t{1} << 40)) r.target_ctx = *c;
    ReadStepBack(f, j, where, &r);
  }
  if (auto t = f.OptInt(j, "threads", where)) r.threads = static_cast<int>(*t);
  if (auto u = f.OptInt(j, "n_ubatch", where)) r.n_ubatch = static_cast<int>(*u);
  return r;
}

DimensionComparison ComparisonFrom(Fields& f, const json& j, const std::string& where) {
  DimensionComparison c;
  c.dimension = NameFrom(f, j, "dimension", where, DimensionFromName, "threads or n_ubatch")
                    .value_or(Dimension::kThreads);
  c.n_cpu_moe = f.Int(j, "n_cpu_moe", where);
  c.chosen = f.Int(j, "chosen", where);
  const std::string w = where + "entries[].";
  for (const json& e : f.Array(j, "entries", where)) {
    DimensionComparison::Entry x;
    x.value = f.Int(e, "value", w);
    x.prefill = SummaryFrom(f, e, "prefill_tps", w);
    x.decode = SummaryFrom(f, e, "decode_tps", w);
    x.objective = EstimateFrom(f, e, "objective", w);
    x.versus_best = NameFrom(f, e, "versus_best", w, StandingFromName,
                             "best, tie, worse, undecided or not measured")
                        .value_or(Standing::kUnmeasured);
    c.entries.push_back(std::move(x));
  }
  return c;
}

Analysis AnalysisFrom(Fields& f, const json& j, const std::string& where) {
  Analysis a;
  a.model = f.Str(j, "model", where);
  a.settings = f.Str(j, "settings", where);
  for (const json& c : f.Array(j, "curves", where))
    a.curves.push_back(CurveFrom(f, c, where + "curves[]."));
  if (!a.curves.empty()) {
    a.shape = a.curves.front().shape;
    a.cliffs = a.curves.front().cliffs;
  }
  for (const auto& c : a.curves) {
    for (const auto& p : c.points) {
      a.has_prefill = a.has_prefill || p.prefill.has_value();
      a.has_decode = a.has_decode || p.decode.has_value();
    }
  }
  for (const json& r : f.Array(j, "rejected", where))
    a.rejected.push_back(RejectionFrom(f, r, where + "rejected[]."));
  const std::string dw = where + "depth_checks[].";
  for (const json& d : f.Array(j, "depth_checks", where)) {
    a.depth_checks.push_back({f.Int(d, "n_cpu_moe", dw), f.Int(d, "depth", dw),
                              f.Int(d, "context", dw), f.Num(d, "prefill_ratio", dw),
                              f.Num(d, "reference_ratio", dw), f.Bool(d, "collapsed", dw)});
  }
  for (const json& c : f.Array(j, "comparisons", where))
    a.comparisons.push_back(ComparisonFrom(f, c, where + "comparisons[]."));
  if (const json* r = f.Object(j, "recommendation", where))
    a.recommendation = RecommendationFrom(f, *r, where + "recommendation.");
  a.notes = f.Strings(j, "notes", where);
  return a;
}

// The keys of the settings tunes before the pick and the defaults carried
// every ServerConfig field were written with.
constexpr const char* kSettingKeys[] = {"model",   "n_cpu_moe", "n_gpu_layers", "override_tensor",
                                        "threads", "n_ubatch",  "n_batch",      "flash_attn",
                                        "type_k",  "type_v",    "load_mode"};

// A configuration as TuneJson writes it (pick, versus_defaults): the fields
// present over `base`. Tunes written before the pick and the defaults carried
// every setting: the settings `j` lacks come from the latest measurement that
// agrees with it on the ones it has.
ServerConfig ConfigFrom(Fields& f, const json& j, const std::string& where,
                        const std::vector<RunResult>& measurements, ServerConfig base) {
  std::vector<const char*> missing;
  for (const char* k : kSettingKeys) {
    if (!j.contains(k)) missing.push_back(k);
  }
  if (!missing.empty()) {
    for (auto it = measurements.rbegin(); it != measurements.rend(); ++it) {
      const json m = ServerConfigJson(it->config.server());
      const bool agrees =
          std::all_of(std::begin(kSettingKeys), std::end(kSettingKeys),
                      [&](const char* k) { return !j.contains(k) || j[k] == m[k]; });
      if (!agrees) continue;
      json patch = json::object();
      for (const char* k : missing) patch[k] = m[k];
      auto completed = ServerConfigFromJson(patch, where, base);
      if (completed.ok()) base = std::move(completed).value();
      break;
    }
  }
  auto c = ServerConfigFromJson(j, where.substr(0, where.size() - 1), base);
  if (!c.ok()) {
    f.FailWith(c.error().message());
    return base;
  }
  return std::move(c).value();
}

DeviceBreakdown DeviceFrom(Fields& f, const json& j, const std::string& where) {
  DeviceBreakdown d;
  if (const json* w = f.Object(j, "weights", where)) {
    for (const auto& [name, bytes] : w->items()) {
      bool known = false;
      for (int r = 0; r < kTensorRoleCount; ++r) {
        if (name != TensorRoleName(static_cast<TensorRole>(r))) continue;
        d.weights[static_cast<size_t>(r)] = f.Bytes(*w, name.c_str(), where + "weights.");
        known = true;
      }
      if (!known) f.Fail(where + "weights.", name, "a known tensor role");
    }
  }
  d.kv = f.Bytes(j, "kv_bytes", where);
  d.state = f.Bytes(j, "state_bytes", where);
  d.compute = f.Bytes(j, "compute_bytes", where);
  return d;
}

std::optional<double> Seconds(Fields& f, const json& v, const std::string& where, const char* key,
                              const char* which) {
  const json* o = f.Object(v, key, where);
  return o ? f.OptNum(*o, which, fmt::format("{}{}.", where, key)) : std::nullopt;
}

// A comparison with a baseline ("versus_defaults", "versus_ollama"), when the file has it.
std::optional<DefaultsComparison> VersusFrom(Fields& f, const json& j, const char* key,
                                             const std::vector<RunResult>& measurements) {
  const json* v = f.Object(j, key, "");
  if (v == nullptr) return std::nullopt;
  const std::string where = std::string(key) + ".";
  DefaultsComparison d;
  d.defaults = ConfigFrom(f, *v, where, measurements, ServerConfig{});
  d.how = f.Str(*v, "how", where);
  d.note = f.Str(*v, "note", where);
  d.tuned_seconds_depth0 = Seconds(f, *v, where, "seconds_per_request_depth0", "tuned");
  d.default_seconds_depth0 = Seconds(f, *v, where, "seconds_per_request_depth0", "defaults");
  d.tuned_seconds_ctx = Seconds(f, *v, where, "seconds_per_request_at_ctx", "tuned");
  d.default_seconds_ctx = Seconds(f, *v, where, "seconds_per_request_at_ctx", "defaults");
  // Files written before the typed comparison have none: not measured.
  d.pick =
      NameFrom(f, *v, "pick_versus", where, VersusFromName, "faster, tie, slower or not measured")
          .value_or(Versus::kUnmeasured);
  d.compared_depth =
      static_cast<int>(f.OptInt(*v, "compared_depth", where, 0, 1 << 30).value_or(0));
  if (const json* rps = f.Object(*v, "requests_per_second", where)) {
    const std::string w = where + "requests_per_second.";
    d.tuned_objective = EstimateFrom(f, *rps, "tuned", w);
    d.default_objective = EstimateFrom(f, *rps, "defaults", w);
  }
  return d;
}

// The pick's safety verdict ("pick_safety"); files written before it have none.
PickSafety PickSafetyFrom(Fields& f, const json& j) {
  PickSafety s;
  const json* o = f.Object(j, "pick_safety", "");
  if (o == nullptr) return s;
  const std::string w = "pick_safety.";
  s.headroom = NameFrom(f, *o, "headroom", w, HeadroomStandingFromName,
                        "unknown, clear, inside_margin or over_budget")
                   .value_or(HeadroomStanding::kUnknown);
  s.headroom_bytes = f.Bytes(*o, "headroom_bytes", w);
  s.margin_bytes = f.Bytes(*o, "margin_bytes", w);
  if (auto d = f.OptInt(*o, "proven_depth", w, 0, 1 << 30)) s.proven_depth = static_cast<int>(*d);
  s.prefill_kept = f.OptNum(*o, "prefill_kept", w);
  return s;
}

}  // namespace

Result<Analysis> AnalysisFromJson(const json& j) {
  if (!j.is_object()) return Error(ErrorKind::kFormat, "analysis JSON: not an object");
  Fields f;
  Analysis a = AnalysisFrom(f, j, "analysis.");
  MOETUNE_TRY(f.status());
  return a;
}

namespace {

// What the tune ran on: model, context, workload, engine, machine, checks.
void ReadTuneHeader(Fields& f, const json& j, TuneReport* t) {
  if (const json* m = f.Object(j, "model", "")) {
    t->model_path = f.Str(*m, "path", "model.");
    t->model_name = f.Str(*m, "name", "model.");
  }
  t->ctx = f.OptInt(j, "ctx", "", 0, int64_t{1} << 40).value_or(0);
  if (const json* w = f.Object(j, "workload", "")) {
    t->workload.name = f.Str(*w, "name", "workload.");
    t->workload.prompt_tokens = f.Int(*w, "prompt_tokens", "workload.");
    t->workload.answer_tokens = f.Int(*w, "answer_tokens", "workload.");
  }
  t->engine = f.Str(j, "engine", "");
  t->simulated = f.Bool(j, "simulated", "");
  t->machine = f.Str(j, "machine", "");
  t->checks = f.Strings(j, "checks", "");
}

Status ReadMeasurements(Fields& f, const json& j, std::vector<RunResult>* out) {
  size_t i = 0;
  for (const json& m : f.Array(j, "measurements", "")) {
    auto x = RunResultFromJson(m);
    if (!x.ok()) {
      return Error(ErrorKind::kFormat,
                   fmt::format("tune JSON: measurements[{}]: {}", i, x.error().message()));
    }
    out->push_back(std::move(x).value());
    ++i;
  }
  return OkStatus();
}

// The pick: the printed command read back, with the pick's fields over it
// (files before the pick carried every field hold only the command's), and
// its memory map.
void ReadPick(Fields& f, const json& j, const std::vector<std::string>& command, TuneReport* t) {
  TuneResult& r = t->result;
  ServerConfig from_command = ParseServerArgv(command).config;
  if (from_command.placement.n_cpu_moe < 0 && !from_command.placement.all_cpu_moe)
    from_command.placement.n_cpu_moe = 0;  // older tunes left out --n-cpu-moe 0
  r.best = from_command;
  if (const json* p = f.Object(j, "pick", ""))
    r.best = ConfigFrom(f, *p, "pick.", r.measurements, from_command);
  r.placement_tuned = f.Get(j, "placement_tuned") == nullptr || f.Bool(j, "placement_tuned", "");
  if (const json* m = f.Object(j, "memory", "")) {
    PlacementOption o;
    o.n_cpu_moe = std::max(0, r.best.placement.n_cpu_moe);
    o.ngl = r.best.placement.n_gpu_layers;
    if (const json* g = f.Object(*m, "gpu", "memory.")) o.gpu = DeviceFrom(f, *g, "memory.gpu.");
    if (const json* h = f.Object(*m, "host", "memory.")) o.host = DeviceFrom(f, *h, "memory.host.");
    o.headroom = f.Bytes(*m, "headroom_bytes", "memory.");
    o.fits = o.headroom >= 0;
    r.memory = o;
    t->vram_budget = f.Bytes(*m, "vram_budget_bytes", "memory.");
    t->reserve = f.Bytes(*m, "reserve_bytes", "memory.");
  }
}

std::vector<Decision> ReadDecisions(Fields& f, const json& j) {
  std::vector<Decision> out;
  for (const json& d : f.Array(j, "decisions", "")) {
    Decision x;
    x.phase = NameFrom(f, d, "phase", "decisions[].", TunePhaseFromName,
                       "placement, long context, threads, micro-batch, flash attention, load "
                       "mode, KV cache type, final check or defaults")
                  .value_or(TunePhase::kPlacement);
    x.choice = f.Str(d, "choice", "decisions[].");
    x.rule = f.Str(d, "rule", "decisions[].");
    // The evidence as rendered (report/verdict_text.h); its typed parts are not re-read.
    x.evidence = f.Str(d, "evidence", "decisions[].");
    // A phase that could not decide (absent in older files).
    if (const json* u = f.Object(d, "undecided", "decisions[].")) {
      const std::string w = "decisions[].undecided.";
      x.undecided =
          Undecided{f.Str(*u, "candidate", w),
                    f.Str(*u, "measure", w),
                    f.Num(*u, "low_tps", w),
                    f.Num(*u, "high_tps", w),
                    static_cast<int>(f.OptInt(*u, "repetitions", w, 0, 1000000).value_or(0)),
                    f.Str(*u, "kept", w)};
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

Result<TuneReport> TuneReportFromJson(const json& j) {
  if (!j.is_object()) return Error(ErrorKind::kFormat, "tune JSON: not an object");
  Fields f;
  TuneReport t;
  ReadTuneHeader(f, j, &t);
  const std::vector<std::string> command = f.Strings(j, "command", "");
  TuneResult& r = t.result;
  // The measurements first: older files complete the pick's settings from them.
  MOETUNE_TRY(ReadMeasurements(f, j, &r.measurements));
  ReadPick(f, j, command, &t);
  r.decisions = ReadDecisions(f, j);
  for (const json& c : f.Array(j, "comparisons", ""))
    r.comparisons.push_back(ComparisonFrom(f, c, "comparisons[]."));
  r.versus_defaults = VersusFrom(f, j, "versus_defaults", r.measurements);
  r.versus_ollama = VersusFrom(f, j, "versus_ollama", r.measurements);
  if (const json* a = f.Object(j, "analysis", "")) r.analysis = AnalysisFrom(f, *a, "analysis.");
  r.measured = static_cast<std::size_t>(f.OptInt(j, "measured", "", 0, INT32_MAX).value_or(0));
  r.resumed = static_cast<std::size_t>(f.OptInt(j, "resumed", "", 0, INT32_MAX).value_or(0));
  r.seconds = f.Num(j, "seconds", "");
  r.budget_exhausted = f.Bool(j, "budget_exhausted", "");
  r.defaults_chosen = f.Bool(j, "defaults_chosen", "");
  r.safety = PickSafetyFrom(f, j);
  t.journal = f.Str(j, "journal", "");
  t.reproduce = f.Strings(j, "reproduce", "");
  r.notes = f.Strings(j, "notes", "");
  MOETUNE_TRY(f.status());
  if (command.empty()) {
    return Error(ErrorKind::kFormat,
                 "tune JSON: no \"command\": this is not the output of moetune tune --json");
  }
  if (r.best.model.empty()) {
    return Error(ErrorKind::kFormat,
                 "tune JSON: the pick names no model (no -m in \"command\", no pick.model)");
  }
  // Tunes written before the result carried its comparisons of threads and
  // micro-batch: the tuner's own reading of them, from the measurements.
  if (!j.contains("comparisons")) {
    r.comparisons =
        CompareTuneDimensions(r.measurements, t.workload, r.best.placement.n_cpu_moe, CurveRules{});
  }
  return t;
}

Result<TuneReport> ReadTuneReport(const std::string& path) {
  MOETUNE_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, kMaxTuneFileBytes));
  MOETUNE_TRY(NoteInputFile(path, "the tune file"));
  auto parsed = ParseJson(text, fmt::format("'{}'", path));
  if (!parsed.ok()) {
    return Error(ErrorKind::kFormat, fmt::format("{}; give the output of moetune tune --json",
                                                 parsed.error().message()));
  }
  const json& j = *parsed;
  auto t = TuneReportFromJson(j);
  if (!t.ok()) return Error(t.error().kind(), fmt::format("'{}': {}", path, t.error().message()));
  return t;
}

}  // namespace moetune
