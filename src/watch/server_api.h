#pragma once
/// What llama-server's monitoring endpoints say, parsed from their text:
/// `/metrics` (Prometheus text, only with `--metrics`), `/slots` (one object
/// per slot, on by default, off with `--no-slots`) and `/props`. Everything is
/// untrusted input: bounded, and a missing field is "unknown", never a crash.
///
/// Facts from llama.cpp (tools/server/server-context.cpp, struct
/// server_metrics and server_slot::to_json), checked against the installed
/// build 11669:
/// - `llamacpp:prompt_tokens_total` / `prompt_seconds_total` grow once per
///   request, when its first token is sampled (on_prompt_eval); they count only
///   the tokens that were processed, not those reused from the prompt cache.
/// - `llamacpp:tokens_predicted_total` / `tokens_predicted_seconds_total` grow
///   once per request, when it is released (on_prediction).
/// - `requests_processing` and `requests_deferred` are gauges; the
///   `*_tokens_seconds` and `n_busy_slots_per_decode` gauges are averages since
///   the previous /metrics call (a second scraper changes them), so moetune
///   derives rates from the counters only.
/// - A slot's `n_prompt_tokens` is the number of tokens in its context (the
///   depth); older builds call it `n_past`. While it generates,
///   `next_token[0].n_decoded` counts the tokens generated so far.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

/// The counters and gauges moetune uses from /metrics. A field is nullopt
/// when the installed build does not expose it.
struct ServerMetrics {
  std::optional<double> prompt_tokens_total;
  std::optional<double> prompt_seconds_total;
  std::optional<double> tokens_predicted_total;
  std::optional<double> tokens_predicted_seconds_total;
  std::optional<double> n_decode_total;
  std::optional<double> requests_processing;
  std::optional<double> requests_deferred;
  /// Every llamacpp:* sample, by name without the prefix (for --json).
  std::map<std::string, double> all;
};

/// Parses Prometheus text. Errors when the text holds no `llamacpp:` sample
/// (not a llama-server) or lacks the four throughput counters (the message
/// names the missing ones).
Result<ServerMetrics> ParseMetrics(std::string_view text);

/// One slot from /slots.
struct SlotState {
  int id = -1;
  int64_t n_ctx = 0;
  bool is_processing = false;
  int64_t id_task = -1;
  /// Tokens in the slot's context: `n_prompt_tokens`, or `n_past` on older builds.
  std::optional<int64_t> depth;
  /// Tokens generated so far by the running request (0 when idle).
  int64_t n_decoded = 0;
};

/// Parses a /slots answer (a JSON array of slot objects).
Result<std::vector<SlotState>> ParseSlots(std::string_view body);

/// The settings /props reveals.
struct ServerProps {
  std::string model_path;
  std::string build_info;
  int64_t n_ctx_per_slot = 0;  // default_generation_settings.n_ctx
  int total_slots = 0;
  std::optional<bool> endpoint_metrics;
  std::optional<bool> endpoint_slots;
};

/// Parses a /props answer. Errors when it is not a JSON object with at least
/// one field llama-server sets (then the URL is not a llama-server).
Result<ServerProps> ParseProps(std::string_view body);

/// The `message` of a llama-server error body ({"error":{"message":...}}), or
/// empty when the body is something else.
std::string ServerErrorMessage(std::string_view body);

}  // namespace moetune
