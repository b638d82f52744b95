#include "model/context_support.h"

#include <fmt/format.h>

#include <algorithm>

#include "gguf/ggml_type.h"

namespace moetune {

namespace {

// ggml_is_quantized for the cache types llama.cpp accepts.
bool Quantized(uint32_t type) {
  return type != ggml_type::kF32 && type != ggml_type::kF16 && type != ggml_type::kBF16;
}

}  // namespace

Result<uint32_t> ParseKvCacheType(std::string_view name) {
  static constexpr std::string_view kAccepted[] = {"f32",  "f16",    "bf16", "q8_0", "q4_0",
                                                   "q4_1", "iq4_nl", "q5_0", "q5_1"};
  for (std::string_view a : kAccepted) {
    if (name == a) return GgmlTypeByName(a)->id;
  }
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("'{}' is not a KV cache type llama.cpp accepts; use one of f32, f16, "
                           "bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1",
                           name));
}

Status CheckEngineAccepts(const ModelArch& arch, const ContextParams& cp) {
  if (!cp.flash_attn && Quantized(cp.type_v))
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("--ctv {} with --fa off: a quantized V cache needs flash attention, "
                             "llama.cpp refuses it (\"quantized V cache requires flash_attn to be "
                             "enabled\"); use --fa on or --ctv f16",
                             GgmlTypeName(cp.type_v)));
  const bool mla = std::any_of(arch.layers.begin(), arch.layers.end(), [](const LayerInfo& l) {
    return l.attention == AttentionKind::kMla;
  });
  if (mla && cp.type_k != cp.type_v)
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("--ctk {} with --ctv {} on an MLA model ({}): llama.cpp refuses it "
                             "(\"model does not support different K and V cache types\": V is a "
                             "view of the K cache); give both the same type",
                             GgmlTypeName(cp.type_k), GgmlTypeName(cp.type_v), arch.hp.arch));
  return OkStatus();
}

}  // namespace moetune
