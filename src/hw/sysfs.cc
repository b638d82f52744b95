#include "hw/sysfs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/read_file.h"

namespace moetune {

SysRoot::SysRoot(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
  live_ = root_ == "/";
}

std::string SysRoot::Resolve(std::string_view path) const {
  if (live_) return std::string(path);
  std::string out = root_;
  if (path.empty() || path.front() != '/') out += '/';
  out += path;
  return out;
}

std::optional<std::string> SysRoot::Read(std::string_view path) const {
  // Kernel text files are small (/proc/cpuinfo of a 256-CPU machine is a few
  // hundred KiB); a fixture tree may hold anything, so the read is bounded and
  // only regular files are opened (a FIFO or /dev/zero must not hang doctor).
  constexpr std::size_t kMaxBytes = std::size_t{16} << 20;
  auto text = ReadRegularFile(Resolve(path), kMaxBytes);
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

std::optional<std::string> SysRoot::ReadLine(std::string_view path) const {
  auto text = Read(path);
  if (!text) return std::nullopt;
  std::string_view v(*text);
  const size_t nl = v.find('\n');
  if (nl != std::string_view::npos) v = v.substr(0, nl);
  return std::string(Trim(v));
}

std::optional<int64_t> SysRoot::ReadInt(std::string_view path) const {
  auto line = ReadLine(path);
  if (!line || line->empty()) return std::nullopt;
  int64_t v = 0;
  const char* b = line->data();
  const char* e = b + line->size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e) return std::nullopt;
  return v;
}

bool SysRoot::Exists(std::string_view path) const {
  std::error_code ec;
  return std::filesystem::exists(Resolve(path), ec);
}

std::vector<std::string> SysRoot::List(std::string_view dir) const {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::directory_iterator it(Resolve(dir), ec);
  if (ec) return out;
  for (const auto& entry : it) out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// CPU numbers beyond this are not real; the cap keeps a corrupt "0-4000000000"
// from allocating gigabytes.
constexpr int kMaxCpu = 1 << 16;

std::optional<int> ParseCpuNumber(std::string_view s) {
  s = Trim(s);
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size() || v < 0 || v >= kMaxCpu) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<std::vector<int>> ParseCpuList(std::string_view text) {
  // Ranges first, merged, then expanded once: linear in the text and at most
  // kMaxCpu CPUs however often a range repeats ("0-65535,0-65535,..." in a
  // damaged profile).
  std::vector<std::pair<int, int>> ranges;
  text = Trim(text);
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t dash = part.find('-');
    if (dash == std::string_view::npos) {
      auto v = ParseCpuNumber(part);
      if (!v) return std::nullopt;
      ranges.emplace_back(*v, *v);
    } else {
      auto lo = ParseCpuNumber(part.substr(0, dash));
      auto hi = ParseCpuNumber(part.substr(dash + 1));
      if (!lo || !hi || *hi < *lo) return std::nullopt;
      ranges.emplace_back(*lo, *hi);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<int> out;
  int next = 0;  // the lowest CPU not yet in `out`
  for (const auto& [lo, hi] : ranges) {
    for (int c = std::max(lo, next); c <= hi; ++c) out.push_back(c);
    next = std::max(next, hi + 1);
  }
  return out;
}

std::optional<std::vector<int>> ParseCpuMask(std::string_view text) {
  text = Trim(text);
  std::vector<int> out;
  int bit = 0;
  // The mask is printed most significant group first, so walk from the end.
  for (size_t i = text.size(); i-- > 0;) {
    const char c = text[i];
    if (c == ',') continue;
    int nibble = 0;
    if (c >= '0' && c <= '9')
      nibble = c - '0';
    else if (c >= 'a' && c <= 'f')
      nibble = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      nibble = c - 'A' + 10;
    else
      return std::nullopt;
    for (int b = 0; b < 4; ++b) {
      if (nibble & (1 << b)) out.push_back(bit + b);
    }
    bit += 4;
    if (bit > kMaxCpu) return std::nullopt;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> IntersectCpus(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace moetune
