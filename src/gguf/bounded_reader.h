#pragma once
/// A reader over untrusted bytes that knows how many remain and names the byte
/// offset and the field whenever a read cannot be satisfied. Used by the GGUF
/// reader; the byte source is an interface so tests and the fuzzer parse memory
/// while the tool reads files with buffered pread() (no mmap, no whole-file read).

#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

/// Random-access bytes of a known size.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Bytes available to read.
  virtual uint64_t size() const = 0;
  /// Copies n bytes at `offset` into dst. The caller guarantees offset + n <= size().
  virtual Status ReadAt(uint64_t offset, void* dst, size_t n) = 0;
};

/// Bytes held in memory by the caller (must outlive the source).
class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  Status ReadAt(uint64_t offset, void* dst, size_t n) override;

 private:
  std::span<const uint8_t> bytes_;
};

/// A file read through one buffer window with pread(); skipping is free.
class FileSource : public ByteSource {
 public:
  /// kNotFound when the file does not exist, kIo when it cannot be opened or is
  /// not a regular file.
  static Result<std::unique_ptr<FileSource>> Open(const std::string& path);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* dst, size_t n) override;

 private:
  FileSource(int fd, uint64_t size, std::string path);
  Status Fill(uint64_t offset);

  int fd_;
  uint64_t size_;
  std::string path_;
  std::vector<uint8_t> buffer_;
  uint64_t buffer_offset_ = 0;  // file offset of buffer_[0]
  size_t buffer_len_ = 0;       // valid bytes in buffer_
};

/// Sequential, bounds-checked reads from a ByteSource. Field names are static
/// strings so that the hot path (150k tokenizer strings) builds no messages;
/// callers add context ("metadata entry 5 'key'") only on failure.
class BoundedReader {
 public:
  /// `name` (a path or "<memory>") prefixes error messages.
  BoundedReader(ByteSource& source, std::string name) : source_(source), name_(std::move(name)) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return source_.size() - offset_; }
  uint64_t size() const { return source_.size(); }
  const std::string& name() const { return name_; }

  Status Read(void* dst, size_t n, const char* field);
  Status Skip(uint64_t n, const char* field);

  /// Reads a little-endian scalar (the host is asserted little-endian).
  template <typename T>
  Result<T> Read(const char* field) {
    static_assert(std::endian::native == std::endian::little, "big-endian hosts unsupported");
    T v{};
    auto s = Read(&v, sizeof(T), field);
    if (!s.ok()) return s.take_error();
    return v;
  }

  /// A GGUF string: u64 length then bytes. Lengths over `cap` or beyond the
  /// remaining bytes are refused before any allocation.
  Result<std::string> ReadString(const char* field, uint64_t cap);
  /// Validates a GGUF string like ReadString but skips its bytes.
  Status SkipString(const char* field, uint64_t cap);

  /// kFormat error "<name>: byte offset N, <field>: <message>".
  Error FormatError(uint64_t at, std::string_view field, std::string_view message) const;
  /// kFormat error for a read of `need` bytes at the current offset that does
  /// not fit, telling the user the file is truncated.
  Error Truncated(std::string_view field, uint64_t need) const;

 private:
  Result<uint64_t> ReadStringLength(const char* field, uint64_t cap);

  ByteSource& source_;
  std::string name_;
  uint64_t offset_ = 0;
};

}  // namespace moetune
