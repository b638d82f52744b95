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

#include "engine/failure.h"
#include "util/result.h"

namespace moetune {

/// The memory-shaping arguments shared by llama-bench, llama-server and
/// llama-fit-params.
struct PlacementArgs {
  int n_gpu_layers = 99;        // -ngl: the last N layers on the GPU
  int n_cpu_moe = 0;            // -ncmoe: experts of layers 0..N-1 stay in host memory
  std::string override_tensor;  // -ot "pattern=BUFT[,...]"; empty = none
  std::optional<int> ctx_size;  // -c (server, fit-params); llama-bench sizes its own
  int n_batch = 2048;           // -b
  int n_ubatch = 512;           // -ub
  std::string type_k = "f16";   // -ctk
  std::string type_v = "f16";   // -ctv
  std::string flash_attn;       // -fa on|off|auto; empty = the engine's default

  bool operator==(const PlacementArgs&) const = default;
};

/// Kind of a llama-bench test.
enum class TestKind { kPrefill, kDecode, kPrefillDecode };
/// "pp512", "tg128", "pp512+tg128" (llama-bench's names), with "@d4096" for depth.
std::string TestName(int n_prompt, int n_gen, int n_depth);

/// One measurement to make.
struct RunConfig {
  std::string model;
  PlacementArgs placement;
  std::string load_mode;  // -lm (when the engine has it); empty = default
  std::string rpc;        // --rpc HOST:PORT[,...]: RPC devices join (part of the model key)
  int threads = 1;        // -t
  int n_depth = 0;        // -d: tokens put in the context first (not timed)
  int n_prompt = 0;       // > 0 and n_gen == 0: prefill test
  int n_gen = 0;          // > 0 and n_prompt == 0: decode test; both: prefill+decode
  int repetitions = 5;    // -r
  bool warmup = true;     // false: --no-warmup

  TestKind kind() const;
  std::string test_name() const { return TestName(n_prompt, n_gen, n_depth); }
  /// Everything that forces llama-bench to reload the model (plus the
  /// invocation-wide options): configs with equal keys can share one process.
  std::string ModelKey() const;
  /// The per-test parameters that llama-bench sweeps without reloading.
  std::tuple<int, int, int, int, std::string, std::string, std::string> ContextKey() const;
  bool operator==(const RunConfig&) const = default;
};

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

/// The one spelling of a flash-attention setting: "on", "off" or "auto" for
/// every value llama.cpp accepts (on/enabled/true/1, off/disabled/false/0,
/// auto/-1: common_arg_utils::is_truthy/is_falsey/is_autoy, common/arg.cpp);
/// "" (the engine's default) stays "". Anything else is kInvalidArgument.
Result<std::string> NormalizeFlashAttn(std::string_view value);

/// NormalizeFlashAttn, or `value` unchanged when it is not a valid setting
/// (the engine then rejects it with its own message).
std::string FlashAttnOrAsIs(std::string_view value);

}  // namespace moetune
