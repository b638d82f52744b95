#include "engine/bench_jsonl.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "util/json_parse.h"
#include "util/text.h"

namespace moetune {
namespace {

using nlohmann::json;

// An integer within [lo, hi] from a JSON number of any kind (llama-bench has
// printed counts as integers, floats and booleans); out-of-range values are
// errors, never wrapped or converted with undefined behaviour.
Result<int64_t> ToInt(const json& v, const char* name, int64_t lo, int64_t hi) {
  auto out_of_range = [&] {
    return Error(ErrorKind::kFormat,
                 fmt::format("llama-bench field '{}' is out of range: {}", name,
                             v.dump(-1, ' ', false, json::error_handler_t::replace)));
  };
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return out_of_range();
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<int64_t>();
    if (i < lo || i > hi) return out_of_range();
    return i;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      return out_of_range();
    }
    return static_cast<int64_t>(std::llround(d));
  }
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return Error(ErrorKind::kFormat,
               fmt::format("llama-bench field '{}' is not a number: {}", name,
                           Truncate(v.dump(-1, ' ', false, json::error_handler_t::replace), 200)));
}

constexpr int64_t kIntMin = std::numeric_limits<int>::min();
constexpr int64_t kIntMax = std::numeric_limits<int>::max();
// Large enough for every int64 whose double is still below 2^63.
constexpr int64_t kDoubleSafeMax = int64_t{1} << 62;

Result<int64_t> IntField(const json& j, const char* name, bool required, int64_t lo, int64_t hi) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (!required) return 0;
    return Error(ErrorKind::kFormat, fmt::format("llama-bench result has no '{}' field", name));
  }
  return ToInt(*it, name, lo, hi);
}

Result<double> DoubleField(const json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (!required) return 0.0;
    return Error(ErrorKind::kFormat, fmt::format("llama-bench result has no '{}' field", name));
  }
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    return Error(
        ErrorKind::kFormat,
        fmt::format("llama-bench field '{}' is not a finite number: {}", name,
                    Truncate(it->dump(-1, ' ', false, json::error_handler_t::replace), 200)));
  }
  const double v = it->get<double>();
  if (v < 0 || v > kMaxTokensPerSecond) {
    return Error(ErrorKind::kFormat,
                 fmt::format("llama-bench field '{}' is {}, outside 0 to {:g} tokens per second",
                             name, v, kMaxTokensPerSecond));
  }
  return v;
}

std::string StringField(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// flash_attn has been a bool, then -1/0/1 (auto/off/on), and may become a string.
std::string FlashAttn(const json& j) {
  auto it = j.find("flash_attn");
  if (it == j.end()) return "";
  if (it->is_boolean()) return it->get<bool>() ? "on" : "off";
  if (it->is_number_integer()) {
    const auto v = it->get<int64_t>();
    return v < 0 ? "auto" : (v == 0 ? "off" : "on");
  }
  if (it->is_string()) return it->get<std::string>();
  return "";
}

}  // namespace

Result<BenchRecord> ParseBenchRecord(std::string_view line) {
  json j = ParseJsonOrDiscarded(line);
  if (j.is_discarded() || !j.is_object()) {
    return Error(ErrorKind::kFormat, fmt::format("not a JSON object: '{}'", Truncate(line, 200)));
  }
  BenchRecord r;
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_prompt, IntField(j, "n_prompt", true, 0, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_gen, IntField(j, "n_gen", true, 0, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_depth, IntField(j, "n_depth", false, 0, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_threads, IntField(j, "n_threads", false, 0, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_batch, IntField(j, "n_batch", false, 0, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_ubatch, IntField(j, "n_ubatch", false, 0, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t ngl, IntField(j, "n_gpu_layers", false, kIntMin, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t ncmoe, IntField(j, "n_cpu_moe", false, 0, kIntMax));
  MOETUNE_ASSIGN_OR_RETURN(r.model_size, IntField(j, "model_size", false, 0, kDoubleSafeMax));
  MOETUNE_ASSIGN_OR_RETURN(r.avg_ts, DoubleField(j, "avg_ts", true));
  MOETUNE_ASSIGN_OR_RETURN(r.stddev_ts, DoubleField(j, "stddev_ts", false));
  MOETUNE_ASSIGN_OR_RETURN(r.avg_ns, IntField(j, "avg_ns", false, 0, kDoubleSafeMax));
  r.n_prompt = static_cast<int>(n_prompt);
  r.n_gen = static_cast<int>(n_gen);
  r.n_depth = static_cast<int>(n_depth);
  r.n_threads = static_cast<int>(n_threads);
  r.n_batch = static_cast<int>(n_batch);
  r.n_ubatch = static_cast<int>(n_ubatch);
  r.n_gpu_layers = static_cast<int>(ngl);
  r.n_cpu_moe = static_cast<int>(ncmoe);
  r.type_k = StringField(j, "type_k");
  r.type_v = StringField(j, "type_v");
  r.flash_attn = FlashAttn(j);
  r.backends = StringField(j, "backends");
  r.model_type = StringField(j, "model_type");
  if (auto it = j.find("samples_ts"); it != j.end() && it->is_array()) {
    for (const auto& v : *it) {
      if (!v.is_number() || !std::isfinite(v.get<double>()))
        return Error(ErrorKind::kFormat,
                     "llama-bench field 'samples_ts' holds something other than a finite number");
      if (!IsPlausibleTokensPerSecond(v.get<double>())) {
        return Error(ErrorKind::kFormat,
                     fmt::format("llama-bench field 'samples_ts' holds {}, outside the "
                                 "possible 0 to {:g} tokens per second",
                                 v.get<double>(), kMaxTokensPerSecond));
      }
      r.samples_ts.push_back(v.get<double>());
    }
  }
  if (auto it = j.find("samples_ns"); it != j.end() && it->is_array()) {
    for (const auto& v : *it) {
      MOETUNE_ASSIGN_OR_RETURN(const int64_t ns, ToInt(v, "samples_ns", 0, kDoubleSafeMax));
      r.samples_ns.push_back(ns);
    }
  }
  // Older versions print only the mean: one pseudo-sample keeps the
  // statistics honest (no standard deviation from a single value).
  if (r.samples_ts.empty()) r.samples_ts.push_back(r.avg_ts);
  r.raw = std::move(j);
  return r;
}

std::vector<BenchRecord> ParseBenchJsonl(std::string_view text,
                                         std::vector<std::string>* bad_lines) {
  std::vector<BenchRecord> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos || line[b] != '{') continue;
    auto r = ParseBenchRecord(line.substr(b));
    if (r.ok()) {
      out.push_back(std::move(r).value());
    } else if (bad_lines != nullptr) {
      bad_lines->push_back(r.error().message());
    }
  }
  return out;
}

}  // namespace moetune
