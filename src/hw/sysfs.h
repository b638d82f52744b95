#pragma once
/// Reading the kernel's text interfaces (/sys, /proc) under a root directory.
///
/// Every hardware probe takes a SysRoot instead of opening "/sys/..." itself, so
/// that unit tests can point it at a fixture tree (tests/fixtures/hw/<machine>)
/// and assert what doctor concludes about machines the test host is not
/// (docs/architecture.md, Conventions: side effects behind small seams).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/text.h"

namespace moetune {

/// A root directory that absolute paths such as "/proc/meminfo" are read under.
class SysRoot {
 public:
  /// `root` "/" reads the live system; any other folder is a fixture tree.
  explicit SysRoot(std::string root = "/");

  /// True when this reads the running system (so live-only probes may run).
  bool is_live() const { return live_; }
  const std::string& root() const { return root_; }

  /// The path on disk that `path` (absolute, e.g. "/proc/meminfo") maps to.
  std::string Resolve(std::string_view path) const;
  /// Whole file, or nullopt when it cannot be opened (missing, permission).
  std::optional<std::string> Read(std::string_view path) const;
  /// First line without surrounding whitespace.
  std::optional<std::string> ReadLine(std::string_view path) const;
  /// First line parsed as a decimal integer.
  std::optional<int64_t> ReadInt(std::string_view path) const;
  bool Exists(std::string_view path) const;
  /// Names of the entries of a folder, sorted; empty when it cannot be read.
  std::vector<std::string> List(std::string_view dir) const;

 private:
  std::string root_;
  bool live_;
};

/// Parses the kernel's cpu-list format ("0-3,8,10-11"; "" is the empty list).
/// Returns nullopt on malformed text. The result is sorted and unique.
std::optional<std::vector<int>> ParseCpuList(std::string_view text);
/// Parses a hex cpu mask as in thread_siblings ("00000000,00000003").
std::optional<std::vector<int>> ParseCpuMask(std::string_view text);
/// The inverse of ParseCpuList, compressing runs: {0,1,2,3,8} -> "0-3,8".
std::string FormatCpuList(const std::vector<int>& cpus);
/// Sorted intersection of two sorted lists.
std::vector<int> IntersectCpus(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace moetune
