#pragma once
/// Reading llama-bench's `-o jsonl` output: one JSON object per test, read by
/// field name (fields come and go between versions; only the ones moetune
/// needs are required).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

/// The fields of one llama-bench test result that moetune uses.
struct BenchRecord {
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;
  int n_threads = 0;
  int n_batch = 0;
  int n_ubatch = 0;
  int n_gpu_layers = 0;
  int n_cpu_moe = 0;
  std::string type_k;
  std::string type_v;
  /// "on"/"off"/"auto": newer versions print -1/0/1 or true/false.
  std::string flash_attn;
  std::string backends;
  std::string model_type;
  int64_t model_size = 0;
  double avg_ts = 0;
  double stddev_ts = 0;
  int64_t avg_ns = 0;
  std::vector<double> samples_ts;
  std::vector<int64_t> samples_ns;
  nlohmann::json raw;
};

/// The fastest a measured speed can be: a billion tokens per second is far
/// beyond any machine; a figure above it (or a negative one) is a damaged or
/// forged record, refused with the field named so that no report shows a
/// 300-digit speed or an infinite interval.
inline constexpr double kMaxTokensPerSecond = 1e9;

/// True for a measured tokens/s sample: finite, above 0, at most kMaxTokensPerSecond.
inline bool IsPlausibleTokensPerSecond(double v) { return v > 0 && v <= kMaxTokensPerSecond; }

/// Parses one line. Errors name the missing or mistyped field, or the field
/// whose value is out of range.
Result<BenchRecord> ParseBenchRecord(std::string_view line);

/// Parses every line that looks like a JSON object; other lines are ignored.
/// `bad_lines` (optional) receives the errors of object lines that failed.
std::vector<BenchRecord> ParseBenchJsonl(std::string_view text,
                                         std::vector<std::string>* bad_lines = nullptr);

}  // namespace moetune
