#include "util/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>

#include "util/command_files.h"
#include "util/temp_files.h"

namespace moetune {
namespace {

Error IoError(const std::string& what, int err) {
  return Error(ErrorKind::kIo, fmt::format("{}: {}", what, std::strerror(err)));
}

std::string Folder(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// True when `path` names the same file as one of `inputs` (following links).
bool IsAnInput(const struct stat& st, const std::vector<std::string>& inputs, std::string* which) {
  for (const auto& in : inputs) {
    struct stat si {};
    if (::stat(in.c_str(), &si) == 0 && si.st_dev == st.st_dev && si.st_ino == st.st_ino) {
      *which = in;
      return true;
    }
  }
  return false;
}

}  // namespace

Result<OutputTarget> CheckOutputTarget(const std::string& path, const OutputFileOptions& options) {
  if (path.empty()) return Error(ErrorKind::kInvalidArgument, "empty output path");
  if (path.back() == '/') {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} '{}' names a folder; give a file name, e.g. {}report.json",
                             options.role, path, path));
  }
  OutputTarget t;
  t.target = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {  // follows symlinks
    std::string input;
    if (IsAnInput(st, options.inputs, &input)) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("output '{}' is the input '{}'; writing it would destroy the input: "
                               "choose another output file",
                               path, input));
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      if (options.regular_only) {
        return Error(
            ErrorKind::kInvalidArgument,
            fmt::format("{} '{}' is {}; it must be a regular file (moetune reads it "
                        "back): give a file path",
                        options.role, path, S_ISFIFO(st.st_mode) ? "a named pipe" : "a device"));
      }
      t.special = true;
    } else if (!S_ISREG(st.st_mode)) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("output '{}' is {}; give a regular file", path, KindOf(st.st_mode)));
    } else {
      t.exists = true;
      // Replace the file a link points to, not the link.
      char resolved[PATH_MAX];
      if (::realpath(path.c_str(), resolved) != nullptr) t.target = resolved;
    }
  } else if (errno != ENOENT) {
    return IoError(fmt::format("cannot use output '{}'", path), errno);
  } else {
    struct stat lst {};
    if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("output '{}' is a symbolic link to a missing file; remove the link "
                               "or point it at an existing file",
                               path));
    }
  }
  // Devices are shared by nature (/dev/null, /dev/stdout): not claimed.
  if (!t.special) MOETUNE_TRY(ClaimOutputFile(path, options.role, options.may_replace));
  return t;
}

Result<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path,
                                                     const OutputFileOptions& options) {
  MOETUNE_ASSIGN_OR_RETURN(OutputTarget checked, CheckOutputTarget(path, options));
  std::unique_ptr<OutputFile> f(new OutputFile());
  f->path_ = path;
  f->target_ = checked.target;
  if (checked.special) {
    // Written through, never replaced. A FIFO without a reader would block
    // forever: O_NONBLOCK makes that an error (ENXIO) instead.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      if (errno == ENXIO) {
        return Error(ErrorKind::kIo,
                     fmt::format("cannot write '{}': it is a named pipe with no reader; start "
                                 "the reader first",
                                 path));
      }
      return IoError(fmt::format("cannot open '{}' for writing", path), errno);
    }
    // Back to blocking writes once a reader is known to be there.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    f->fd_ = fd;
    f->special_ = true;
    return f;
  }

  std::string tmpl = f->target_ + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    return IoError(fmt::format("cannot create a file in '{}' (for '{}'); check the folder exists "
                               "and is writable",
                               Folder(f->target_), path),
                   errno);
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  f->fd_ = fd;
  f->temp_ = tmpl;
  f->temp_slot_ = RegisterTempFile(tmpl);
  // mkstemp makes 0600; keep an existing file's bits, else 0666 minus the umask.
  mode_t mode = 0666;
  struct stat st {};
  if (::stat(f->target_.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  ::fchmod(fd, mode);
  return f;
}

OutputFile::~OutputFile() {
  if (!committed_) Abandon();
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::Abandon() {
  if (!temp_.empty()) {
    ::unlink(temp_.c_str());
    UnregisterTempFile(temp_slot_);
    temp_slot_ = -1;
    temp_.clear();
  }
}

Status OutputFile::Write(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      Abandon();
      return IoError(fmt::format("cannot write '{}'", path_), err);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return OkStatus();
}

Status OutputFile::Write(std::string_view text) {
  return Write(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Status OutputFile::ExtendTo(uint64_t size) {
  if (special_) {
    Abandon();
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' is not a regular file, so it cannot hold a sparse file's hole; "
                             "write to a file",
                             path_));
  }
  if (size > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    Abandon();
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}': {} bytes is more than a file can hold", path_, size));
  }
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    Abandon();
    return IoError(fmt::format("cannot extend '{}'", path_), err);
  }
  return OkStatus();
}

Status OutputFile::Commit() {
  if (committed_) return OkStatus();
  if (special_) {
    committed_ = true;
    return OkStatus();
  }
  if (temp_.empty()) return Error(ErrorKind::kIo, fmt::format("'{}' was not written", path_));
  if (::fsync(fd_) != 0) {
    const int err = errno;
    Abandon();
    return IoError(fmt::format("cannot write '{}'", path_), err);
  }
  if (::close(fd_) != 0) {
    const int err = errno;
    fd_ = -1;
    Abandon();
    return IoError(fmt::format("cannot write '{}'", path_), err);
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    Abandon();
    return IoError(fmt::format("cannot put '{}' in place", path_), err);
  }
  UnregisterTempFile(temp_slot_);
  temp_slot_ = -1;
  temp_.clear();
  committed_ = true;
  return OkStatus();
}

Status WriteFileSafely(const std::string& path, std::string_view text,
                       const OutputFileOptions& options) {
  MOETUNE_ASSIGN_OR_RETURN(auto f, OutputFile::Open(path, options));
  MOETUNE_TRY(f->Write(text));
  return f->Commit();
}

}  // namespace moetune
