#pragma once
// Benchmark helper (header-only): writes a model's GGUF header and extends the
// file with a hole as large as its tensor data, so that header-reading code
// can be timed on a realistically huge model without writing gigabytes.

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gguf/writer.h"

namespace moetune {

/// Writes `w`'s header to /tmp/<stem>_<pid>.gguf plus a sparse data section;
/// aborts on failure (benchmarks only). Returns the path.
inline std::string WriteSparseModel(const GgufWriter& w, const std::string& stem) {
  auto header = w.HeaderBytes();
  if (!header.ok()) std::abort();
  const uint64_t align = w.alignment();
  uint64_t data = 0;
  for (const auto& t : w.tensors()) data += (t.n_bytes + align - 1) / align * align;
  std::string path = "/tmp/" + stem + "_" + std::to_string(::getpid()) + ".gguf";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 ||
      ::write(fd, header->data(), header->size()) != static_cast<ssize_t>(header->size()) ||
      ::ftruncate(fd, static_cast<off_t>(header->size() + data)) != 0) {
    std::abort();
  }
  ::close(fd);
  std::fprintf(stderr, "%s: %zu tensors, header %.1f MiB, file %.1f GiB (sparse) at %s\n",
               stem.c_str(), w.tensors().size(), static_cast<double>(header->size()) / (1 << 20),
               static_cast<double>(header->size() + data) / (1ull << 30), path.c_str());
  return path;
}

}  // namespace moetune
