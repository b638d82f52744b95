#include "watch/observation.h"

#include <fmt/format.h>

#include <cmath>

#include "engine/bench_jsonl.h"

namespace moetune {
namespace {

using nlohmann::json;

json WorkJson(const WorkSample& w) {
  return {{"tokens", w.tokens},
          {"seconds", w.seconds},
          {"tps", w.rate()},
          {"depth", w.depth ? json(*w.depth) : json(nullptr)}};
}

std::optional<double> Number(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > 1e12) return std::nullopt;
  return v;
}

Result<std::optional<WorkSample>> WorkFromJson(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<WorkSample>();
  if (!it->is_object())
    return Error(ErrorKind::kFormat, std::string("'") + key + "' is not an object");
  const auto tokens = Number(*it, "tokens");
  const auto seconds = Number(*it, "seconds");
  if (!tokens || !seconds) {
    return Error(ErrorKind::kFormat,
                 std::string("'") + key + "' needs non-negative numbers 'tokens' and 'seconds'");
  }
  if (*tokens <= 0 || *seconds <= 0) return std::optional<WorkSample>();
  if (!IsPlausibleTokensPerSecond(*tokens / *seconds)) {
    return Error(ErrorKind::kFormat,
                 fmt::format("'{}' is {} tokens in {} s, faster than the possible {:g} tokens per "
                             "second",
                             key, *tokens, *seconds, kMaxTokensPerSecond));
  }
  WorkSample w{*tokens, *seconds, Number(*it, "depth")};
  return std::optional<WorkSample>(w);
}

}  // namespace

json ObservationJson(const Observation& o) {
  return {{"t", o.time_s},
          {"prefill", o.prefill ? WorkJson(*o.prefill) : json(nullptr)},
          {"decode", o.decode ? WorkJson(*o.decode) : json(nullptr)},
          {"concurrent", o.concurrent}};
}

Result<Observation> ObservationFromJson(const json& j) {
  if (!j.is_object()) return Error(ErrorKind::kFormat, "a trace line is not a JSON object");
  Observation o;
  o.time_s = Number(j, "t").value_or(0);
  MOETUNE_ASSIGN_OR_RETURN(o.prefill, WorkFromJson(j, "prefill"));
  MOETUNE_ASSIGN_OR_RETURN(o.decode, WorkFromJson(j, "decode"));
  auto c = j.find("concurrent");
  o.concurrent = c != j.end() && c->is_boolean() && c->get<bool>();
  return o;
}

}  // namespace moetune
