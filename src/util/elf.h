#pragma once
/// Reading what an ELF file says about its dynamic linking (the libraries it
/// needs, where it looks for them) and the names of the symbols it defines,
/// without running it (`ldd` may execute the program it examines). Used to
/// tell which llama.cpp backends an engine build has linked in: a build with
/// `-DGGML_CUDA=ON` and no GGML_BACKEND_DL loads no backend at run time and
/// says nothing about it, but its libggml.so needs libggml-cuda.so.
///
/// The file is untrusted: ELF64 little-endian only (x86-64, arm64), every
/// offset and size is range-checked against the file, the tables read are
/// bounded, and a malformed file is an error, never a crash.
/// tests/fuzz/elf_fuzz.cc drives the parser with arbitrary bytes.
///
/// Written here rather than taken from a library: Debian's libelf (elfutils)
/// would add a dependency for about two hundred lines of table reading.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

/// Reads `size` bytes at `offset` into `out`; false when the range is not
/// inside the file.
using ElfByteReader = std::function<bool(uint64_t offset, std::size_t size, void* out)>;

/// The dynamic section's view of the world.
struct ElfDynamic {
  /// DT_NEEDED entries in order ("libllama.so.0", "libc.so.6").
  std::vector<std::string> needed;
  /// DT_RUNPATH entries (or DT_RPATH's when there is no DT_RUNPATH), split at
  /// ':' and unexpanded ("$ORIGIN", "/opt/llama/lib").
  std::vector<std::string> run_path;
};

/// Parses the dynamic section of an ELF image. A static executable has none:
/// an empty ElfDynamic. Errors: kFormat (not ELF, or malformed), kUnsupported
/// (ELF32 or big-endian).
Result<ElfDynamic> ParseElfDynamic(const ElfByteReader& read);

/// The names of the symbols defined in .symtab and .dynsym that start with
/// `prefix`, sorted and unique. A stripped file has no .symtab: only its
/// exported (.dynsym) symbols are seen.
Result<std::vector<std::string>> ParseElfSymbols(const ElfByteReader& read,
                                                 std::string_view prefix);

/// A reader over bytes in memory (tests, the fuzz target).
ElfByteReader MemoryElfReader(std::string_view bytes);

/// The same, on a file (read on demand with pread: engine libraries can be
/// hundreds of MiB). Errors name the path.
Result<ElfDynamic> ReadElfDynamic(const std::string& path);
Result<std::vector<std::string>> ReadElfSymbols(const std::string& path, std::string_view prefix);

}  // namespace moetune
