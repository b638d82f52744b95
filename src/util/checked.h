#pragma once
/// Checked arithmetic for sizes and offsets read from untrusted files.

#include <cstdint>
#include <optional>

namespace moetune {

inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// Rounds x up to a multiple of align (align > 0); nullopt on overflow.
inline std::optional<uint64_t> CheckedAlignUp(uint64_t x, uint64_t align) {
  if (align == 0) return std::nullopt;
  uint64_t rem = x % align;
  if (rem == 0) return x;
  return CheckedAdd(x, align - rem);
}

}  // namespace moetune
