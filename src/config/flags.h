#pragma once
/// The one vocabulary of llama.cpp flags that moetune reads or writes: for
/// each flag its spellings (the one moetune writes, the long name, the
/// aliases llama.cpp also accepts), its `LLAMA_ARG_*` environment variable,
/// its preset (INI) key, what follows it on a command line, and which of
/// llama-server, llama-bench and llama-fit-params take it.
///
/// Every reader and writer of a command line uses this table: the argv writer
/// and parser of a ServerConfig (config/server_argv.h), the `--emit` formats,
/// llama-bench's invocation, llama-fit-params' dry run, and watch's reading of
/// a running server's command line and environment.
///
/// Sources: llama.cpp common/arg.cpp (each option's names and set_env()),
/// tools/llama-bench/llama-bench.cpp (print_usage), common/preset.cpp (preset
/// keys are the long name without dashes), checked against the installed
/// engine's `--help` (Debian's llama.cpp 0.7.0, build 11669).

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace moetune {

/// Every flag of the vocabulary. The order of the table (Flags()) is the
/// order in which moetune writes them: the order of the printed commands.
enum class FlagId {
  kModel,
  // --rpc before -ot and -dev: llama.cpp's argument parser resolves device
  // and buffer names when it reads those flags, and RPC devices exist only
  // once --rpc has been read ("invalid device: RPC0" otherwise).
  kRpc,
  kGpuLayers,
  kNCpuMoe,
  kCpuMoe,
  kOverrideTensor,
  kCtxSize,
  kParallel,
  kKvUnified,
  kNoKvUnified,
  kUbatch,
  kBatch,
  kFlashAttn,
  kCacheTypeK,
  kCacheTypeV,
  kThreads,
  kThreadsBatch,
  kFit,
  kFitTarget,
  kLoadMode,
  kSplitMode,
  kTensorSplit,
  kMainGpu,
  kDevice,
  kNoMmap,
  kMlock,
  kNoOpOffload,
  kHost,
  kPort,
  kMetrics,
  kNoSlots,
  kLogFile,
  kAlias,
  kApiKey,
  // llama-fit-params only.
  kFitPrint,
  kNoRepack,
  // llama-bench only (the test shape and the invocation).
  kRepetitions,
  kOutput,
  kProgress,
  kVerbose,
  kNoWarmup,
  kDepth,
  kNPrompt,
  kNGen,
  kPromptGen,
};

/// What follows a flag on the command line.
enum class FlagArity {
  kValue,   // one value: `-c 4096`
  kList,    // one value that may repeat; repeats are joined with commas (`-ot a,b`)
  kSwitch,  // no value: `-kvu`. Written as the flag alone on a command line, and as
            // `true` in env and preset files, which llama.cpp reads as "on"
            // (common/arg.cpp common_arg_utils::is_truthy; common/preset.cpp to_args).
};

/// The tools that take a flag (a bit set).
enum FlagTool : uint8_t {
  kToolServer = 1,     // llama-server (and llama-cli: common/arg.cpp)
  kToolBench = 2,      // llama-bench
  kToolFitParams = 4,  // llama-fit-params (common/arg.cpp)
};

/// One flag of the vocabulary.
struct FlagSpec {
  FlagId id;
  /// The canonical name of the setting in moetune's JSON and messages ("n_cpu_moe").
  const char* key;
  /// How moetune writes it for llama-server and llama-fit-params ("--n-cpu-moe").
  const char* spelling;
  /// How moetune writes it for llama-bench, when llama-bench spells it otherwise ("-ncmoe");
  /// nullptr: `spelling`.
  const char* bench_spelling;
  /// The long name ("--n-cpu-moe"); without the dashes, the preset key.
  const char* long_name;
  /// Other spellings accepted on input ("-ncmoe", "--gpu-layers").
  std::vector<const char*> aliases;
  /// The `LLAMA_ARG_*` variable; nullptr: llama.cpp has none.
  const char* env;
  FlagArity arity;
  uint8_t tools;  // FlagTool bits
  /// Decides speed or memory: compared between a tuned and a running server,
  /// and allowed in the configurations moetune writes and starts.
  bool shapes;

  bool takes_value() const { return arity != FlagArity::kSwitch; }
  bool TakenBy(FlagTool tool) const { return (tools & tool) != 0; }
  /// The spelling moetune writes for `tool`.
  const char* SpellingFor(FlagTool tool) const {
    return tool == kToolBench && bench_spelling != nullptr ? bench_spelling : spelling;
  }
};

/// The whole vocabulary, in writing order.
const std::vector<FlagSpec>& Flags();
/// The flag with this id (every id has one).
const FlagSpec& Flag(FlagId id);
/// The flag for a spelling, long name or alias; nullptr when unknown.
const FlagSpec* FindFlag(std::string_view arg);
/// The flag whose `LLAMA_ARG_*` variable is `name`; nullptr when none.
const FlagSpec* FindFlagByEnv(std::string_view name);
/// The flag for a canonical key ("n_cpu_moe"); nullptr when none.
const FlagSpec* FindFlagByKey(std::string_view key);
/// The preset key of a flag: its long name without the leading dashes.
std::string PresetKey(const FlagSpec& flag);

/// A flag as moetune writes it for llama-server, with its value, for the
/// labels and messages that name a setting ("--n-cpu-moe 21", "-ub 1024").
std::string FlagText(FlagId id, std::string_view value);
template <class T>
requires std::is_arithmetic_v<T> std::string FlagText(FlagId id, T value) {
  return FlagText(id, std::to_string(value));
}

/// The value env and preset files give a switch (FlagArity::kSwitch).
inline constexpr const char* kSwitchOnValue = "true";

/// One flag with its value as written (empty for a switch).
struct FlagSetting {
  FlagId flag;
  std::string value;
  bool operator==(const FlagSetting&) const = default;
};

}  // namespace moetune
