#pragma once
/// RPC hosts: the ggml-rpc-servers whose devices llama.cpp's tools use with
/// `--rpc HOST:PORT[,...]`. One check before a run (connect within a stated
/// timeout, read the server's hello answer with its protocol version) and one
/// reading after a failed run (which host it was), so that bench, tune,
/// calibrate, plan --check and serve say the same thing about a host that is
/// unreachable, answers garbage, is silent or died: the host by name, what it
/// did, and what to do.
///
/// llama.cpp's client gives no such help: it aborts with "Failed to connect to
/// HOST:PORT" when nothing listens, and with "Remote RPC server crashed or
/// returned malformed response" (no host named) when a server answers garbage or
/// dies mid-run; a server that stops answering leaves it waiting for minutes
/// (measured with llama.cpp 0.7.0, Debian build 11669; ggml/src/ggml-rpc/ggml-rpc.cpp).

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/failure.h"
#include "util/result.h"

namespace moetune {

/// How long one host has to accept the connection and answer the hello.
inline constexpr std::chrono::milliseconds kRpcCheckTimeout{5000};

/// HOST:PORT as --rpc takes it ("10.0.0.2:50052", "[fe80::1]:50052").
struct RpcEndpoint {
  std::string host;  // without brackets
  int port = 0;
};

/// Parses one --rpc entry; kInvalidArgument names the entry and the form.
Result<RpcEndpoint> ParseRpcEndpoint(std::string_view text);

/// Parses --rpc's value (HOST:PORT[,HOST:PORT...]; empty entries are skipped)
/// into its entries, each checked by ParseRpcEndpoint.
Result<std::vector<std::string>> ParseRpcList(std::string_view text);

enum class RpcHostProblem {
  kNone,
  kBadEndpoint,   // not HOST:PORT
  kUnresolved,    // the name does not resolve
  kRefused,       // the host answered: nothing listens on that port
  kNoConnection,  // no answer to the connection within the timeout (host off, packets dropped)
  kUnreachable,   // no route, network unreachable, ...
  kClosed,        // accepted the connection, then closed it at the hello
  kSilent,        // accepted the connection, no answer to the hello within the timeout
  kGarbage,       // answered something that is not a ggml-rpc-server's hello
};

/// Stable snake_case name ("refused", "garbage", ...).
const char* RpcHostProblemName(RpcHostProblem problem);

/// What one check of one host found.
struct RpcHostCheck {
  std::string endpoint;  // as given
  RpcHostProblem problem = RpcHostProblem::kNone;
  std::string detail;  // the system's words, or the first bytes of a garbage answer
  /// The server's RPC protocol version from its hello answer (kNone only).
  int major = -1;
  int minor = -1;
  int patch = -1;
  double timeout_seconds = 0;  // the timeout the check ran with
  bool ok() const { return problem == RpcHostProblem::kNone; }
};

/// Connects to `endpoint` and reads the hello answer, all within `timeout`.
RpcHostCheck CheckRpcHost(const std::string& endpoint,
                          std::chrono::milliseconds timeout = kRpcCheckTimeout);

/// "RPC host 10.0.0.2:50052: connection refused (nothing listens on port
/// 50052); start `ggml-rpc-server -H 10.0.0.2 -p 50052` there": the host, what
/// it did and the fix. "" for a host that answered.
std::string DescribeRpcHostProblem(const RpcHostCheck& check);

/// The check of the first host (in order) that fails; nullopt when all answer.
std::optional<RpcHostCheck> FirstFailingRpcHost(
    const std::vector<std::string>& endpoints,
    std::chrono::milliseconds timeout = kRpcCheckTimeout);

/// Checks every host (in order) before a run: an error (kIo; kInvalidArgument
/// for a malformed entry) naming the first that fails, with the fix.
Status CheckRpcHosts(const std::vector<std::string>& endpoints,
                     std::chrono::milliseconds timeout = kRpcCheckTimeout);

/// After a run with `endpoints` failed: when the failure can come from an RPC
/// host (the engine's RPC error, a crash, a timeout, an exit without a result),
/// the hosts are checked again and the first that fails is named: the failure
/// becomes kRpcHost with `rpc_host` and the host's problem before the engine's
/// words. An RPC error of the engine with every host answering names the host
/// when the run had one. Out-of-memory, invalid-argument, model-load and
/// missing-engine failures are left as they are.
void AttributeRpcFailure(const std::vector<std::string>& endpoints, EngineFailure* failure,
                         std::chrono::milliseconds timeout = kRpcCheckTimeout);

/// The command to run on the host of `endpoint`: {"ggml-rpc-server", "-H",
/// HOST, "-p", PORT} (the flags of llama.cpp's tools/rpc/rpc-server.cpp; it
/// binds to HOST, so HOST must be an address of that machine).
Result<std::vector<std::string>> RpcServerArgv(std::string_view endpoint);

}  // namespace moetune
