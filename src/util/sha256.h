#pragma once
/// SHA-256 (FIPS 180-4) and base64 (RFC 4648), for the one place moetune needs
/// them: the Content-Security-Policy of an HTML report names its inline script
/// by hash ('sha256-<base64>'), so the browser runs that script and nothing else.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace moetune {

/// The 32-byte SHA-256 digest of `data`.
std::array<uint8_t, 32> Sha256(std::string_view data);

/// Lower-case hexadecimal of a digest (64 characters).
std::string Sha256Hex(std::string_view data);

/// Standard base64 with padding.
std::string Base64(std::string_view bytes);

}  // namespace moetune
