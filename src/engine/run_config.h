#pragma once
/// What moetune asks the engine to measure (one RunConfig = one llama-bench
/// test) and what comes back (RunResult: a measurement with its raw samples, or
/// a failure with the engine's own words). Placement is always explicit.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "config/server_config.h"
#include "engine/failure.h"
#include "util/result.h"

namespace moetune {

/// Kind of a llama-bench test.
enum class TestKind { kPrefill, kDecode, kPrefillDecode };
/// "pp512", "tg128", "pp512+tg128" (llama-bench's names), with "@d4096" for depth.
std::string TestName(int n_prompt, int n_gen, int n_depth);

/// One measurement to make: a server configuration (config/server_config.h)
/// plus the shape of the test. llama-bench takes the configuration's
/// placement, batch sizes, flash attention, KV types, threads, load mode and
/// RPC devices; the context (-c, -np, -kvu) is sized by the test itself.
struct RunConfig : ServerConfig {
  int n_depth = 0;      // -d: tokens put in the context first (not timed)
  int n_prompt = 0;     // > 0 and n_gen == 0: prefill test
  int n_gen = 0;        // > 0 and n_prompt == 0: decode test; both: prefill+decode
  int repetitions = 5;  // -r
  bool warmup = true;   // false: --no-warmup

  /// A measurement always names its thread count: 1 unless set (llama-bench's
  /// own default is every core).
  RunConfig() { threads = 1; }
  /// `server` measured with the test shape's defaults.
  explicit RunConfig(ServerConfig server) : ServerConfig(std::move(server)) {}

  const ServerConfig& server() const { return *this; }
  ServerConfig& server() { return *this; }
  TestKind kind() const;
  std::string test_name() const { return TestName(n_prompt, n_gen, n_depth); }
  /// Everything that forces llama-bench to reload the model (plus the
  /// invocation-wide options): configs with equal keys can share one process.
  std::string ModelKey() const;
  /// The per-test parameters that llama-bench sweeps without reloading.
  std::tuple<int, int, int, int, uint32_t, uint32_t, FlashAttn> ContextKey() const;
  bool operator==(const RunConfig&) const = default;
};

/// What llama-bench takes of a server configuration: everything but the
/// context, the slots, -fit and the address (a test sizes its own context),
/// and no --n-cpu-moe written counts as 0. Two configurations with equal
/// parts are one measured setting.
ServerConfig BenchPart(const ServerConfig& config);

/// The result of one RunConfig.
struct RunResult {
  RunConfig config;
  /// Set when the configuration could not be measured.
  std::optional<EngineFailure> failure;
  // The measurement (valid when !failure), straight from llama-bench.
  double avg_ts = 0;  // tokens per second, mean over repetitions
  double stddev_ts = 0;
  std::vector<double> samples_ts;   // tokens per second of each repetition
  std::vector<int64_t> samples_ns;  // duration of each repetition
  nlohmann::json record;            // the whole JSON object the engine printed
  int invocation = -1;              // index into BenchRun::invocations
  /// Other processes' CPU use while it ran, in cores (hw/machine_load.h);
  /// nullopt when not measured. Above kBusyOtherCores the machine was busy.
  std::optional<double> other_cpu_cores;

  bool ok() const { return !failure.has_value(); }
};

/// Parses a llama-bench style list: "1,2,4", ranges "1-4", "0-8+2" (step),
/// "1-16*2" (multiply). Errors name the bad item.
Result<std::vector<int>> ParseIntList(std::string_view text);

/// The most configurations one sweep may hold (`moetune bench`): more would
/// take days and the expansion itself gigabytes.
inline constexpr uint64_t kMaxSweepConfigs = 10000;

/// One dimension of a sweep: its flag and how many values it has.
struct SweepDimension {
  std::string flag;
  std::size_t values = 0;
};

/// The number of configurations in the product of `dims`, computed before
/// anything is expanded; kInvalidArgument naming the count, the largest lists
/// and the limit when it exceeds kMaxSweepConfigs.
Result<uint64_t> CheckSweepSize(const std::vector<SweepDimension>& dims);

/// Splits "a,b,c" into its items (for string-valued lists such as -fa).
std::vector<std::string> SplitList(std::string_view text);

}  // namespace moetune
