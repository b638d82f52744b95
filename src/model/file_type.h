#pragma once
/// llama.cpp's model file types (enum llama_ftype, include/llama.h), stored as
/// general.file_type: the name llama-quantize gives each ("Q4_K_M", "F16",
/// "MXFP4_MOE"), which is also what model files carry in their names.

#include <cstdint>
#include <optional>
#include <string_view>

namespace moetune {

/// The name of a general.file_type value; nullopt for values llama.h does not
/// define (or no longer does: 4-6 and 33-35 were removed).
std::optional<std::string_view> LlamaFileTypeName(uint64_t file_type);

}  // namespace moetune
