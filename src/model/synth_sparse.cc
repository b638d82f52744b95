#include "model/synth_sparse.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/checked.h"

namespace moetune {

Result<SynthSummary> WriteSparseSynthModel(const SynthOptions& options, const std::string& path) {
  SynthSummary sum;
  MOETUNE_ASSIGN_OR_RETURN(GgufWriter w, BuildSynthWriter(options, &sum));
  MOETUNE_ASSIGN_OR_RETURN(std::vector<uint8_t> header, w.HeaderBytes());
  uint64_t size = header.size();
  for (const auto& t : w.tensors()) {
    auto padded = CheckedAlignUp(t.n_bytes, w.alignment());
    auto next = padded ? CheckedAdd(size, *padded) : std::nullopt;
    if (!next) return Error(ErrorKind::kInvalidArgument, "model too large for a sparse file");
    size = *next;
  }
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Error(ErrorKind::kIo, fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
  }
  size_t done = 0;
  bool ok = true;
  while (ok && done < header.size()) {
    const ssize_t n = ::write(fd, header.data() + done, header.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ok && ::ftruncate(fd, static_cast<off_t>(size)) == 0;
  const int err = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Error(ErrorKind::kIo, fmt::format("cannot write sparse model '{}': {}", path,
                                             std::strerror(ok ? errno : err)));
  }
  return sum;
}

}  // namespace moetune
