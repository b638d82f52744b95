#include "config/flags.h"

namespace moetune {
namespace {

constexpr uint8_t kServer = kToolServer;
constexpr uint8_t kServerFit = kToolServer | kToolFitParams;
constexpr uint8_t kAll = kToolServer | kToolBench | kToolFitParams;

}  // namespace

const std::vector<FlagSpec>& Flags() {
  using A = FlagArity;
  using F = FlagId;
  constexpr uint8_t kBench = kToolBench;
  constexpr uint8_t kFit = kToolFitParams;
  // Environment names: each option's set_env() in common/arg.cpp, as
  // `llama-server --help` lists them ("(env: LLAMA_ARG_...)"). -tb has none;
  // -no-kvu, --no-slots and --no-repack share their positive twin's
  // (LLAMA_ARG_KV_UNIFIED=false, ...). -kvu is llama-server's alone: this
  // engine's llama-fit-params refuses it. --no-mmap and --mlock are older
  // builds' (before -lm), read from their command lines.
  // One flag a line (a table): id, key, spelling, llama-bench's spelling,
  // long name, aliases, environment variable, arity, tools, shapes speed or memory.
  // clang-format off
  static const std::vector<FlagSpec> kFlags = {
      {F::kModel,          "model",           "-m",              nullptr,  "--model",          {},                "LLAMA_ARG_MODEL",            A::kValue,  kAll,       true},
      {F::kRpc,            "rpc",             "--rpc",           nullptr,  "--rpc",            {"-rpc"},          "LLAMA_ARG_RPC",              A::kValue,  kAll,       true},
      {F::kGpuLayers,      "n_gpu_layers",    "-ngl",            nullptr,  "--n-gpu-layers",   {"--gpu-layers"},  "LLAMA_ARG_N_GPU_LAYERS",     A::kValue,  kAll,       true},
      {F::kNCpuMoe,        "n_cpu_moe",       "--n-cpu-moe",     "-ncmoe", "--n-cpu-moe",      {"-ncmoe"},        "LLAMA_ARG_N_CPU_MOE",        A::kValue,  kAll,       true},
      {F::kCpuMoe,         "cpu_moe",         "--cpu-moe",       nullptr,  "--cpu-moe",        {"-cmoe"},         "LLAMA_ARG_CPU_MOE",          A::kSwitch, kServerFit, true},
      {F::kOverrideTensor, "override_tensor", "-ot",             nullptr,  "--override-tensor", {},               "LLAMA_ARG_OVERRIDE_TENSOR",  A::kList,   kAll,       true},
      {F::kCtxSize,        "ctx_size",        "-c",              nullptr,  "--ctx-size",       {},                "LLAMA_ARG_CTX_SIZE",         A::kValue,  kServerFit, true},
      {F::kParallel,       "n_parallel",      "-np",             nullptr,  "--parallel",       {},                "LLAMA_ARG_N_PARALLEL",       A::kValue,  kServerFit, true},
      {F::kKvUnified,      "kv_unified",      "-kvu",            nullptr,  "--kv-unified",     {},                "LLAMA_ARG_KV_UNIFIED",       A::kSwitch, kServer,    true},
      {F::kNoKvUnified,    "no_kv_unified",   "-no-kvu",         nullptr,  "--no-kv-unified",  {},                nullptr,                      A::kSwitch, kServer,    true},
      {F::kUbatch,         "n_ubatch",        "-ub",             nullptr,  "--ubatch-size",    {},                "LLAMA_ARG_UBATCH",           A::kValue,  kAll,       true},
      {F::kBatch,          "n_batch",         "-b",              nullptr,  "--batch-size",     {},                "LLAMA_ARG_BATCH",            A::kValue,  kAll,       true},
      {F::kFlashAttn,      "flash_attn",      "-fa",             nullptr,  "--flash-attn",     {},                "LLAMA_ARG_FLASH_ATTN",       A::kValue,  kAll,       true},
      {F::kCacheTypeK,     "type_k",          "-ctk",            nullptr,  "--cache-type-k",   {},                "LLAMA_ARG_CACHE_TYPE_K",     A::kValue,  kAll,       true},
      {F::kCacheTypeV,     "type_v",          "-ctv",            nullptr,  "--cache-type-v",   {},                "LLAMA_ARG_CACHE_TYPE_V",     A::kValue,  kAll,       true},
      {F::kThreads,        "threads",         "-t",              nullptr,  "--threads",        {},                "LLAMA_ARG_THREADS",          A::kValue,  kAll,       true},
      {F::kThreadsBatch,   "threads_batch",   "-tb",             nullptr,  "--threads-batch",  {},                nullptr,                      A::kValue,  kServerFit, true},
      {F::kFit,            "fit",             "-fit",            nullptr,  "--fit",            {},                "LLAMA_ARG_FIT",              A::kValue,  kServerFit, true},
      {F::kFitTarget,      "fit_target",      "-fitt",           nullptr,  "--fit-target",     {},                "LLAMA_ARG_FIT_TARGET",       A::kValue,  kAll,       true},
      {F::kLoadMode,       "load_mode",       "-lm",             nullptr,  "--load-mode",      {},                "LLAMA_ARG_LOAD_MODE",        A::kValue,  kAll,       true},
      {F::kSplitMode,      "split_mode",      "-sm",             nullptr,  "--split-mode",     {},                "LLAMA_ARG_SPLIT_MODE",       A::kValue,  kAll,       true},
      {F::kTensorSplit,    "tensor_split",    "-ts",             nullptr,  "--tensor-split",   {},                "LLAMA_ARG_TENSOR_SPLIT",     A::kValue,  kAll,       true},
      {F::kMainGpu,        "main_gpu",        "-mg",             nullptr,  "--main-gpu",       {},                "LLAMA_ARG_MAIN_GPU",         A::kValue,  kAll,       true},
      {F::kDevice,         "device",          "-dev",            nullptr,  "--device",         {},                "LLAMA_ARG_DEVICE",           A::kValue,  kAll,       true},
      {F::kNoMmap,         "no_mmap",         "--no-mmap",       nullptr,  "--no-mmap",        {},                nullptr,                      A::kSwitch, kServerFit, true},
      {F::kMlock,          "mlock",           "--mlock",         nullptr,  "--mlock",          {},                nullptr,                      A::kSwitch, kServerFit, true},
      {F::kNoOpOffload,    "no_op_offload",   "--no-op-offload", nullptr,  "--no-op-offload",  {},                nullptr,                      A::kSwitch, kServerFit, true},
      {F::kHost,           "host",            "--host",          nullptr,  "--host",           {},                "LLAMA_ARG_HOST",             A::kValue,  kServer,    false},
      {F::kPort,           "port",            "--port",          nullptr,  "--port",           {},                "LLAMA_ARG_PORT",             A::kValue,  kServer,    false},
      {F::kMetrics,        "metrics",         "--metrics",       nullptr,  "--metrics",        {},                "LLAMA_ARG_ENDPOINT_METRICS", A::kSwitch, kServer,    false},
      {F::kNoSlots,        "no_slots",        "--no-slots",      nullptr,  "--no-slots",       {},                nullptr,                      A::kSwitch, kServer,    false},
      {F::kLogFile,        "log_file",        "--log-file",      nullptr,  "--log-file",       {},                "LLAMA_ARG_LOG_FILE",         A::kValue,  kServer,    false},
      {F::kAlias,          "alias",           "-a",              nullptr,  "--alias",          {},                "LLAMA_ARG_ALIAS",            A::kValue,  kServer,    false},
      {F::kApiKey,         "api_key",         "--api-key",       nullptr,  "--api-key",        {},                "LLAMA_API_KEY",              A::kValue,  kServer,    false},
      {F::kFitPrint,       "fit_print",       "-fitp",           nullptr,  "--fit-print",      {},                nullptr,                      A::kValue,  kFit,       false},
      {F::kNoRepack,       "no_repack",       "--no-repack",     nullptr,  "--no-repack",      {"-nr"},           nullptr,                      A::kSwitch, kServerFit, false},
      {F::kRepetitions,    "repetitions",     "-r",              nullptr,  "--repetitions",    {},                nullptr,                      A::kValue,  kBench,     false},
      {F::kOutput,         "output",          "-o",              nullptr,  "--output",         {},                nullptr,                      A::kValue,  kBench,     false},
      {F::kProgress,       "progress",        "--progress",      nullptr,  "--progress",       {},                nullptr,                      A::kSwitch, kBench,     false},
      {F::kVerbose,        "verbose",         "-v",              nullptr,  "--verbose",        {},                nullptr,                      A::kSwitch, kBench,     false},
      {F::kNoWarmup,       "no_warmup",       "--no-warmup",     nullptr,  "--no-warmup",      {},                nullptr,                      A::kSwitch, kBench,     false},
      {F::kDepth,          "n_depth",         "-d",              nullptr,  "--n-depth",        {},                nullptr,                      A::kValue,  kBench,     false},
      {F::kNPrompt,        "n_prompt",        "-p",              nullptr,  "--n-prompt",       {},                nullptr,                      A::kValue,  kBench,     false},
      {F::kNGen,           "n_gen",           "-n",              nullptr,  "--n-gen",          {},                nullptr,                      A::kValue,  kBench,     false},
      {F::kPromptGen,      "pg",              "-pg",             nullptr,  "-pg",              {},                nullptr,                      A::kValue,  kBench,     false},
  };
  // clang-format on
  return kFlags;
}

const FlagSpec& Flag(FlagId id) {
  // The table is in enum order (checked by a unit test).
  return Flags()[static_cast<std::size_t>(id)];
}

const FlagSpec* FindFlag(std::string_view arg) {
  for (const auto& f : Flags()) {
    if (arg == f.spelling || arg == f.long_name) return &f;
    if (f.bench_spelling != nullptr && arg == f.bench_spelling) return &f;
    for (const char* a : f.aliases) {
      if (arg == a) return &f;
    }
  }
  return nullptr;
}

const FlagSpec* FindFlagByEnv(std::string_view name) {
  for (const auto& f : Flags()) {
    if (f.env != nullptr && name == f.env) return &f;
  }
  return nullptr;
}

const FlagSpec* FindFlagByKey(std::string_view key) {
  for (const auto& f : Flags()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

std::string FlagText(FlagId id, std::string_view value) {
  std::string out = Flag(id).spelling;
  if (!value.empty()) {
    out += ' ';
    out += value;
  }
  return out;
}

std::string PresetKey(const FlagSpec& flag) {
  std::string_view n = flag.long_name;
  while (!n.empty() && n.front() == '-') n.remove_prefix(1);
  return std::string(n);
}

}  // namespace moetune
