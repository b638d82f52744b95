#include "report/tune_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/result_json.h"
#include "model/arch.h"
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
  s.min = s.max = s.mean;
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

std::vector<Cliff> CliffsFrom(Fields& f, const json& j, const std::string& where) {
  std::vector<Cliff> out;
  for (const json& c : f.Array(j, "cliffs", where)) {
    out.push_back({f.Int(c, "n_cpu_moe_safe", where + "cliffs[]."),
                   f.Int(c, "n_cpu_moe_collapsed", where + "cliffs[]."),
                   f.Num(c, "prefill_ratio", where + "cliffs[].")});
  }
  return out;
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

Recommendation RecommendationFrom(Fields& f, const json& j, const std::string& where) {
  Recommendation r;
  if (auto n = f.OptInt(j, "n_cpu_moe", where)) r.n_cpu_moe = static_cast<int>(*n);
  r.measured = f.Get(j, "measured") == nullptr || f.Bool(j, "measured", where);
  r.edge = f.Int(j, "edge", where, -1);
  r.rule = f.Str(j, "rule", where);
  r.reason = f.Str(j, "reason", where);
  if (auto t = f.OptInt(j, "threads", where)) r.threads = static_cast<int>(*t);
  if (auto u = f.OptInt(j, "n_ubatch", where)) r.n_ubatch = static_cast<int>(*u);
  return r;
}

DimensionComparison ComparisonFrom(Fields& f, const json& j, const std::string& where) {
  DimensionComparison c;
  c.dimension = f.Str(j, "dimension", where);
  c.n_cpu_moe = f.Int(j, "n_cpu_moe", where);
  c.chosen = f.Int(j, "chosen", where);
  c.reason = f.Str(j, "reason", where);
  const std::string w = where + "entries[].";
  for (const json& e : f.Array(j, "entries", where)) {
    DimensionComparison::Entry x;
    x.value = f.Int(e, "value", w);
    x.prefill = SummaryFrom(f, e, "prefill_tps", w);
    x.decode = SummaryFrom(f, e, "decode_tps", w);
    x.objective = EstimateFrom(f, e, "objective", w);
    const std::string v = f.Str(e, "versus_best", w);
    x.versus_best = v == "best" ? 1 : (v == "tie" ? 0 : -1);
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
  for (const json& r : f.Array(j, "rejected", where)) {
    a.rejected.push_back(
        {f.Int(r, "n_cpu_moe", where + "rejected[]."), f.Str(r, "reason", where + "rejected[].")});
  }
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

// The settings of a configuration as TuneJson writes them (pick, versus_defaults).
RunConfig ConfigFrom(Fields& f, const json& j, const std::string& where) {
  RunConfig c;
  c.model = f.Str(j, "model", where);
  c.placement.n_cpu_moe = f.Int(j, "n_cpu_moe", where);
  c.placement.n_gpu_layers = f.Int(j, "n_gpu_layers", where, c.placement.n_gpu_layers);
  c.placement.override_tensor = f.Str(j, "override_tensor", where);
  c.placement.n_ubatch = f.Int(j, "n_ubatch", where, c.placement.n_ubatch);
  c.placement.n_batch = f.Int(j, "n_batch", where, c.placement.n_batch);
  c.placement.flash_attn = f.Str(j, "flash_attn", where);
  if (f.Get(j, "type_k")) c.placement.type_k = f.Str(j, "type_k", where);
  if (f.Get(j, "type_v")) c.placement.type_v = f.Str(j, "type_v", where);
  c.load_mode = f.Str(j, "load_mode", where);
  c.threads = f.Int(j, "threads", where, c.threads);
  c.n_prompt = f.Int(j, "n_prompt", where);
  c.n_gen = f.Int(j, "n_gen", where);
  return c;
}

// One setting of a configuration, named as in TuneJson's pick.
struct SettingField {
  const char* key;
  std::string (*get)(const RunConfig&);
  void (*copy)(const RunConfig& from, RunConfig* to);
};

const SettingField kSettingFields[] = {
    {"model", [](const RunConfig& c) { return c.model; },
     [](const RunConfig& f, RunConfig* t) { t->model = f.model; }},
    {"n_cpu_moe", [](const RunConfig& c) { return std::to_string(c.placement.n_cpu_moe); },
     [](const RunConfig& f, RunConfig* t) { t->placement.n_cpu_moe = f.placement.n_cpu_moe; }},
    {"n_gpu_layers", [](const RunConfig& c) { return std::to_string(c.placement.n_gpu_layers); },
     [](const RunConfig& f, RunConfig* t) {
       t->placement.n_gpu_layers = f.placement.n_gpu_layers;
     }},
    {"override_tensor", [](const RunConfig& c) { return c.placement.override_tensor; },
     [](const RunConfig& f, RunConfig* t) {
       t->placement.override_tensor = f.placement.override_tensor;
     }},
    {"threads", [](const RunConfig& c) { return std::to_string(c.threads); },
     [](const RunConfig& f, RunConfig* t) { t->threads = f.threads; }},
    {"n_ubatch", [](const RunConfig& c) { return std::to_string(c.placement.n_ubatch); },
     [](const RunConfig& f, RunConfig* t) { t->placement.n_ubatch = f.placement.n_ubatch; }},
    {"n_batch", [](const RunConfig& c) { return std::to_string(c.placement.n_batch); },
     [](const RunConfig& f, RunConfig* t) { t->placement.n_batch = f.placement.n_batch; }},
    {"flash_attn", [](const RunConfig& c) { return c.placement.flash_attn; },
     [](const RunConfig& f, RunConfig* t) { t->placement.flash_attn = f.placement.flash_attn; }},
    {"type_k", [](const RunConfig& c) { return c.placement.type_k; },
     [](const RunConfig& f, RunConfig* t) { t->placement.type_k = f.placement.type_k; }},
    {"type_v", [](const RunConfig& c) { return c.placement.type_v; },
     [](const RunConfig& f, RunConfig* t) { t->placement.type_v = f.placement.type_v; }},
    {"load_mode", [](const RunConfig& c) { return c.load_mode; },
     [](const RunConfig& f, RunConfig* t) { t->load_mode = f.load_mode; }},
};

// Tunes written before the pick and the defaults carried every setting: the
// settings `j` lacks come from the latest measurement that agrees with it on
// the ones it has.
void CompleteSettings(const json& j, const std::vector<RunResult>& measurements, RunConfig* c) {
  std::vector<const SettingField*> given, missing;
  for (const auto& f : kSettingFields) (j.contains(f.key) ? given : missing).push_back(&f);
  if (missing.empty()) return;
  for (auto it = measurements.rbegin(); it != measurements.rend(); ++it) {
    const bool agrees = std::all_of(given.begin(), given.end(), [&](const SettingField* f) {
      return f->get(it->config) == f->get(*c);
    });
    if (!agrees) continue;
    for (const SettingField* f : missing) f->copy(it->config, c);
    return;
  }
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

std::optional<double> Seconds(Fields& f, const json& v, const char* key, const char* which) {
  const json* o = f.Object(v, key, "versus_defaults.");
  return o ? f.OptNum(*o, which, fmt::format("versus_defaults.{}.", key)) : std::nullopt;
}

}  // namespace

Result<Analysis> AnalysisFromJson(const json& j) {
  if (!j.is_object()) return Error(ErrorKind::kFormat, "analysis JSON: not an object");
  Fields f;
  Analysis a = AnalysisFrom(f, j, "analysis.");
  MOETUNE_TRY(f.status());
  return a;
}

Result<TuneReport> TuneReportFromJson(const json& j) {
  if (!j.is_object()) return Error(ErrorKind::kFormat, "tune JSON: not an object");
  Fields f;
  TuneReport t;
  if (const json* m = f.Object(j, "model", "")) {
    t.model_path = f.Str(*m, "path", "model.");
    t.model_name = f.Str(*m, "name", "model.");
  }
  t.ctx = f.OptInt(j, "ctx", "", 0, int64_t{1} << 40).value_or(0);
  if (const json* w = f.Object(j, "workload", "")) {
    t.workload.name = f.Str(*w, "name", "workload.");
    t.workload.prompt_tokens = f.Int(*w, "prompt_tokens", "workload.");
    t.workload.answer_tokens = f.Int(*w, "answer_tokens", "workload.");
  }
  t.engine = f.Str(j, "engine", "");
  t.simulated = f.Bool(j, "simulated", "");
  t.machine = f.Str(j, "machine", "");
  t.checks = f.Strings(j, "checks", "");
  t.server_argv = f.Strings(j, "command", "");
  TuneResult& r = t.result;
  if (const json* p = f.Object(j, "pick", "")) r.best = ConfigFrom(f, *p, "pick.");
  r.placement_tuned = f.Get(j, "placement_tuned") == nullptr || f.Bool(j, "placement_tuned", "");
  if (const json* m = f.Object(j, "memory", "")) {
    PlacementOption o;
    o.n_cpu_moe = r.best.placement.n_cpu_moe;
    o.ngl = r.best.placement.n_gpu_layers;
    if (const json* g = f.Object(*m, "gpu", "memory.")) o.gpu = DeviceFrom(f, *g, "memory.gpu.");
    if (const json* h = f.Object(*m, "host", "memory.")) o.host = DeviceFrom(f, *h, "memory.host.");
    o.headroom = f.Bytes(*m, "headroom_bytes", "memory.");
    o.fits = o.headroom >= 0;
    t.memory = o;
    t.vram_budget = f.Bytes(*m, "vram_budget_bytes", "memory.");
    t.reserve = f.Bytes(*m, "reserve_bytes", "memory.");
  }
  for (const json& d : f.Array(j, "decisions", "")) {
    r.decisions.push_back({f.Str(d, "phase", "decisions[]."), f.Str(d, "choice", "decisions[]."),
                           f.Str(d, "rule", "decisions[]."), f.Str(d, "evidence", "decisions[].")});
  }
  if (const json* v = f.Object(j, "versus_defaults", "")) {
    DefaultsComparison d;
    d.defaults = ConfigFrom(f, *v, "versus_defaults.");
    d.how = f.Str(*v, "how", "versus_defaults.");
    d.note = f.Str(*v, "note", "versus_defaults.");
    d.tuned_seconds_depth0 = Seconds(f, *v, "seconds_per_request_depth0", "tuned");
    d.default_seconds_depth0 = Seconds(f, *v, "seconds_per_request_depth0", "defaults");
    d.tuned_seconds_ctx = Seconds(f, *v, "seconds_per_request_at_ctx", "tuned");
    d.default_seconds_ctx = Seconds(f, *v, "seconds_per_request_at_ctx", "defaults");
    r.versus_defaults = d;
  }
  if (const json* a = f.Object(j, "analysis", "")) r.analysis = AnalysisFrom(f, *a, "analysis.");
  size_t i = 0;
  for (const json& m : f.Array(j, "measurements", "")) {
    auto x = RunResultFromJson(m);
    if (!x.ok()) {
      return Error(ErrorKind::kFormat,
                   fmt::format("tune JSON: measurements[{}]: {}", i, x.error().message()));
    }
    r.measurements.push_back(std::move(x).value());
    ++i;
  }
  r.measured = static_cast<std::size_t>(f.OptInt(j, "measured", "", 0, INT32_MAX).value_or(0));
  r.resumed = static_cast<std::size_t>(f.OptInt(j, "resumed", "", 0, INT32_MAX).value_or(0));
  r.seconds = f.Num(j, "seconds", "");
  r.budget_exhausted = f.Bool(j, "budget_exhausted", "");
  t.journal = f.Str(j, "journal", "");
  t.reproduce = f.Strings(j, "reproduce", "");
  r.notes = f.Strings(j, "notes", "");
  MOETUNE_TRY(f.status());
  if (t.server_argv.empty()) {
    return Error(ErrorKind::kFormat,
                 "tune JSON: no \"command\": this is not the output of moetune tune --json");
  }
  if (const json* p = f.Get(j, "pick")) CompleteSettings(*p, r.measurements, &r.best);
  if (const json* v = f.Get(j, "versus_defaults"); v && r.versus_defaults)
    CompleteSettings(*v, r.measurements, &r.versus_defaults->defaults);
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
