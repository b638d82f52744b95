#include "gguf/bounded_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/command_files.h"

namespace moetune {
namespace {

// Large enough that a header with a 150k-entry vocabulary (~3 MB) needs only a
// handful of syscalls; small enough to be irrelevant next to any model.
constexpr size_t kFileBufferBytes = 1 << 20;

}  // namespace

Status MemorySource::ReadAt(uint64_t offset, void* dst, size_t n) {
  if (n != 0) std::memcpy(dst, bytes_.data() + offset, n);
  return OkStatus();
}

FileSource::FileSource(int fd, uint64_t size, std::string path)
    : fd_(fd), size_(size), path_(std::move(path)) {}

FileSource::~FileSource() { ::close(fd_); }

Result<std::unique_ptr<FileSource>> FileSource::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer forever
  // (and a terminal would become the controlling one without O_NOCTTY).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) {
      return Error(ErrorKind::kNotFound, fmt::format("{}: no such file; check the path", path));
    }
    return Error(ErrorKind::kIo,
                 fmt::format("{}: cannot open: {}; check permissions", path, std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* kind = S_ISFIFO(st.st_mode)  ? "a named pipe"
                       : S_ISDIR(st.st_mode) ? "a folder"
                       : S_ISCHR(st.st_mode) ? "a character device"
                                             : "not a regular file";
    return Error(
        ErrorKind::kIo,
        fmt::format("{}: {}, not a regular file; give the path of a .gguf file", path, kind));
  }
  // Regular files never block; reads go back to blocking mode all the same.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (auto st_in = NoteInputFile(path, "the model"); !st_in.ok()) {
    ::close(fd);
    return st_in.error();
  }
  return std::unique_ptr<FileSource>(new FileSource(fd, static_cast<uint64_t>(st.st_size), path));
}

Status FileSource::Fill(uint64_t offset) {
  if (buffer_.empty()) buffer_.resize(kFileBufferBytes);
  uint64_t want64 = std::min<uint64_t>(kFileBufferBytes, size_ - offset);
  size_t want = static_cast<size_t>(want64);
  size_t got = 0;
  while (got < want) {
    ssize_t r = ::pread(fd_, buffer_.data() + got, want - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      return Error(ErrorKind::kIo,
                   fmt::format("{}: read failed at byte offset {}: {}", path_, offset + got,
                               r < 0 ? std::strerror(errno) : "file shrank while being read"));
    }
    got += static_cast<size_t>(r);
  }
  buffer_offset_ = offset;
  buffer_len_ = got;
  return OkStatus();
}

Status FileSource::ReadAt(uint64_t offset, void* dst, size_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    if (offset < buffer_offset_ || offset >= buffer_offset_ + buffer_len_) {
      MOETUNE_TRY(Fill(offset));
    }
    size_t in_buffer = static_cast<size_t>(offset - buffer_offset_);
    size_t take = std::min(n, buffer_len_ - in_buffer);
    std::memcpy(out, buffer_.data() + in_buffer, take);
    out += take;
    offset += take;
    n -= take;
  }
  return OkStatus();
}

Error BoundedReader::FormatError(uint64_t at, std::string_view field,
                                 std::string_view message) const {
  return Error(ErrorKind::kFormat,
               fmt::format("{}: byte offset {}, {}: {}", name_, at, field, message));
}

Error BoundedReader::Truncated(std::string_view field, uint64_t need) const {
  return FormatError(
      offset_, field,
      fmt::format("needs {} bytes but only {} remain of {}; the file is truncated or corrupt "
                  "(an interrupted download or copy?): re-download or re-convert it",
                  need, remaining(), size()));
}

Status BoundedReader::Read(void* dst, size_t n, const char* field) {
  if (n > remaining()) return Truncated(field, n);
  MOETUNE_TRY(source_.ReadAt(offset_, dst, n));
  offset_ += n;
  return OkStatus();
}

Status BoundedReader::Skip(uint64_t n, const char* field) {
  if (n > remaining()) return Truncated(field, n);
  offset_ += n;
  return OkStatus();
}

Result<uint64_t> BoundedReader::ReadStringLength(const char* field, uint64_t cap) {
  uint64_t at = offset_;
  MOETUNE_ASSIGN_OR_RETURN(uint64_t len, Read<uint64_t>(field));
  if (len > cap) {
    return FormatError(at, field,
                       fmt::format("string length {} exceeds the limit of {} bytes; the file "
                                   "is corrupt (or not a model llama.cpp can load)",
                                   len, cap));
  }
  if (len > remaining()) {
    return FormatError(at, field,
                       fmt::format("string length {} runs past the end of the file ({} bytes "
                                   "remain); the file is truncated or corrupt: re-download it",
                                   len, remaining()));
  }
  return len;
}

Result<std::string> BoundedReader::ReadString(const char* field, uint64_t cap) {
  MOETUNE_ASSIGN_OR_RETURN(uint64_t len, ReadStringLength(field, cap));
  std::string s(static_cast<size_t>(len), '\0');
  MOETUNE_TRY(Read(s.data(), s.size(), field));
  return s;
}

Status BoundedReader::SkipString(const char* field, uint64_t cap) {
  MOETUNE_ASSIGN_OR_RETURN(uint64_t len, ReadStringLength(field, cap));
  return Skip(len, field);
}

}  // namespace moetune
