#include "engine/failure.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <algorithm>
#include <cctype>

#include "config/flags.h"

namespace moetune {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Host buffers in llama.cpp's allocation messages ("CPU", "CPU_Mapped",
// "CPU_REPACK", "CUDA_Host" pinned memory lives in host RAM too).
bool MentionsHostBuffer(std::string_view lower) {
  return Contains(lower, "cpu") || Contains(lower, "_host") || Contains(lower, " host");
}

// The ggml-rpc-server whose buffer a line names: the RPC backend's buffer
// types are "RPC<device>[HOST:PORT]" ("failed to allocate RPC0[127.0.0.1:50321]
// buffer of size 141410304"); "" when the line names none.
std::string RpcBufferHost(std::string_view line) {
  for (auto at = line.find("RPC"); at != std::string_view::npos; at = line.find("RPC", at + 3)) {
    auto i = at + 3;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) != 0) ++i;
    if (i == at + 3 || i >= line.size() || line[i] != '[') continue;
    const auto end = line.find(']', i);
    if (end != std::string_view::npos && end > i + 1)
      return std::string(line.substr(i + 1, end - i - 1));
  }
  return "";
}

bool IsAllocationFailure(std::string_view lower) {
  return Contains(lower, "failed to allocate") || Contains(lower, "unable to allocate");
}

bool IsDeviceOom(std::string_view line, std::string_view lower) {
  if (IsAllocationFailure(lower) && !RpcBufferHost(line).empty()) return true;
  return Contains(lower, "cudamalloc failed") || Contains(line, "ErrorOutOfDeviceMemory") ||
         Contains(lower, "out of device memory") || Contains(lower, "cuda error: out of memory") ||
         Contains(lower, "hipmalloc failed") ||
         (IsAllocationFailure(lower) &&
          (Contains(lower, "cuda") || Contains(lower, "vulkan") || Contains(lower, "rocm") ||
           Contains(lower, "metal") || Contains(lower, "sycl")) &&
          !Contains(lower, "cuda_host"));
}

bool IsHostOom(std::string_view lower) {
  return Contains(lower, "bad_alloc") || Contains(lower, "cannot allocate memory") ||
         Contains(lower, "failed to mlock") || Contains(lower, "mmap failed") ||
         (IsAllocationFailure(lower) && MentionsHostBuffer(lower));
}

bool IsGenericAllocFailure(std::string_view lower) {
  return Contains(lower, "failed to allocate") || Contains(lower, "out of memory");
}

bool IsInvalidArgument(std::string_view lower) {
  return Contains(lower, "invalid parameter for argument") || Contains(lower, "unknown argument") ||
         Contains(lower, "error while handling argument") ||
         Contains(lower, "invalid range format") || Contains(lower, "invalid value") ||
         Contains(lower, "unknown buffer type") || Contains(lower, "invalid argument:") ||
         Contains(lower, "error: invalid");
}

bool IsModelLoad(std::string_view lower) {
  return Contains(lower, "failed to load model") || Contains(lower, "error loading model") ||
         Contains(lower, "gguf_init_from");
}

// The RPC backend's errors (ggml/src/ggml-rpc/ggml-rpc.cpp; its aborts print
// the source path first: "./src/ggml-rpc/ggml-rpc.cpp:650: Failed to connect to
// 127.0.0.1:50099"), not the allocation failures of an RPC device.
bool IsRpcHostLine(std::string_view line, std::string_view lower) {
  return Contains(line, "ggml-rpc.cpp") || Contains(lower, "remote rpc server") ||
         Contains(lower, "rpc handshake failed") ||
         Contains(lower, "rpc server version mismatch") ||
         Contains(lower, "rpc transport initialization failed");
}

// The HOST:PORT an RPC error names ("Failed to connect to H:P", "RPC handshake
// failed for H:P"); "" when it names none ("Remote RPC server crashed or
// returned malformed response").
std::string RpcHostIn(std::string_view line) {
  for (const std::string_view lead : {"Failed to connect to ", "RPC handshake failed for "}) {
    const auto at = line.find(lead);
    if (at == std::string_view::npos) continue;
    std::string_view rest = line.substr(at + lead.size());
    const auto end = rest.find_first_of(" \t,;");
    rest = rest.substr(0, end);
    if (!rest.empty() && rest.find(':') != std::string_view::npos) return std::string(rest);
  }
  return "";
}

// Lines a debugger prints when the engine's abort handler attaches one (the
// Debian build runs gdb for a backtrace): they never say why the engine stopped.
bool IsDebuggerLine(std::string_view line) {
  auto starts = [&](std::string_view p) { return line.substr(0, p.size()) == p; };
  if (line.size() > 1 && line[0] == '#' && line[1] >= '0' && line[1] <= '9') return true;
  if (starts("[New LWP") || starts("[New Thread") || starts("[Thread debugging") ||
      starts("[Inferior") || starts("[Detaching") || starts("Using host libthread_db") ||
      starts("To enable execution") || starts("To completely disable") ||
      starts("line to your configuration file") || starts("For more information about this") ||
      starts("info \"(gdb)") || starts("\"Auto-loading safe path\"") || starts("\tadd-auto-load") ||
      starts("\tset auto-load") || starts("0x0"))
    return true;
  return starts("warning: ") && (Contains(line, "auto-load") || Contains(line, "libthread_db") ||
                                 Contains(line, "safe-path") || Contains(line, "debug"));
}

// The engine's own reason: assertion failures and error lines rank before
// generic follow-ups ("failed to load model", "terminate called", what()).
int Rank(std::string_view line) {
  const std::string lower = Lower(line);
  if (Contains(line, "GGML_ASSERT") || Contains(lower, "fatal error")) return 0;
  if (Contains(lower, "does not support") || Contains(lower, "requires ") ||
      Contains(lower, "not supported") || Contains(lower, "wrong shape") ||
      Contains(lower, "error loading model"))
    return 1;
  if (Contains(lower, "terminate called") || Contains(line, "what():")) return 3;
  return 2;
}

std::string JoinUnique(const std::vector<std::string>& lines, std::size_t max_lines) {
  std::vector<std::string> picked;
  for (const auto& l : lines) {
    if (std::find(picked.begin(), picked.end(), l) == picked.end()) picked.push_back(l);
    if (picked.size() == max_lines) break;
  }
  return fmt::format("{}", fmt::join(picked, " | "));
}

// An RPC device that ran out of memory: its ggml-rpc-server refused the
// buffer (the server's own log says "-> failed"), as a strict GPU refuses an
// allocation. The failure names that server and what to do.
void NameRpcServerOutOfMemory(const std::vector<std::string>& device_oom, EngineFailure* f) {
  for (const auto& line : device_oom) {
    const std::string host = RpcBufferHost(line);
    if (host.empty()) continue;
    f->rpc_host = host;
    auto flag = [](FlagId id) { return Flag(id).spelling; };
    f->message = fmt::format(
        "the RPC device of ggml-rpc-server {} ran out of memory ({}): put less on it (fewer "
        "layers there with {} or {}, experts on the CPU with {} or {}, a smaller context) or let "
        "that server have more memory (free RAM on its host, a higher ulimit -v or cgroup memory "
        "limit for ggml-rpc-server)",
        host, f->message, flag(FlagId::kTensorSplit), flag(FlagId::kGpuLayers),
        flag(FlagId::kOverrideTensor), flag(FlagId::kNCpuMoe));
    return;
  }
}

// The diagnostic lines by what they say.
struct SortedDiagnostics {
  std::vector<std::string> device_oom, host_oom, generic_oom, invalid, load, rpc;
};

SortedDiagnostics SortDiagnostics(const std::vector<std::string>& diagnostics) {
  SortedDiagnostics d;
  for (const auto& line : diagnostics) {
    const std::string lower = Lower(line);
    if (IsRpcHostLine(line, lower)) d.rpc.push_back(line);
    if (IsDeviceOom(line, lower)) {
      d.device_oom.push_back(line);
    } else if (IsHostOom(lower)) {
      d.host_oom.push_back(line);
    } else if (IsGenericAllocFailure(lower)) {
      d.generic_oom.push_back(line);
    }
    if (IsInvalidArgument(lower)) d.invalid.push_back(line);
    if (IsModelLoad(lower)) d.load.push_back(line);
  }
  return d;
}

}  // namespace

const char* FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kOutOfMemoryDevice:
      return "oom_device";
    case FailureKind::kOutOfMemoryHost:
      return "oom_host";
    case FailureKind::kModelLoad:
      return "model_load";
    case FailureKind::kCrash:
      return "crash";
    case FailureKind::kTimeout:
      return "timeout";
    case FailureKind::kUnparseable:
      return "unparseable";
    case FailureKind::kEngineMissing:
      return "engine_missing";
    case FailureKind::kInvalidConfig:
      return "invalid_config";
    case FailureKind::kRpcHost:
      return "rpc_host";
    case FailureKind::kEngineError:
      return "engine_error";
  }
  return "unknown";
}

bool IsNoiseLine(std::string_view line) {
  return Contains(line, "ggml_backend_load_best: failed to enumerate") || line.empty() ||
         IsDebuggerLine(line);
}

bool IsDiagnosticLine(std::string_view line) {
  if (IsNoiseLine(line)) return false;
  const std::string lower = Lower(line);
  // A warning the CPU backend prints for every quantized model.
  if (Contains(lower, "cannot be used with preferred buffer type")) return false;
  if (Contains(lower, "does not support") || Contains(lower, "requires ") ||
      Contains(lower, "not supported") || Contains(lower, "wrong shape"))
    return true;
  if (IsRpcHostLine(line, lower)) return true;
  return Contains(lower, "error") || Contains(lower, "failed") ||
         Contains(lower, "out of memory") || Contains(line, "GGML_ASSERT") ||
         Contains(lower, "terminate called") || Contains(line, "what():") ||
         Contains(lower, "invalid") || Contains(lower, "unable to") || Contains(lower, "cannot ") ||
         Contains(lower, "bad_alloc") || Contains(lower, "segmentation fault") ||
         Contains(lower, "aborted") || Contains(lower, "unknown argument");
}

EngineFailure ClassifyFailure(const ExitStatus& status, bool timed_out, double timeout_seconds,
                              const std::vector<std::string>& diagnostics,
                              const std::deque<std::string>& tail) {
  EngineFailure f;
  f.exit = status.Describe();
  if (!status.exited) f.signal = status.signal;
  for (const auto& l : tail) {
    if (!IsNoiseLine(l)) f.stderr_tail.push_back(l);
  }
  // The engine's last words, most telling first, without debugger output.
  std::vector<std::string> words;
  for (const auto& l : diagnostics)
    if (!IsNoiseLine(l)) words.push_back(l);
  std::stable_sort(words.begin(), words.end(),
                   [](const std::string& a, const std::string& b) { return Rank(a) < Rank(b); });
  if (timed_out) {
    f.kind = FailureKind::kTimeout;
    f.message = fmt::format("no result within {:g} s; moetune stopped the engine ({})",
                            timeout_seconds, f.exit);
    return f;
  }
  auto [device_oom, host_oom, generic_oom, invalid, load, rpc] = SortDiagnostics(diagnostics);
  if (!device_oom.empty()) {
    f.kind = FailureKind::kOutOfMemoryDevice;
    f.message = JoinUnique(device_oom, 3);
    NameRpcServerOutOfMemory(device_oom, &f);
  } else if (!host_oom.empty()) {
    f.kind = FailureKind::kOutOfMemoryHost;
    f.message = JoinUnique(host_oom, 3);
  } else if (!rpc.empty()) {
    // Before the generic allocation failure: a dead RPC server makes the
    // client's allocations fail too.
    f.kind = FailureKind::kRpcHost;
    f.message = JoinUnique(rpc, 3);
    for (const auto& line : rpc)
      if (f.rpc_host.empty()) f.rpc_host = RpcHostIn(line);
  } else if (!generic_oom.empty()) {
    // "failed to allocate compute buffers" without a buffer name: on a machine
    // with a GPU that is the GPU in practice; the message says what is known.
    f.kind = FailureKind::kOutOfMemoryDevice;
    f.message = JoinUnique(generic_oom, 3);
  } else if (!invalid.empty()) {
    f.kind = FailureKind::kInvalidConfig;
    f.message = JoinUnique(invalid, 3);
  } else if (!load.empty()) {
    f.kind = FailureKind::kModelLoad;
    std::stable_sort(load.begin(), load.end(),
                     [](const std::string& a, const std::string& b) { return Rank(a) < Rank(b); });
    f.message = JoinUnique(load, 4);
  } else if (!status.exited && status.signal != 0) {
    f.kind = FailureKind::kCrash;
    std::string why = fmt::format("engine killed by {}", status.Describe());
    if (status.signal == SIGKILL)
      why += " (not sent by moetune: most likely the kernel's out-of-memory killer)";
    if (!words.empty()) why += ": " + JoinUnique(words, 3);
    f.message = why;
  } else if (status.success()) {
    f.kind = FailureKind::kUnparseable;
    f.message = "the engine exited normally but printed no result";
  } else {
    f.kind = FailureKind::kEngineError;
    if (!words.empty()) {
      f.message = JoinUnique(words, 3);
    } else if (!f.stderr_tail.empty()) {
      f.message = f.stderr_tail.back();
    } else {
      f.message = fmt::format("the engine failed ({}) without a message", f.exit);
    }
  }
  // A crash after a recognised message is still a crash; say how it ended.
  if (!status.exited && status.signal != 0 && f.kind != FailureKind::kCrash &&
      f.kind != FailureKind::kTimeout) {
    f.message += fmt::format(" ({})", f.exit);
  }
  return f;
}

}  // namespace moetune
