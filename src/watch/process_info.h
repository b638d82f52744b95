#pragma once
/// What /proc says about a local llama-server process: memory (RSS, the part
/// of it that is file pages such as a memory-mapped model), major page faults
/// (pages read back from disk: with CPU-side experts larger than the free RAM
/// the page cache thrashes), its command line and LLAMA_ARG_* environment, and
/// which process listens on a TCP port (/proc/net/tcp plus the socket inodes
/// of /proc/PID/fd). Everything reads under a SysRoot so tests use fixtures.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw/sysfs.h"

namespace moetune {

struct ProcessSample {
  pid_t pid = 0;
  std::string comm;
  char state = '?';
  /// Start time in clock ticks after boot: with the pid, identifies the process
  /// (a restarted server has a new one).
  uint64_t start_ticks = 0;
  int64_t major_faults = 0;
  int64_t minor_faults = 0;
  int64_t rss_bytes = 0;       // VmRSS
  int64_t rss_file_bytes = 0;  // RssFile: mapped file pages (the model, when mmapped)
  int64_t rss_anon_bytes = 0;  // RssAnon
};

/// /proc/PID/stat and /proc/PID/status; nullopt when the process is gone or
/// unreadable (or a zombie).
std::optional<ProcessSample> ReadProcessSample(const SysRoot& root, pid_t pid);

/// Parses the text of /proc/PID/stat (the command name may hold spaces and ')').
std::optional<ProcessSample> ParseProcStat(const std::string& text);

/// /proc/PID/cmdline as an argument vector (empty when unreadable).
std::vector<std::string> ReadCmdline(const SysRoot& root, pid_t pid);

/// The LLAMA_ARG_* variables of /proc/PID/environ (empty when unreadable:
/// another user's process).
std::vector<std::pair<std::string, std::string>> ReadLlamaEnv(const SysRoot& root, pid_t pid);

/// The process that holds a listening TCP socket on `port` (IPv4 or IPv6, any
/// address); nullopt when none is visible (another user's process, another
/// machine, a container). When several processes share the socket, the
/// lowest pid.
std::optional<pid_t> FindListeningPid(const SysRoot& root, int port);

/// Every socket inode in LISTEN state on `port` (IPv4 and IPv6, any address).
std::vector<uint64_t> ListeningSocketInodes(const SysRoot& root, int port);

/// True when process `pid` has one of the socket `inodes` open (its fds).
bool HoldsSocket(const SysRoot& root, pid_t pid, const std::vector<uint64_t>& inodes);

/// Socket inodes in LISTEN state on `port`, from the text of /proc/net/tcp or tcp6.
std::vector<uint64_t> ListeningInodes(const std::string& proc_net_tcp, int port);

}  // namespace moetune
