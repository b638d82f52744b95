#include "engine/linked_backends.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>

#include "util/elf.h"

namespace moetune {
namespace fs = std::filesystem;
namespace {

// ggml's library names (ggml/src/<dir>, `ggml_add_backend_library(ggml-<name>)`)
// and the registry name each backend prints ("load_backend: loaded CUDA backend",
// llama-bench's `backends` field). HIP and MUSA builds compile the CUDA backend
// under their own names.
struct BackendName {
  std::string_view library;  // libggml-<library>.so
  std::string_view symbol;   // ggml_backend_<symbol>_reg
  std::string_view name;
};
constexpr BackendName kBackends[] = {
    {"cpu", "cpu", "CPU"},
    {"cuda", "cuda", "CUDA"},
    {"hip", "", "ROCm"},
    {"musa", "", "MUSA"},
    {"rpc", "rpc", "RPC"},
    {"vulkan", "vk", "Vulkan"},
    {"metal", "metal", "MTL"},
    {"sycl", "sycl", "SYCL"},
    {"blas", "blas", "BLAS"},
    {"cann", "cann", "CANN"},
    {"opencl", "opencl", "OpenCL"},
    {"webgpu", "webgpu", "WebGPU"},
    {"zdnn", "zdnn", "zDNN"},
    {"zendnn", "zendnn", "ZenDNN"},
    {"openvino", "openvino", "OpenVINO"},
    {"hexagon", "hexagon", "HTP"},
    {"virtgpu", "virtgpu", "VirtGPU"},
};

// Device name prefixes (ggml_backend_dev_name) -> backend.
constexpr std::pair<std::string_view, std::string_view> kDevicePrefixes[] = {
    {"CUDA", "CUDA"},     {"ROCm", "ROCm"},     {"HIP", "ROCm"},  {"MUSA", "MUSA"},
    {"Vulkan", "Vulkan"}, {"RPC", "RPC"},       {"MTL", "MTL"},   {"SYCL", "SYCL"},
    {"CANN", "CANN"},     {"OpenCL", "OpenCL"}, {"BLAS", "BLAS"},
};

// Only llama.cpp's own libraries are followed: the closure of a tool is
// libllama -> libggml -> libggml-base and the linked backends.
bool IsEngineLibrary(std::string_view file) {
  return file.starts_with("libggml") || file.starts_with("libllama") || file.starts_with("libmtmd");
}

std::string ExpandOrigin(std::string dir, const fs::path& origin) {
  for (const std::string_view token : {"${ORIGIN}", "$ORIGIN"}) {
    for (std::size_t at = dir.find(token); at != std::string::npos; at = dir.find(token)) {
      dir.replace(at, token.size(), origin.string());
    }
  }
  return dir;
}

// Where the loader would find `file` needed by an object in `origin` with
// `run_path` (ld.so(8): run path, LD_LIBRARY_PATH, then the system folders;
// the tool's own folder stands in for the loader cache, as llama.cpp's build
// and release folders keep their libraries beside the tools).
std::optional<fs::path> Resolve(const std::string& file, const std::vector<std::string>& run_path,
                                const fs::path& origin, const fs::path& tool_dir) {
  std::vector<std::string> dirs;
  dirs.reserve(run_path.size() + 4);
  for (const auto& d : run_path) dirs.push_back(ExpandOrigin(d, origin));
  if (const char* env = std::getenv("LD_LIBRARY_PATH"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      if (colon != 0) dirs.emplace_back(rest.substr(0, colon));
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  dirs.push_back(tool_dir.string());
  for (const char* d : {"/usr/local/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                        "/usr/lib64", "/usr/lib", "/lib"}) {
    dirs.emplace_back(d);
  }
  for (const auto& d : dirs) {
    std::error_code ec;
    const fs::path p = fs::path(d) / file;
    if (fs::is_regular_file(p, ec)) return p;
  }
  return std::nullopt;
}

void AddUnique(std::vector<std::string>* v, std::string s) {
  if (std::find(v->begin(), v->end(), s) == v->end()) v->push_back(std::move(s));
}

}  // namespace

std::string BackendOfLibrary(std::string_view file_name) {
  constexpr std::string_view kPrefix = "libggml-";
  if (!file_name.starts_with(kPrefix)) return "";
  std::string_view rest = file_name.substr(kPrefix.size());
  const std::size_t end = rest.find_first_of("-.");
  if (end == std::string_view::npos) return "";
  // "cpu-haswell" (a CPU variant of a dynamic build) is the CPU backend too.
  const std::string_view stem = rest.substr(0, end);
  if (!rest.substr(end).starts_with(".so") && !rest.substr(end).starts_with("-")) return "";
  for (const auto& b : kBackends) {
    if (b.library == stem) return std::string(b.name);
  }
  return "";
}

std::string BackendOfRegSymbol(std::string_view symbol) {
  constexpr std::string_view kPrefix = "ggml_backend_";
  constexpr std::string_view kSuffix = "_reg";
  if (!symbol.starts_with(kPrefix) || !symbol.ends_with(kSuffix) ||
      symbol.size() <= kPrefix.size() + kSuffix.size()) {
    return "";
  }
  const std::string_view stem =
      symbol.substr(kPrefix.size(), symbol.size() - kPrefix.size() - kSuffix.size());
  for (const auto& b : kBackends) {
    if (!b.symbol.empty() && b.symbol == stem) return std::string(b.name);
  }
  return "";
}

std::string BackendOfDevice(std::string_view device_name) {
  // "RPC0[127.0.0.1:50052]" in newer builds: the index ends before '['.
  const std::string_view name = device_name.substr(0, device_name.find('['));
  if (name.empty() || name.back() < '0' || name.back() > '9') return "";
  for (const auto& [prefix, backend] : kDevicePrefixes) {
    if (name.starts_with(prefix)) {
      const std::string_view index = name.substr(prefix.size());
      if (!index.empty() &&
          std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return std::string(backend);
      }
    }
  }
  return "";
}

LinkedBackends FindLinkedBackends(const std::string& tool_path) {
  LinkedBackends out;
  std::error_code ec;
  const fs::path tool = fs::canonical(tool_path, ec);
  if (ec) return out;
  const fs::path tool_dir = tool.parent_path();
  // Breadth-first over the engine's own libraries; a bounded walk (a real
  // closure has four or five files).
  constexpr std::size_t kMaxFiles = 64;
  std::deque<fs::path> queue = {tool};
  std::set<std::string> seen = {tool.string()};
  std::size_t visited = 0;
  while (!queue.empty() && visited < kMaxFiles) {
    const fs::path file = queue.front();
    queue.pop_front();
    ++visited;
    auto dyn = ReadElfDynamic(file.string());
    if (!dyn.ok()) continue;  // not ELF (a wrapper script), unreadable: no evidence
    for (const auto& needed : dyn->needed) {
      if (const std::string b = BackendOfLibrary(needed); !b.empty()) {
        AddUnique(&out.backends, b);
        AddUnique(&out.evidence, needed);
      }
      if (!IsEngineLibrary(needed)) continue;
      const auto path = Resolve(needed, dyn->run_path, file.parent_path(), tool_dir);
      if (!path) continue;
      const fs::path canonical = fs::canonical(*path, ec);
      if (!ec && seen.insert(canonical.string()).second) queue.push_back(canonical);
    }
  }
  if (!out.backends.empty()) return out;
  // A static build: the registration functions are in the executable itself.
  auto symbols = ReadElfSymbols(tool.string(), "ggml_backend_");
  if (!symbols.ok()) return out;
  for (const auto& s : *symbols) {
    if (const std::string b = BackendOfRegSymbol(s); !b.empty()) AddUnique(&out.backends, b);
  }
  if (!out.backends.empty()) out.evidence.push_back(tool.filename().string());
  return out;
}

}  // namespace moetune
