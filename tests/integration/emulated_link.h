#pragma once
/// A network link of a known rate between this machine and a ggml-rpc-server,
/// emulated with the kernel's own tools, so that the real llama.cpp talks RPC
/// over it: a network namespace of its own holding one end of a veth pair,
/// the two ends addressed from a private /30 of 198.18.0.0/15 (RFC 2544's
/// range for benchmarking networks, which no real network uses), a tbf rate
/// limit on both ends (so both directions), and the engine's ggml-rpc-server
/// listening on the namespace's address.
///
/// Everything is made by the constructor and removed by the destructor, also
/// when the test fails: the server's process group is killed and reaped, the
/// veth pair and the namespace deleted. A run that could not clean up (the
/// test binary killed) leaves a namespace named after its pid; the next
/// EmulatedLink removes such namespaces, and the processes in them, once
/// that pid is gone.
///
/// Needs root (namespaces and links are CAP_SYS_ADMIN and CAP_NET_ADMIN) and
/// iproute2 (`ip`, `tc`) with the kernel's veth and sch_tbf. When something is
/// missing, ok() is false and error() says what and how to fix it: the tests
/// fail with it rather than skip (support.h's convention for what the
/// integration tests need from the machine).

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support.h"

namespace moetune::itest {

class EmulatedLink {
 public:
  /// The rate of both directions in Gbit/s; 0 leaves the veth unshaped (as
  /// fast as this machine copies). `server_threads`: ggml-rpc-server's -t.
  EmulatedLink(const std::filesystem::path& engine_dir, double rate_gbit, int server_threads = 1);
  ~EmulatedLink();
  EmulatedLink(const EmulatedLink&) = delete;
  EmulatedLink& operator=(const EmulatedLink&) = delete;

  /// True when the link is up and the server accepts connections over it.
  bool ok() const { return !endpoint_.empty(); }
  /// Why the link is not up: what failed, its output, and the fix.
  const std::string& error() const { return error_; }
  /// "198.18.A.B:50052": the server, through the link.
  const std::string& endpoint() const { return endpoint_; }
  const std::string& netns() const { return netns_; }
  /// The veth end on this machine's side (in the caller's namespace).
  const std::string& host_interface() const { return host_if_; }
  double rate_gbit() const { return rate_gbit_; }
  /// tbf's bucket per direction, bytes (0 when unshaped).
  int64_t burst_bytes() const { return burst_bytes_; }
  /// The server's pid (its process group); -1 when it is not running.
  pid_t server_pid() const { return server_ ? server_->pid() : -1; }
  /// The server's log (stdout and stderr), for failure messages.
  std::string ServerLog() const;

 private:
  bool Build(const std::filesystem::path& engine_dir, int server_threads);
  bool StartServer(const std::filesystem::path& engine_dir, int server_threads);
  /// Runs `ip` or `tc` with `args`; false (and error_ set) when it fails.
  bool Tool(const std::string& tool, const std::vector<std::string>& args);

  TempDir dir_;
  double rate_gbit_ = 0;
  int64_t burst_bytes_ = 0;
  std::string netns_, host_if_, ns_if_, host_addr_, ns_addr_;
  bool netns_made_ = false;
  std::unique_ptr<BackgroundProcess> server_;
  std::string endpoint_;
  std::string error_;
};

/// tbf's bucket for `rate_gbit` (the reasoning is at its definition).
int64_t TbfBurstBytes(double rate_gbit);

/// The stdout of `ip` or `tc` with `args` ("" when it fails or is missing).
std::string NetToolOutput(const std::string& tool, const std::vector<std::string>& args);

/// The namespaces this harness made that exist now (`ip netns list`).
std::vector<std::string> EmulatedLinkNamespaces();

/// True when the interface exists in the caller's namespace.
bool InterfaceExists(const std::string& name);

}  // namespace moetune::itest
