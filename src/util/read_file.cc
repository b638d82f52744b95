#include "util/read_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/unique_fd.h"

namespace moetune {
namespace {

const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int e = errno;
    return Error(e == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                 fmt::format("cannot open '{}': {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Error(ErrorKind::kIo, fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' is {}, not a regular file; give the path of a file", path,
                             FileTypeName(st.st_mode)));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Error(ErrorKind::kIo, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
    }
    if (n == 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      return Error(ErrorKind::kIo, fmt::format("'{}' is larger than {} bytes, more than such a "
                                               "file ever holds; check that it is the right file",
                                               path, max_bytes));
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

}  // namespace moetune
