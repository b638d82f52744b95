#include "hw/cgroup.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "util/text.h"

namespace moetune {
namespace {

// "/a/b" -> {"/a/b", "/a", ""}: the cgroup and its ancestors, nearest first
// ("" is the mount's root). Limits of any ancestor apply to the process.
std::vector<std::string> PathAndAncestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path != "/") {
    out.push_back(path);
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) break;
    path.resize(slash);
  }
  out.push_back("");
  return out;
}

// Keeps the smaller of two optional limits.
template <typename T>
void KeepMin(std::optional<T>* acc, std::optional<T> v) {
  if (v && (!*acc || *v < **acc)) *acc = v;
}

// cgroup v2 cpu.max: "max 100000" or "<quota> <period>".
std::optional<double> ParseCpuMax(const std::string& line) {
  std::istringstream in(line);
  std::string quota;
  int64_t period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  const auto q = ParseDouble(quota);
  if (!q || *q <= 0) return std::nullopt;
  return *q / static_cast<double>(period);
}

std::optional<int64_t> ParseMemoryMax(const std::optional<std::string>& line) {
  if (!line || *line == "max" || line->empty()) return std::nullopt;
  // cgroup v1 spells "unlimited" as a huge page-aligned number near INT64_MAX.
  const auto v = ParseInt64(Trim(*line));
  if (!v || *v <= 0 || *v >= (int64_t{1} << 60)) return std::nullopt;
  return v;
}

void ReadV2(const SysRoot& root, const std::string& path, CgroupLimits* out) {
  out->version = 2;
  out->path = path.empty() ? "/" : path;
  const auto dirs = PathAndAncestors(path);
  for (const auto& d : dirs) {
    const std::string base = "/sys/fs/cgroup" + d;
    if (!out->cpuset) {
      if (auto s = root.ReadLine(base + "/cpuset.cpus.effective"); s && !s->empty()) {
        out->cpuset = ParseCpuList(*s);
      }
    }
    if (auto m = root.ReadLine(base + "/cpu.max")) KeepMin(&out->cpu_quota, ParseCpuMax(*m));
    KeepMin(&out->memory_limit, ParseMemoryMax(root.ReadLine(base + "/memory.max")));
    if (!out->memory_usage) {
      if (auto u = root.ReadInt(base + "/memory.current")) out->memory_usage = *u;
    }
  }
  if (!out->cpuset) out->notes.push_back("cgroup v2 cpuset.cpus.effective not readable");
}

void ReadV1(const SysRoot& root, const std::string& controller, const std::string& path,
            CgroupLimits* out) {
  out->version = 1;
  // Controllers are mounted separately, sometimes co-mounted ("cpu,cpuacct").
  std::vector<std::string> mounts = {"/sys/fs/cgroup/" + controller};
  if (controller == "cpu") mounts.push_back("/sys/fs/cgroup/cpu,cpuacct");
  for (const auto& mount : mounts) {
    if (!root.Exists(mount)) continue;
    for (const auto& d : PathAndAncestors(path)) {
      const std::string base = mount + d;
      if (controller == "cpuset" && !out->cpuset) {
        auto s = root.ReadLine(base + "/cpuset.effective_cpus");
        if (!s || s->empty()) s = root.ReadLine(base + "/cpuset.cpus");
        if (s && !s->empty()) out->cpuset = ParseCpuList(*s);
      } else if (controller == "cpu") {
        const auto quota = root.ReadInt(base + "/cpu.cfs_quota_us");
        const auto period = root.ReadInt(base + "/cpu.cfs_period_us");
        if (quota && period && *quota > 0 && *period > 0) {
          KeepMin(&out->cpu_quota, std::optional<double>(static_cast<double>(*quota) /
                                                         static_cast<double>(*period)));
        }
      } else if (controller == "memory") {
        KeepMin(&out->memory_limit, ParseMemoryMax(root.ReadLine(base + "/memory.limit_in_bytes")));
        if (!out->memory_usage) {
          if (auto u = root.ReadInt(base + "/memory.usage_in_bytes")) out->memory_usage = *u;
        }
      }
    }
    return;
  }
}

}  // namespace

CgroupLimits ReadCgroupLimits(const SysRoot& root) {
  CgroupLimits out;
  auto text = root.Read("/proc/self/cgroup");
  if (!text) {
    // Without /proc/self/cgroup, a v2 hierarchy may still be mounted at the root.
    if (root.Exists("/sys/fs/cgroup/cgroup.controllers")) {
      ReadV2(root, "", &out);
    } else {
      out.notes.push_back("/proc/self/cgroup not readable: cgroup limits unknown");
    }
    return out;
  }
  std::istringstream in(*text);
  std::string line;
  std::string v2_path;
  bool has_v2 = false;
  std::vector<std::pair<std::string, std::string>> v1;  // controller, path
  while (std::getline(in, line)) {
    // "hierarchy-id:controller-list:path"
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.substr(0, a) == "0" && controllers.empty()) {
      has_v2 = true;
      v2_path = path;
      continue;
    }
    std::istringstream cs(controllers);
    std::string c;
    while (std::getline(cs, c, ',')) v1.emplace_back(c, path);
  }
  // A hybrid host lists both; the v1 controllers (if any) are the ones enforced.
  bool any_v1 = false;
  for (const auto& [controller, path] : v1) {
    if (controller == "cpuset" || controller == "cpu" || controller == "memory") {
      ReadV1(root, controller, path, &out);
      any_v1 = true;
    }
  }
  if (!any_v1 && has_v2) ReadV2(root, v2_path, &out);
  if (out.version == 0) out.notes.push_back("no cgroup controllers found for this process");
  return out;
}

}  // namespace moetune
