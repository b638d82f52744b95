#pragma once
/// Context settings llama.cpp refuses for a model, refused first with the
/// engine's reason (verified against the installed engine, Debian's 0.7.0
/// build 11669; src/llama-context.cpp llama_init_from_model):
///  - "quantized V cache requires flash_attn to be enabled": a V cache type
///    other than f32/f16/bf16 with flash attention off (MLA models included);
///  - "model does not support different K (..) and V (..) cache types": MLA
///    models (deepseek2) keep V as a view of the K cache, so -ctk and -ctv must
///    be equal.

#include <cstdint>
#include <string_view>

#include "model/arch.h"
#include "model/memory_map.h"
#include "util/result.h"

namespace moetune {

/// The ggml type id of a KV cache type name as llama.cpp accepts it for
/// -ctk/-ctv (common/arg.cpp kv_cache_types: f32, f16, bf16, q8_0, q4_0, q4_1,
/// iq4_nl, q5_0, q5_1; compared exactly, as kv_cache_type_from_str does).
/// kInvalidArgument naming the value and the accepted types otherwise.
Result<uint32_t> ParseKvCacheType(std::string_view name);

/// OK when llama.cpp accepts `cp` for `arch`; kInvalidArgument naming the
/// flags, the engine's reason and the fix otherwise.
Status CheckEngineAccepts(const ModelArch& arch, const ContextParams& cp);

}  // namespace moetune
