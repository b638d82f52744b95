#include "gguf/ggml_type.h"

#include <array>
#include <cctype>

#include "util/checked.h"

namespace moetune {
namespace {

// Block sizes from ggml/src/ggml.c (type_traits[].blck_size / .type_size).
constexpr std::array<GgmlTypeInfo, 35> kTypes = {{
    {0, "f32", 1, 4},
    {1, "f16", 1, 2},
    {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},
    {6, "q5_0", 32, 22},
    {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},
    {9, "q8_1", 32, 36},
    {10, "q2_K", 256, 84},
    {11, "q3_K", 256, 110},
    {12, "q4_K", 256, 144},
    {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},
    {15, "q8_K", 256, 292},
    {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},
    {18, "iq3_xxs", 256, 98},
    {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},
    {21, "iq3_s", 256, 110},
    {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136},
    {24, "i8", 1, 1},
    {25, "i16", 1, 2},
    {26, "i32", 1, 4},
    {27, "i64", 1, 8},
    {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},
    {30, "bf16", 1, 2},
    {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},
    {39, "mxfp4", 32, 17},
    {0, "", 0, 0},
    {0, "", 0, 0},
    {0, "", 0, 0},
}};

bool EqualNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

std::optional<GgmlTypeInfo> GgmlTypeById(uint32_t id) {
  for (const auto& t : kTypes) {
    if (t.block_size != 0 && t.id == id) return t;
  }
  return std::nullopt;
}

std::string GgmlTypeName(uint32_t id) {
  auto t = GgmlTypeById(id);
  return t ? std::string(t->name) : "type" + std::to_string(id);
}

std::optional<GgmlTypeInfo> GgmlTypeByName(std::string_view name) {
  for (const auto& t : kTypes) {
    if (t.block_size != 0 && EqualNoCase(t.name, name)) return t;
  }
  return std::nullopt;
}

std::optional<uint64_t> GgmlRowBytes(const GgmlTypeInfo& t, uint64_t n) {
  if (t.block_size == 0 || n % t.block_size != 0) return std::nullopt;
  return CheckedMul(n / t.block_size, t.type_size);
}

}  // namespace moetune
