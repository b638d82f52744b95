#include "engine/run_config.h"

#include <fmt/format.h>

namespace moetune {

std::string TestName(int n_prompt, int n_gen, int n_depth) {
  std::string name;
  if (n_prompt > 0 && n_gen > 0) {
    name = fmt::format("pp{}+tg{}", n_prompt, n_gen);
  } else if (n_gen > 0) {
    name = fmt::format("tg{}", n_gen);
  } else {
    name = fmt::format("pp{}", n_prompt);
  }
  if (n_depth > 0) name += fmt::format(" @ d{}", n_depth);
  return name;
}

TestKind RunConfig::kind() const {
  if (n_prompt > 0 && n_gen > 0) return TestKind::kPrefillDecode;
  return n_gen > 0 ? TestKind::kDecode : TestKind::kPrefill;
}

std::string RunConfig::ModelKey() const {
  // Mirrors llama-bench's cmd_params_instance::equal_mparams (tools/llama-bench/
  // llama-bench.cpp): model, n_gpu_layers, n_cpu_moe, tensor_buft_overrides,
  // load mode... plus -r and --no-warmup, which apply to a whole invocation.
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", model, placement.n_gpu_layers, placement.n_cpu_moe,
                     placement.override_tensor, load_mode, repetitions, warmup ? 1 : 0);
}

std::tuple<int, int, int, int, std::string, std::string, std::string> RunConfig::ContextKey() const {
  return {threads, placement.n_ubatch, placement.n_batch, n_depth, placement.type_k, placement.type_v,
          placement.flash_attn};
}

}  // namespace moetune
