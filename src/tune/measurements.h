#pragma once
/// Measurements from anywhere, in one form: llama-bench output (`-o jsonl` or
/// `-o json`, from any machine or version), `moetune bench --json` and
/// `moetune tune` journals all become RunResults, so that one set of reading
/// rules (tune/analysis.h) applies to all of them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/run_config.h"
#include "stats/summary.h"
#include "util/result.h"

namespace moetune {

/// What one loaded file contributed.
struct LoadedFile {
  std::string path;
  std::string
      format;  // "llama-bench jsonl", "llama-bench json", "moetune bench", "moetune journal"
  std::size_t results = 0;
  std::size_t skipped = 0;  // objects that were not usable results
};

struct LoadedMeasurements {
  std::vector<RunResult> results;
  std::vector<LoadedFile> files;
  std::vector<std::string> notes;
};

/// The most results one LoadMeasurements reads across all its files (about
/// 1.4 KB of memory each): a bound on the work and memory of `analyze`.
inline constexpr std::size_t kMaxMeasurementResults = 100000;

/// Reads and merges `paths` (regular files, at most 64 MiB each, at most
/// kMaxMeasurementResults results together). Errors name the file and what is
/// wrong with it, or the limit; objects that are not results are skipped with
/// a note.
Result<LoadedMeasurements> LoadMeasurements(const std::vector<std::string>& paths);

/// Parses one file's text (exposed for tests and fuzzing).
Result<LoadedMeasurements> ParseMeasurements(std::string_view text, const std::string& name);

/// Statistics of one result's tokens/s: from its samples when it has at least
/// two, else from its mean and standard deviation with `assumed_n` repetitions
/// (llama-bench's default is 5). `assumed` is set when n was assumed.
/// Samples that are outliers by median/MAD are left out of the mean and spread
/// when n >= 5; `best` is BestRepetition of every sample.
Summary ResultStats(const RunResult& r, int assumed_n = 5, bool* assumed = nullptr);

}  // namespace moetune
