#pragma once
/// Units as types, and the one place where bytes, times and rates are formatted
/// and parsed (docs/architecture.md, Conventions: units are types). Binary units (KiB, MiB, GiB)
/// are printed everywhere; parsing accepts both binary and "G"/"GB" (taken as binary too, since
/// that is what llama.cpp and nvidia-smi mean by them).

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace moetune {

/// A byte count. Signed so that differences (prediction minus measurement,
/// free minus needed) are natural; 63 bits cover every realistic model.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t v) : v_(v) {}
  static constexpr Bytes KiB(double x) { return Bytes(static_cast<int64_t>(x * 1024.0)); }
  static constexpr Bytes MiB(double x) { return Bytes(static_cast<int64_t>(x * 1048576.0)); }
  static constexpr Bytes GiB(double x) { return Bytes(static_cast<int64_t>(x * 1073741824.0)); }

  constexpr int64_t count() const { return v_; }
  constexpr double mib() const { return static_cast<double>(v_) / 1048576.0; }
  constexpr double gib() const { return static_cast<double>(v_) / 1073741824.0; }

  constexpr Bytes operator+(Bytes o) const { return Bytes(v_ + o.v_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(v_ - o.v_); }
  constexpr Bytes& operator+=(Bytes o) {
    v_ += o.v_;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    v_ -= o.v_;
    return *this;
  }
  constexpr Bytes operator*(int64_t k) const { return Bytes(v_ * k); }
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 flags the 0 of the defaulted <=>
  constexpr auto operator<=>(const Bytes&) const = default;

 private:
  int64_t v_ = 0;
};

/// "1.50 GiB", "512.0 MiB", "12.0 KiB", "17 B" (negative values keep their sign).
std::string FormatBytes(Bytes b);
/// Always in MiB with `decimals` digits, for tables that must line up.
std::string FormatMiB(Bytes b, int decimals = 1);

/// Parses "12GiB", "11500MiB", "12G", "12 GB", "1.5g", "4096" (bytes), "512K".
/// Errors name the input and the accepted forms.
Result<Bytes> ParseBytes(std::string_view text);

/// "1.23 s", "45.6 ms", "789 us".
std::string FormatSeconds(double seconds);
/// "123.4 t/s".
std::string FormatRate(double tokens_per_second);

/// Parses a context length: "32768", "32K", "32k" (K = 1024 tokens).
Result<int64_t> ParseTokenCount(std::string_view text);

}  // namespace moetune
