#pragma once
/// Text helpers for untrusted input (engine output, sysfs files, command-line
/// values): no regular expressions (std::regex recurses per character and
/// overflows the stack on long lines), no exceptions, every number
/// range-checked (std::from_chars), and linear time in the input length.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace moetune {

/// `s` without leading and trailing ASCII whitespace (space, \t, \r, \n, \v, \f).
std::string_view Trim(std::string_view s);

/// The lines of `text` without their '\n' (and without a '\r' before it); a
/// last line without '\n' counts, an empty text has no lines.
std::vector<std::string_view> SplitLines(std::string_view text);

/// The items of a `sep`-separated list, as written ("a,,b" has an empty
/// item; "" is one empty item).
std::vector<std::string> SplitList(std::string_view text, char sep);

/// Removes and returns the next whitespace-separated word of `*rest` ("" at the end).
std::string_view NextWord(std::string_view* rest);

/// The longest prefix of `s` made of ASCII digits.
std::string_view LeadingDigits(std::string_view s);

/// True when `s` is non-empty and all ASCII digits.
bool AllDigits(std::string_view s);

/// A whole string as a decimal integer ("-12", "0", "42"; no '+', no spaces,
/// no trailing text); nullopt when it is not one or does not fit.
std::optional<int64_t> ParseInt64(std::string_view s);
std::optional<uint64_t> ParseUint64(std::string_view s);
/// As ParseInt64, but nullopt outside [lo, hi].
std::optional<int64_t> ParseIntInRange(std::string_view s, int64_t lo, int64_t hi);

/// A whole string as a finite decimal number ("1.5", "-2", "3e2"); nullopt
/// for anything else, for inf/nan and for values that overflow a double.
std::optional<double> ParseDouble(std::string_view s);

/// `s` lower-cased (ASCII only).
std::string AsciiLower(std::string_view s);

/// At most `max_bytes` of `s`; longer text is cut at a character boundary
/// (never inside a UTF-8 sequence) and "..." is appended.
std::string Truncate(std::string_view s, std::size_t max_bytes);

}  // namespace moetune
