#include "watch/process_info.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <sstream>
#include <system_error>

#include "util/text.h"

namespace moetune {
namespace {

// util/text.h's ParseUint64 as an out-parameter, for the field lists below.
bool ParseU64(std::string_view s, uint64_t* out) {
  const auto v = ParseUint64(s);
  if (v) *out = *v;
  return v.has_value();
}

bool ParseHex(std::string_view s, uint64_t* out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "VmRSS:\t  109904 kB" -> bytes.
std::optional<int64_t> StatusKb(const std::string& status, std::string_view key) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() ||
        line[key.size()] != ':')
      continue;
    std::istringstream v(line.substr(key.size() + 1));
    int64_t kb = 0;
    if (v >> kb && kb >= 0 && kb < (int64_t{1} << 50)) return kb * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ProcessSample> ParseProcStat(const std::string& text) {
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcessSample s;
  uint64_t pid = 0;
  if (!ParseU64(Trim(std::string_view(text).substr(0, open)), &pid) || pid == 0 || pid > 1u << 30)
    return std::nullopt;
  s.pid = static_cast<pid_t>(pid);
  s.comm = text.substr(open + 1, close - open - 1);
  std::istringstream in(text.substr(close + 1));
  std::vector<std::string> f;  // f[0] is field 3 (state)
  std::string tok;
  while (in >> tok && f.size() < 60) f.push_back(tok);
  if (f.size() < 22) return std::nullopt;
  s.state = f[0].empty() ? '?' : f[0][0];
  uint64_t minflt = 0, majflt = 0, start = 0;
  if (!ParseU64(f[7], &minflt) || !ParseU64(f[9], &majflt) || !ParseU64(f[19], &start))
    return std::nullopt;
  s.minor_faults = static_cast<int64_t>(std::min<uint64_t>(minflt, INT64_MAX));
  s.major_faults = static_cast<int64_t>(std::min<uint64_t>(majflt, INT64_MAX));
  s.start_ticks = start;
  return s;
}

std::optional<ProcessSample> ReadProcessSample(const SysRoot& root, pid_t pid) {
  if (pid <= 0) return std::nullopt;
  const std::string base = "/proc/" + std::to_string(pid);
  auto stat = root.Read(base + "/stat");
  if (!stat) return std::nullopt;
  auto s = ParseProcStat(*stat);
  if (!s || s->pid != pid || s->state == 'Z' || s->state == 'X') return std::nullopt;
  if (auto status = root.Read(base + "/status")) {
    s->rss_bytes = StatusKb(*status, "VmRSS").value_or(0);
    s->rss_file_bytes = StatusKb(*status, "RssFile").value_or(0);
    s->rss_anon_bytes = StatusKb(*status, "RssAnon").value_or(0);
  }
  return s;
}

std::vector<std::string> ReadCmdline(const SysRoot& root, pid_t pid) {
  std::vector<std::string> argv;
  auto text = root.Read("/proc/" + std::to_string(pid) + "/cmdline");
  if (!text) return argv;
  std::size_t start = 0;
  while (start < text->size() && argv.size() < 4096) {
    auto end = text->find('\0', start);
    if (end == std::string::npos) end = text->size();
    argv.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

std::vector<std::pair<std::string, std::string>> ReadLlamaEnv(const SysRoot& root, pid_t pid) {
  std::vector<std::pair<std::string, std::string>> env;
  auto text = root.Read("/proc/" + std::to_string(pid) + "/environ");
  if (!text) return env;
  std::size_t start = 0;
  while (start < text->size()) {
    auto end = text->find('\0', start);
    if (end == std::string::npos) end = text->size();
    const std::string_view var(text->data() + start, end - start);
    if (var.rfind("LLAMA_ARG_", 0) == 0) {
      const auto eq = var.find('=');
      if (eq != std::string_view::npos)
        env.emplace_back(std::string(var.substr(0, eq)), std::string(var.substr(eq + 1)));
    }
    start = end + 1;
  }
  return env;
}

std::vector<uint64_t> ListeningInodes(const std::string& proc_net_tcp, int port) {
  std::vector<uint64_t> inodes;
  std::istringstream in(proc_net_tcp);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
    if (!(f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> inode))
      continue;
    if (st != "0A") continue;  // TCP_LISTEN
    const auto colon = local.rfind(':');
    uint64_t p = 0, ino = 0;
    if (colon == std::string::npos || !ParseHex(local.substr(colon + 1), &p)) continue;
    if (static_cast<int>(p) != port || !ParseU64(inode, &ino) || ino == 0) continue;
    inodes.push_back(ino);
  }
  return inodes;
}

std::vector<uint64_t> ListeningSocketInodes(const SysRoot& root, int port) {
  std::vector<uint64_t> inodes;
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    if (auto text = root.Read(f)) {
      auto more = ListeningInodes(*text, port);
      inodes.insert(inodes.end(), more.begin(), more.end());
    }
  }
  return inodes;
}

bool HoldsSocket(const SysRoot& root, pid_t pid, const std::vector<uint64_t>& inodes) {
  std::vector<std::string> wanted;
  wanted.reserve(inodes.size());
  for (uint64_t i : inodes) wanted.push_back("socket:[" + std::to_string(i) + "]");
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root.Resolve(fd_dir), ec)) {
    std::error_code lec;
    const auto target = std::filesystem::read_symlink(e.path(), lec);
    if (lec) continue;
    if (std::find(wanted.begin(), wanted.end(), target.string()) != wanted.end()) return true;
  }
  return false;
}

std::optional<pid_t> FindListeningPid(const SysRoot& root, int port) {
  const std::vector<uint64_t> inodes = ListeningSocketInodes(root, port);
  if (inodes.empty()) return std::nullopt;
  std::vector<pid_t> pids;
  for (const auto& name : root.List("/proc")) {
    uint64_t pid = 0;
    if (!ParseU64(name, &pid) || pid == 0 || pid > 1u << 30) continue;
    if (HoldsSocket(root, static_cast<pid_t>(pid), inodes)) pids.push_back(static_cast<pid_t>(pid));
  }
  if (pids.empty()) return std::nullopt;
  return *std::min_element(pids.begin(), pids.end());
}

}  // namespace moetune
