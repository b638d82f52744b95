#pragma once
/// The ggml tensor type table: id, name, elements per block, bytes per block.
/// Source: ggml/src/ggml.c type_traits (upstream ggml-org/llama.cpp), mirrored in
/// shared/docs/models.md. Unknown ids are reported, never guessed.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moetune {

struct GgmlTypeInfo {
  uint32_t id;
  std::string_view name;  // lower case as llama.cpp prints it ("q4_K", "f16")
  uint32_t block_size;    // elements per block
  uint32_t type_size;     // bytes per block
};

/// Info for a type id, or nullopt for an id this build does not know.
std::optional<GgmlTypeInfo> GgmlTypeById(uint32_t id);
/// The type's name ("q8_0"), or "type<id>" for an id this build does not know.
std::string GgmlTypeName(uint32_t id);
/// Looks a type up by name, case-insensitively ("Q4_K", "q8_0", "f16", "bf16").
std::optional<GgmlTypeInfo> GgmlTypeByName(std::string_view name);

/// Bytes of a row of `n` elements; nullopt when n is not a multiple of the block
/// size or the product overflows.
std::optional<uint64_t> GgmlRowBytes(const GgmlTypeInfo& t, uint64_t n);

namespace ggml_type {
inline constexpr uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
                          kQ8_1 = 9, kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14,
                          kQ8_K = 15, kIQ4_NL = 20, kIQ4_XS = 23, kBF16 = 30, kMXFP4 = 39;
}  // namespace ggml_type

}  // namespace moetune
