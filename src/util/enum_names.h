#pragma once
/// Enums that are written to files by a stable name (JSON, journals) and read
/// back from it: one name function per enum, and this one lookup for the way
/// back, so that a name is data and never prose to be matched.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace moetune {

/// The value of `all` whose `name_of` is `name`, or nullopt.
template <typename E, std::size_t N>
std::optional<E> EnumFromName(std::string_view name, const std::array<E, N>& all,
                              const char* (*name_of)(E)) {
  for (E e : all) {
    if (name == name_of(e)) return e;
  }
  return std::nullopt;
}

}  // namespace moetune
