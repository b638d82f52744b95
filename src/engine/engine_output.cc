#include "engine/engine_output.h"

#include <cstdint>
#include <limits>

#include "util/text.h"

namespace moetune {
namespace {

bool IsAlpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsWordChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '-'; }

// A device name as ggml registers it: a letter, then letters, digits, '_' or
// '-' ("CUDA0", "Vulkan1", "RPC0", "ROCm0").
bool IsDeviceName(std::string_view s) {
  if (s.empty() || !IsAlpha(s.front())) return false;
  for (char c : s) {
    if (!IsWordChar(c)) return false;
  }
  return true;
}

// The number after `key` and spaces inside `text` ("build 11669" -> "11669").
std::string_view NumberAfter(std::string_view text, std::string_view key) {
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return {};
  std::string_view rest = text.substr(at + key.size());
  const std::size_t b = rest.find_first_not_of(' ');
  if (b == std::string_view::npos || b == 0) return {};
  return LeadingDigits(rest.substr(b));
}

// "(24080 MiB, 23000 MiB free)" -> total and free.
bool ParseMemoryParen(std::string_view inner, std::optional<Bytes>* total,
                      std::optional<Bytes>* free) {
  const std::size_t comma = inner.find(',');
  if (comma == std::string_view::npos) return false;
  std::string_view a = Trim(inner.substr(0, comma));
  std::string_view b = Trim(inner.substr(comma + 1));
  constexpr std::string_view kMiB = "MiB";
  constexpr std::string_view kMiBFree = "MiB free";
  if (!a.ends_with(kMiB) || !b.ends_with(kMiBFree)) return false;
  *total = ParseMiB(Trim(a.substr(0, a.size() - kMiB.size())));
  *free = ParseMiB(Trim(b.substr(0, b.size() - kMiBFree.size())));
  return total->has_value() && free->has_value();
}

}  // namespace

std::optional<Bytes> ParseMiB(std::string_view text) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  constexpr int64_t kMaxMiB = std::numeric_limits<int64_t>::max() / kMiB;
  if (AllDigits(text)) {
    const auto v = ParseIntInRange(text, 0, kMaxMiB);
    if (!v) return std::nullopt;
    return Bytes(*v * kMiB);
  }
  // Otherwise only "<digits>.<digits>" (no sign, no exponent).
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos || !AllDigits(text.substr(0, dot)) ||
      !AllDigits(text.substr(dot + 1))) {
    return std::nullopt;
  }
  const auto d = ParseDouble(text);
  if (!d || *d >= static_cast<double>(kMaxMiB)) return std::nullopt;
  return Bytes(static_cast<int64_t>(*d * static_cast<double>(kMiB)));
}

void ParseVersionOutput(std::string_view text, EngineInfo* info) {
  constexpr std::string_view kVersion = "version:";
  constexpr std::string_view kBuiltWith = "built with ";
  for (const std::string_view raw : SplitLines(text)) {
    const std::string_view line = Trim(raw);
    if (line.starts_with(kBuiltWith)) {
      info->built_with = std::string(line.substr(kBuiltWith.size()));
      continue;
    }
    if (!line.starts_with(kVersion)) continue;
    // "version: <first> (<paren>)": the rest after the first word must be one
    // parenthesised group.
    std::string_view rest = line.substr(kVersion.size());
    const std::string_view first = NextWord(&rest);
    rest = Trim(rest);
    if (first.empty() || rest.size() < 2 || rest.front() != '(' || rest.back() != ')') continue;
    const std::string_view paren = rest.substr(1, rest.size() - 2);
    info->version_line = std::string(line);
    const std::string_view build = NumberAfter(paren, "build");
    if (!build.empty()) {
      // Debian: "0.7.0 (build 11669, commit Debian)".
      info->version = std::string(first);
      info->build_number = ParseInt64(build).value_or(-1);
      constexpr std::string_view kCommit = "commit ";
      if (const std::size_t c = paren.find(kCommit); c != std::string_view::npos) {
        std::string_view commit = Trim(paren.substr(c + kCommit.size()));
        const std::size_t end = commit.find_first_of(", )");
        info->commit = std::string(commit.substr(0, end));
      }
    } else if (AllDigits(first)) {
      // Upstream: "version: <build number> (<commit>)".
      info->build_number = ParseInt64(first).value_or(-1);
      info->commit = std::string(Trim(paren));
    } else {
      info->version = std::string(first);
      info->commit = std::string(Trim(paren));
    }
  }
}

std::vector<EngineDevice> ParseListDevices(std::string_view text) {
  std::vector<EngineDevice> out;
  bool in_list = false;
  for (const std::string_view line : SplitLines(text)) {
    if (line.find("Available devices") != std::string_view::npos) {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    if (line.empty()) continue;
    if (line.front() != ' ' && line.front() != '\t') {
      in_list = false;  // the indented block ended (a log line follows)
      continue;
    }
    const std::string_view t = Trim(line);
    const std::size_t colon = t.find(':');
    if (colon == std::string_view::npos) continue;  // "(none)"
    EngineDevice d;
    const std::string_view name = t.substr(0, colon);
    if (!IsDeviceName(name)) continue;
    d.name = std::string(name);
    std::string_view desc = Trim(t.substr(colon + 1));
    // "<description> (<total> MiB, <free> MiB free)": the memory is the last
    // parenthesised group; descriptions may hold parentheses themselves.
    const std::size_t open = desc.rfind('(');
    if (open != std::string_view::npos && desc.back() == ')' &&
        ParseMemoryParen(desc.substr(open + 1, desc.size() - open - 2), &d.total, &d.free)) {
      d.description = std::string(Trim(desc.substr(0, open)));
    } else {
      // A bare "Name0: description" line names a device without memory figures
      // only when the name ends in its index, as ggml's device names do.
      if (!IsDigit(name.back())) continue;
      d.total.reset();
      d.free.reset();
      d.description = std::string(desc);
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::set<std::string> ParseHelpFlags(std::string_view text) {
  std::set<std::string> flags;
  for (const std::string_view raw : SplitLines(text)) {
    std::string_view rest = Trim(raw);
    if (rest.size() < 2 || rest.front() != '-') continue;
    // "-ncmoe, --n-cpu-moe <n>   (default: 0)": flags until the first word
    // that is not one.
    for (std::string_view w = NextWord(&rest); !w.empty(); w = NextWord(&rest)) {
      if (w.back() == ',') w.remove_suffix(1);
      if (w.size() < 2 || w[0] != '-' || !(IsAlpha(w[1]) || w[1] == '-')) break;
      flags.emplace(w);
    }
  }
  return flags;
}

std::vector<std::string> ParseLoadedBackends(std::string_view text) {
  constexpr std::string_view kLoaded = "load_backend: loaded ";
  std::vector<std::string> out;
  for (const std::string_view line : SplitLines(text)) {
    const std::size_t at = line.find(kLoaded);
    if (at == std::string_view::npos) continue;
    std::string_view rest = line.substr(at + kLoaded.size());
    const std::string_view name = NextWord(&rest);
    if (name.empty() || NextWord(&rest) != "backend") continue;
    bool seen = false;
    for (const auto& b : out) seen = seen || b == name;
    if (!seen) out.emplace_back(name);
  }
  return out;
}

std::optional<BenchProgressLine> ParseBenchProgressLine(std::string_view line) {
  constexpr std::string_view kPrefix = "benchmark ";
  const std::size_t at = line.find("llama-bench: benchmark ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(line.find(kPrefix, at) + kPrefix.size());
  const std::string_view index = LeadingDigits(rest);
  rest.remove_prefix(index.size());
  if (index.empty() || rest.empty() || rest.front() != '/') return std::nullopt;
  rest.remove_prefix(1);
  const std::string_view total = LeadingDigits(rest);
  rest.remove_prefix(total.size());
  if (total.empty() || !rest.starts_with(": ")) return std::nullopt;
  const auto i = ParseInt64(index);
  const auto n = ParseInt64(total);
  if (!i || !n || *i < 1 || *i > *n) return std::nullopt;
  return BenchProgressLine{static_cast<std::size_t>(*i), static_cast<std::size_t>(*n),
                           rest.substr(2)};
}

}  // namespace moetune
