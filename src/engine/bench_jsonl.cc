#include "engine/bench_jsonl.h"

#include <fmt/format.h>

#include <cmath>

namespace moetune {
namespace {

using nlohmann::json;

Result<int64_t> IntField(const json& j, const char* name, bool required, int64_t fallback = 0) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (!required) return fallback;
    return Error(ErrorKind::kFormat, fmt::format("llama-bench result has no '{}' field", name));
  }
  if (it->is_number_integer() || it->is_number_unsigned()) return it->get<int64_t>();
  if (it->is_number_float()) return static_cast<int64_t>(std::llround(it->get<double>()));
  if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
  return Error(ErrorKind::kFormat,
               fmt::format("llama-bench field '{}' is not a number: {}", name, it->dump()));
}

Result<double> DoubleField(const json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) {
    if (!required) return 0.0;
    return Error(ErrorKind::kFormat, fmt::format("llama-bench result has no '{}' field", name));
  }
  if (!it->is_number()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("llama-bench field '{}' is not a number: {}", name, it->dump()));
  }
  return it->get<double>();
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
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Error(ErrorKind::kFormat, fmt::format("not a JSON object: '{}'", line.substr(0, 200)));
  }
  BenchRecord r;
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_prompt, IntField(j, "n_prompt", true));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_gen, IntField(j, "n_gen", true));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_depth, IntField(j, "n_depth", false));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_threads, IntField(j, "n_threads", false));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_batch, IntField(j, "n_batch", false));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t n_ubatch, IntField(j, "n_ubatch", false));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t ngl, IntField(j, "n_gpu_layers", false));
  MOETUNE_ASSIGN_OR_RETURN(const int64_t ncmoe, IntField(j, "n_cpu_moe", false));
  MOETUNE_ASSIGN_OR_RETURN(r.model_size, IntField(j, "model_size", false));
  MOETUNE_ASSIGN_OR_RETURN(r.avg_ts, DoubleField(j, "avg_ts", true));
  MOETUNE_ASSIGN_OR_RETURN(r.stddev_ts, DoubleField(j, "stddev_ts", false));
  MOETUNE_ASSIGN_OR_RETURN(r.avg_ns, IntField(j, "avg_ns", false));
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
      if (!v.is_number())
        return Error(ErrorKind::kFormat, "llama-bench field 'samples_ts' holds a non-number");
      r.samples_ts.push_back(v.get<double>());
    }
  }
  if (auto it = j.find("samples_ns"); it != j.end() && it->is_array()) {
    for (const auto& v : *it) {
      if (!v.is_number())
        return Error(ErrorKind::kFormat, "llama-bench field 'samples_ns' holds a non-number");
      r.samples_ns.push_back(v.is_number_float() ? static_cast<int64_t>(v.get<double>())
                                                 : v.get<int64_t>());
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
