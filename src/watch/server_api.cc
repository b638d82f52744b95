#include "watch/server_api.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "util/json_fields.h"
#include "util/json_parse.h"

namespace moetune {
namespace {

using nlohmann::json;

constexpr std::string_view kPrefix = "llamacpp:";
// A llama-server answer is a few KiB; anything far larger is not one.
constexpr std::size_t kMaxLines = 10000;
// Server slots: llama.cpp allows 256 (LLAMA_MAX_SEQ); /slots is read up to 4096.
constexpr int64_t kMaxSlots = 4096;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<double> ParseNumber(std::string_view s) {
  const std::string text(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> IntField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < -1e15 || v > 1e15) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<bool> BoolField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

}  // namespace

Result<ServerMetrics> ParseMetrics(std::string_view text) {
  ServerMetrics m;
  std::size_t lines = 0;
  while (!text.empty() && lines < kMaxLines) {
    ++lines;
    const auto nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    if (line.substr(0, kPrefix.size()) != kPrefix) continue;
    // name[{labels}] value [timestamp]
    std::size_t name_end = line.find_first_of(" \t{");
    if (name_end == std::string_view::npos) continue;
    const std::string name(line.substr(kPrefix.size(), name_end - kPrefix.size()));
    std::string_view rest = line.substr(name_end);
    if (!rest.empty() && rest.front() == '{') {
      const auto close = rest.find('}');
      if (close == std::string_view::npos) continue;
      rest = rest.substr(close + 1);
    }
    rest = Trim(rest);
    const auto sp = rest.find_first_of(" \t");
    const auto value = ParseNumber(rest.substr(0, sp));
    if (!value || name.empty() || name.size() > 200) continue;
    m.all[name] = *value;
  }
  if (m.all.empty()) {
    return Error(ErrorKind::kFormat,
                 "the /metrics answer holds no llamacpp: metric, so this is not llama-server's "
                 "Prometheus endpoint");
  }
  auto get = [&](const char* name) -> std::optional<double> {
    auto it = m.all.find(name);
    return it == m.all.end() ? std::nullopt : std::optional<double>(it->second);
  };
  m.prompt_tokens_total = get("prompt_tokens_total");
  m.prompt_seconds_total = get("prompt_seconds_total");
  m.tokens_predicted_total = get("tokens_predicted_total");
  m.tokens_predicted_seconds_total = get("tokens_predicted_seconds_total");
  m.n_decode_total = get("n_decode_total");
  m.requests_processing = get("requests_processing");
  m.requests_deferred = get("requests_deferred");
  std::vector<std::string> missing;
  if (!m.prompt_tokens_total) missing.push_back("llamacpp:prompt_tokens_total");
  if (!m.prompt_seconds_total) missing.push_back("llamacpp:prompt_seconds_total");
  if (!m.tokens_predicted_total) missing.push_back("llamacpp:tokens_predicted_total");
  if (!m.tokens_predicted_seconds_total)
    missing.push_back("llamacpp:tokens_predicted_seconds_total");
  if (!missing.empty()) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("this llama-server's /metrics lacks {}: moetune derives prefill and "
                             "decode speed from these counters (use a llama.cpp build from 2024 "
                             "or later)",
                             fmt::join(missing, ", ")));
  }
  return m;
}

Result<std::vector<SlotState>> ParseSlots(std::string_view body) {
  const json j = ParseJsonOrDiscarded(body);
  if (j.is_discarded() || !j.is_array()) {
    return Error(ErrorKind::kFormat, "the /slots answer is not a JSON array of slots");
  }
  std::vector<SlotState> slots;
  for (const auto& s : j) {
    if (!s.is_object()) continue;
    if (slots.size() >= static_cast<std::size_t>(kMaxSlots)) break;
    SlotState st;
    st.id = static_cast<int>(IntField(s, "id").value_or(static_cast<int64_t>(slots.size())));
    st.n_ctx = std::max<int64_t>(0, IntField(s, "n_ctx").value_or(0));
    st.is_processing = BoolField(s, "is_processing").value_or(false);
    st.id_task = IntField(s, "id_task").value_or(-1);
    st.depth = IntField(s, "n_prompt_tokens");
    if (!st.depth) st.depth = IntField(s, "n_past");
    if (st.depth && *st.depth < 0) st.depth.reset();
    auto nt = s.find("next_token");
    if (nt != s.end()) {
      const json* first = nt->is_array() && !nt->empty() ? &(*nt)[0] : &*nt;
      if (first->is_object())
        st.n_decoded = std::max<int64_t>(0, IntField(*first, "n_decoded").value_or(0));
    }
    slots.push_back(st);
  }
  return slots;
}

Result<ServerProps> ParseProps(std::string_view body) {
  const json j = ParseJsonOrDiscarded(body);
  if (j.is_discarded() || !j.is_object()) {
    return Error(ErrorKind::kFormat, "the /props answer is not a JSON object");
  }
  ServerProps p;
  p.model_path = StringField(j, "model_path");
  p.build_info = StringField(j, "build_info");
  // Figures a llama-server cannot report (-3 slots, a negative context) are
  // refused with the field named rather than shown or computed with.
  JsonFields f(j, "/props");
  p.total_slots = static_cast<int>(f.Int("total_slots", 0, kMaxSlots, 0));
  auto dg = j.find("default_generation_settings");
  if (dg != j.end() && dg->is_object()) {
    JsonFields g(*dg, f.Path("default_generation_settings"));
    p.n_ctx_per_slot = g.Int("n_ctx", 0, int64_t{1} << 32, 0);
    f.Merge(g);
  }
  if (!f.ok()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("the /props answer is not llama-server's: {}", f.error().message()));
  }
  p.endpoint_metrics = BoolField(j, "endpoint_metrics");
  p.endpoint_slots = BoolField(j, "endpoint_slots");
  if (p.model_path.empty() && p.total_slots == 0 && dg == j.end()) {
    return Error(ErrorKind::kFormat,
                 "the /props answer has none of llama-server's fields (model_path, total_slots, "
                 "default_generation_settings)");
  }
  return p;
}

std::string ServerErrorMessage(std::string_view body) {
  const json j = ParseJsonOrDiscarded(body);
  if (j.is_discarded() || !j.is_object()) return "";
  auto e = j.find("error");
  if (e == j.end() || !e->is_object()) return "";
  return StringField(*e, "message");
}

}  // namespace moetune
