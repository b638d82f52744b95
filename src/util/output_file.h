#pragma once
/// Writing an output file without ever losing one.
///
/// - A regular file (or a new one) is written atomically: a temporary made with
///   mkstemp in the same folder, fsync, rename over the target. Readers see the
///   old file or the complete new one, never a partial one. An existing file
///   keeps its permission bits; a new one gets 0666 minus the umask.
/// - A symbolic link is followed: the file it points to is replaced, the link stays.
/// - A character device or FIFO (/dev/null, /dev/stdout, a named pipe with a
///   reader) is written straight through; it is never replaced.
/// - Directories, sockets and block devices are refused, and so is every path
///   that is one of the command's inputs (same device and inode), e.g.
///   `inspect M.gguf -o M.gguf`, or another output of the same command
///   (util/command_files.h: `--report r.html -o r.html`).
/// - A symbolic link to a missing file is refused (the write would land
///   wherever the link points).
/// - The temporary is removed on every error path, when the writer is destroyed
///   uncommitted, and by the signal handler (util/temp_files.h) if moetune is
///   interrupted while writing.
/// - Errors quote the operating system's reason (strerror(errno)), e.g.
///   "No space left on device".

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

struct OutputFileOptions {
  /// Files the command reads; the output may not be any of them.
  std::vector<std::string> inputs;
  /// The flag that names this output, for the command's record of its files
  /// (util/command_files.h) and for messages: "-o", "--report", "--journal".
  std::string role = "-o";
  /// An input of this name may be replaced (the machine profile that
  /// calibrate reads and updates); empty for none.
  std::string may_replace;
  /// Only a regular file (or a new one) will do: the file is read back or
  /// appended to (a journal, a server log), so a device or FIFO is refused.
  bool regular_only = false;
};

/// What a checked output path is.
struct OutputTarget {
  std::string target;    // the file that is written (a symlink's target)
  bool exists = false;   // an existing regular file
  bool special = false;  // a character device or FIFO, written through
};

/// The checks every file a command writes passes before anything is written
/// (OutputFile::Open, the journal, the server log): not a folder, socket or
/// block device, not a dangling symbolic link, not a device or FIFO when
/// `regular_only`, not an input, not another output of the command (claimed
/// in util/command_files.h under `options.role`).
Result<OutputTarget> CheckOutputTarget(const std::string& path, const OutputFileOptions& options);

class OutputFile {
 public:
  /// Checks the target and opens the temporary (or the special file).
  static Result<std::unique_ptr<OutputFile>> Open(const std::string& path,
                                                  const OutputFileOptions& options = {});
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  Status Write(std::span<const uint8_t> bytes);
  Status Write(std::string_view text);
  /// Makes the file `size` bytes long, the bytes past what was written a hole
  /// that reads as zeros (a sparse file). Only for regular files: a device or
  /// pipe cannot hold a hole. `size` must not be less than what was written.
  Status ExtendTo(uint64_t size);
  /// Flushes to disk and renames the temporary over the target (no-op rename for
  /// special files). After an error nothing is left behind.
  Status Commit();

  const std::string& path() const { return path_; }

 private:
  OutputFile() = default;
  void Abandon();

  std::string path_;    // as given, for messages
  std::string target_;  // the file that is replaced (the symlink's target)
  std::string temp_;    // empty for special files
  int fd_ = -1;
  int temp_slot_ = -1;
  bool special_ = false;
  bool committed_ = false;
};

/// Writes `text` to `path` with OutputFile.
Status WriteFileSafely(const std::string& path, std::string_view text,
                       const OutputFileOptions& options = {});

}  // namespace moetune
