#pragma once
/// Which ggml backends an engine build has linked in, read from its files
/// rather than from what it prints. llama.cpp builds come in two kinds:
/// - backends loaded at run time (GGML_BACKEND_DL, Debian's packages, the
///   official release archives): each start logs "load_backend: loaded CUDA
///   backend from ..." (engine_output.h parses it);
/// - backends linked in (the default of `cmake -B build -DGGML_CUDA=ON`): the
///   tools log nothing about backends. Their libggml.so needs
///   libggml-cuda.so, libggml-cpu.so, ... (shared builds), or the executable
///   defines ggml_backend_cuda_reg, ggml_backend_cpu_reg, ... itself (static
///   builds, -DBUILD_SHARED_LIBS=OFF).
/// This file finds the second kind (ggml/src/ggml-backend-reg.cpp registers
/// one backend per ggml_backend_<name>_reg function).

#include <string>
#include <string_view>
#include <vector>

namespace moetune {

/// The backends found and the evidence.
struct LinkedBackends {
  /// Registry names as the engine prints them ("CPU", "CUDA", "RPC", "Vulkan").
  std::vector<std::string> backends;
  /// The files that showed them ("libggml-cuda.so", or the executable for a
  /// static build).
  std::vector<std::string> evidence;
};

/// Backends linked into the ELF executable `tool_path`: the libggml-<name>
/// libraries in its dynamic closure (DT_NEEDED, resolved through its run path
/// and the usual folders; only libllama* and libggml* are followed), else the
/// ggml_backend_<name>_reg functions its symbol tables define. Empty for a
/// file that is not ELF (a wrapper script, like the default engine's), for a
/// dynamically loading build, and for a stripped static build.
LinkedBackends FindLinkedBackends(const std::string& tool_path);

/// "libggml-cuda.so.0" -> "CUDA", "libggml-vulkan.so" -> "Vulkan"; "" for
/// files that are not a backend (libggml.so, libggml-base.so, libllama.so).
std::string BackendOfLibrary(std::string_view file_name);

/// "ggml_backend_cuda_reg" -> "CUDA", "ggml_backend_vk_reg" -> "Vulkan"; "" for
/// any other symbol.
std::string BackendOfRegSymbol(std::string_view symbol);

/// The backend a device belongs to, from its name ("CUDA0" -> "CUDA", "RPC1"
/// -> "RPC", "Vulkan0" -> "Vulkan", "MTL0" -> "Metal"); "" when the name does
/// not end in an index.
std::string BackendOfDevice(std::string_view device_name);

}  // namespace moetune
