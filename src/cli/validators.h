#pragma once
/// CLI11 validators built on moetune's own parsers, so that a bad value is a
/// bad command line (exit 2) whose message names the flag, the value and the
/// accepted forms, before any work starts.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "util/result.h"

namespace moetune {

/// Limits shared by every command's options: one figure per quantity.
inline constexpr int kMaxThreads = 4096;
/// Context lengths (--ctx): what ParseTokenCount reads (util/units.h).
inline constexpr int64_t kMaxContext = 1000000000;
/// Memory sizes (--vram, --reserve, --margin, --host-ram): 1 PiB.
inline constexpr int64_t kMaxMemoryBytes = int64_t{1} << 50;
/// -ngl / --n-cpu-moe: every layer of the largest model the reader accepts
/// (model/arch.h kMaxLayers), plus the output layer.
inline constexpr int kMaxGpuLayers = 100001;
/// -b / -ub: llama.cpp holds them in int32 (llama_context_params n_batch,
/// n_ubatch) and clamps them to the context itself.
inline constexpr int kMaxBatch = 2147483647;
/// Prompt, generation and depth sizes of a benchmark test.
inline constexpr int kMaxTokens = 1 << 30;
/// Server slots: llama.cpp's LLAMA_MAX_SEQ (src/llama-cparams.h) is 256.
inline constexpr int kMaxParallel = 256;
inline constexpr int kMaxRepetitions = 1000;
/// Devices one plan splits a model over (--vram 24GiB,12GiB,...).
inline constexpr int kMaxPlanDevices = 16;
/// A week: longer per-test limits are typing mistakes, not plans.
inline constexpr double kMaxTimeoutSeconds = 7 * 86400.0;

/// A context length ("32768", "32K") within [min, max] tokens.
CLI::Validator TokenCount(int64_t min, int64_t max);
/// A size ("12GiB", "11500MiB", "0") within [min, max] bytes.
CLI::Validator ByteSize(int64_t min, int64_t max);
/// A comma list of sizes ("24GiB,12GiB"), each within [min, max], at most
/// `max_items` of them (one size per device).
CLI::Validator ByteSizeList(int64_t min, int64_t max, int max_items);
/// The sizes of a list ByteSizeList accepted.
std::vector<int64_t> ByteSizesOf(const std::string& list);
/// A workload: chat, agent or PROMPT:ANSWER.
CLI::Validator WorkloadName();
/// A llama-bench style list ("1,2,4", "1-8", "0-8+2") of values within [min, max],
/// at most `max_items` of them.
CLI::Validator IntList(int min, int max, int max_items = 1000);
/// A duration in seconds ("5", "0.5") within [min, max].
CLI::Validator Seconds(double min, double max);
/// An integer within [min, max] ("accepted range MIN to MAX" in the message).
CLI::Validator IntRange(int64_t min, int64_t max);
/// A finite number within [min, max] (CLI::Range lets "nan" through: every
/// comparison with NaN is false). For options held in a double.
CLI::Validator NumberRange(double min, double max);
/// A random seed: a whole number from 0 to 2^63-1 (CLI11's own conversion
/// turns "-1" and "18446744073709551616" into 2^64-1 without a word).
CLI::Validator SeedValue();
/// A value `check` accepts; its error message is the validator's message. The
/// one way to turn any of moetune's parsers into a command-line check, e.g.
/// `Accepted([](const std::string& s) { return ParseSpillMode(s).status(); }, "MODE")`.
CLI::Validator Accepted(std::function<Status(const std::string&)> check, std::string type_name);
/// A value a parser `Result<T> parse(std::string_view)` accepts, e.g.
/// `Parses(ParseBandwidthGbps, "RATE")`.
template <typename Parse>
CLI::Validator Parses(Parse parse, std::string type_name) {
  return Accepted(
      [parse](const std::string& s) -> Status {
        auto r = parse(s);
        if (!r.ok()) return r.take_error();
        return OkStatus();
      },
      std::move(type_name));
}
/// A KV cache type llama.cpp accepts (f16, q8_0, ...); `list`: a comma list of them.
CLI::Validator KvCacheType(bool list = false);
/// RPC servers as --rpc takes them: HOST:PORT[,HOST:PORT...].
CLI::Validator RpcServerList();
/// Flash attention in llama.cpp's spellings: on/off/auto (1/0/-1, ...), a comma list.
CLI::Validator FlashAttnList();

}  // namespace moetune
