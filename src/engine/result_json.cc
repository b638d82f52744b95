#include "engine/result_json.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>

#include "config/server_config_json.h"
#include "engine/bench_jsonl.h"
#include "stats/summary.h"
#include "util/json_fields.h"

namespace moetune {
namespace {

using nlohmann::json;

int IntOr(const json& j, const char* key, int fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < -2e9 || v > 2e9) return fallback;
  return static_cast<int>(std::llround(v));
}

std::string StrOr(const json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::optional<FailureKind> FailureKindFromName(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(FailureKind::kEngineError); ++k) {
    const auto kind = static_cast<FailureKind>(k);
    if (name == FailureKindName(kind)) return kind;
  }
  return std::nullopt;
}

template <typename T>
std::vector<T> Numbers(const json& j, const char* key) {
  std::vector<T> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (!v.is_number()) continue;
    const double d = v.get<double>();
    if (!std::isfinite(d)) continue;
    // A double outside an integer's range is undefined behaviour to convert.
    if constexpr (std::is_integral_v<T>) {
      if (d < -9.2e18 || d > 9.2e18) continue;
    }
    out.push_back(static_cast<T>(d));
  }
  return out;
}

}  // namespace

json FailureToJson(const EngineFailure& failure) {
  json j = {{"kind", FailureKindName(failure.kind)},
            {"message", failure.message},
            {"exit", failure.exit},
            {"stderr_tail", failure.stderr_tail}};
  if (failure.signal != 0) j["signal"] = failure.signal;
  if (!failure.rpc_host.empty()) j["rpc_host"] = failure.rpc_host;
  return j;
}

json RunResultToJson(const RunResult& r) {
  const auto& c = r.config;
  json j = {{"test", c.test_name()},
            {"n_prompt", c.n_prompt},
            {"n_gen", c.n_gen},
            {"n_depth", c.n_depth}};
  AddServerConfigJson(c.server(), &j);
  j["repetitions"] = c.repetitions;
  j["ok"] = r.ok();
  j["invocation"] = r.invocation;
  if (r.other_cpu_cores) j["other_cpu_cores"] = *r.other_cpu_cores;
  if (r.ok()) {
    const Summary s = Summarize(r.samples_ts);
    j["tokens_per_second"] = {{"mean", r.samples_ts.empty() ? r.avg_ts : s.mean},
                              {"sd", s.stddev ? json(*s.stddev) : json(nullptr)},
                              {"median", s.median},
                              {"min", s.min},
                              {"max", s.max},
                              {"n", s.n},
                              {"outliers", s.outliers}};
    j["samples_ts"] = r.samples_ts;
    j["samples_ns"] = r.samples_ns;
    j["engine_record"] = r.record;
  } else {
    j["failure"] = FailureToJson(*r.failure);
  }
  return j;
}

Result<RunResult> RunResultFromJson(const json& e) {
  if (!e.is_object() || !e.contains("test") || !e.contains("n_cpu_moe")) {
    return Error(ErrorKind::kFormat, "not a moetune result entry (no 'test' and 'n_cpu_moe')");
  }
  RunResult r;
  RunConfig& c = r.config;
  // The configuration's fields are checked (type and range); the defaults of
  // a missing one are those of every moetune measurement.
  ServerConfig base;
  base.threads = 0;
  JsonFields fields(e, "result");
  c.server() = ServerConfigFromJson(fields, base);
  if (!fields.ok()) return fields.error();
  c.n_depth = IntOr(e, "n_depth", 0);
  c.n_prompt = IntOr(e, "n_prompt", 0);
  c.n_gen = IntOr(e, "n_gen", 0);
  c.repetitions = IntOr(e, "repetitions", 0);
  r.invocation = IntOr(e, "invocation", -1);
  // Other processes' load while it ran (absent in older files); a negative
  // or absurd figure is a damaged entry and is dropped, not believed.
  if (auto l = e.find("other_cpu_cores"); l != e.end() && l->is_number()) {
    const double v = l->get<double>();
    if (v >= 0 && v <= 1e6) r.other_cpu_cores = v;
  }
  if (auto f = e.find("failure"); f != e.end() && f->is_object()) {
    EngineFailure fail;
    fail.kind = FailureKindFromName(StrOr(*f, "kind")).value_or(FailureKind::kEngineError);
    fail.message = StrOr(*f, "message");
    fail.exit = StrOr(*f, "exit");
    if (const int sig = IntOr(*f, "signal", 0); sig > 0 && sig < 65) fail.signal = sig;
    fail.rpc_host = StrOr(*f, "rpc_host");
    if (auto t = f->find("stderr_tail"); t != f->end() && t->is_array()) {
      for (const auto& line : *t) {
        if (line.is_string()) fail.stderr_tail.push_back(line.get<std::string>());
      }
    }
    r.failure = fail;
    return r;
  }
  r.samples_ts = Numbers<double>(e, "samples_ts");
  r.samples_ns = Numbers<int64_t>(e, "samples_ns");
  if (auto t = e.find("tokens_per_second"); t != e.end() && t->is_object()) {
    if (auto m = t->find("mean"); m != t->end() && m->is_number()) r.avg_ts = m->get<double>();
    if (auto s = t->find("sd"); s != t->end() && s->is_number()) r.stddev_ts = s->get<double>();
  }
  // A speed no machine reaches (or a negative one) is a damaged or forged
  // entry: refused with the field named (bench_jsonl.h kMaxTokensPerSecond).
  for (std::size_t i = 0; i < r.samples_ts.size(); ++i) {
    if (!IsPlausibleTokensPerSecond(r.samples_ts[i])) {
      return Error(ErrorKind::kFormat,
                   fmt::format("samples_ts[{}] is {}, outside the possible 0 to {:g} tokens per "
                               "second",
                               i, r.samples_ts[i], kMaxTokensPerSecond));
    }
  }
  if (!(r.avg_ts >= 0 && r.avg_ts <= kMaxTokensPerSecond) ||
      !(r.stddev_ts >= 0 && r.stddev_ts <= kMaxTokensPerSecond)) {
    return Error(ErrorKind::kFormat,
                 fmt::format("tokens_per_second ({} +- {}) is outside the possible 0 to {:g}",
                             r.avg_ts, r.stddev_ts, kMaxTokensPerSecond));
  }
  if (r.samples_ts.empty() && !(r.avg_ts > 0)) {
    return Error(ErrorKind::kFormat, "moetune result entry without tokens/s");
  }
  if (r.avg_ts <= 0 && !r.samples_ts.empty()) r.avg_ts = Summarize(r.samples_ts).mean;
  if (auto rec = e.find("engine_record"); rec != e.end()) r.record = *rec;
  return r;
}

}  // namespace moetune
