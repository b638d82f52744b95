#include "util/command_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

namespace moetune {
namespace {

struct FileEntry {
  std::string path;       // as given, for messages
  std::string canonical;  // absolute, links resolved as far as they exist
  std::optional<std::pair<dev_t, ino_t>> id;
  std::string what;  // the input's name or the output's role
  bool output = false;
};

struct Record {
  std::mutex mu;
  bool active = false;
  std::vector<FileEntry> files;
};

Record& TheRecord() {
  static Record r;
  return r;
}

std::string Canonical(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p(path);
  auto full = std::filesystem::weakly_canonical(p, ec);
  if (ec) full = std::filesystem::absolute(p, ec).lexically_normal();
  return full.string();
}

FileEntry Describe(const std::string& path, std::string_view what, bool output) {
  FileEntry e;
  e.path = path;
  e.canonical = Canonical(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) e.id = std::make_pair(st.st_dev, st.st_ino);
  e.what = std::string(what);
  e.output = output;
  return e;
}

bool Same(const FileEntry& a, const FileEntry& b) {
  if (a.id && b.id) return *a.id == *b.id;
  return a.canonical == b.canonical;
}

}  // namespace

CommandFilesScope::CommandFilesScope() {
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.active) std::abort();  // one command per process
  r.active = true;
  r.files.clear();
}

CommandFilesScope::~CommandFilesScope() {
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mu);
  r.active = false;
  r.files.clear();
}

Status NoteInputFile(const std::string& path, std::string_view what) {
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.active || path.empty() || path == "-") return OkStatus();
  FileEntry e = Describe(path, what, /*output=*/false);
  const FileEntry* output = nullptr;
  bool known = false;
  for (const FileEntry& f : r.files) {
    if (!Same(f, e)) continue;
    if (f.output && output == nullptr) output = &f;
    if (!f.output) known = true;  // read twice: fine
  }
  if (output == nullptr) {
    if (!known) r.files.push_back(std::move(e));
    return OkStatus();
  }
  Error error(ErrorKind::kInvalidArgument,
              fmt::format("output {} '{}' is the input '{}' ({}) of this command; writing it "
                          "would destroy the input: choose another file for {}",
                          output->what, output->path, path, what, output->what));
  // Recorded all the same: a caller that goes on without this input must
  // still find its output refused when it comes to write it.
  if (!known) r.files.push_back(std::move(e));
  return error;
}

Status ClaimOutputFile(const std::string& path, std::string_view role,
                       std::string_view may_replace) {
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.active || path.empty() || path == "-") return OkStatus();
  // Devices and FIFOs (/dev/null, /dev/stdout) are written through by any
  // number of outputs: not claimed.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
    return OkStatus();
  FileEntry e = Describe(path, role, /*output=*/true);
  bool known = false;
  for (const FileEntry& f : r.files) {
    if (!Same(f, e)) continue;
    if (!f.output) {
      if (!may_replace.empty() && f.what == may_replace) continue;
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("output {} '{}' is the input '{}' ({}) of this command; writing "
                               "it would destroy the input: choose another file for {}",
                               role, path, f.path, f.what, role));
    }
    if (f.what != role) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{} '{}' is also this command's {} output '{}': one would "
                               "overwrite the other; give each its own file",
                               role, path, f.what, f.path));
    }
    known = true;
  }
  if (!known) r.files.push_back(std::move(e));
  return OkStatus();
}

void ReleaseOutputFile(const std::string& path) {
  Record& r = TheRecord();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.active || path.empty()) return;
  const FileEntry e = Describe(path, "", /*output=*/true);
  std::erase_if(r.files, [&](const FileEntry& f) { return f.output && Same(f, e); });
}

}  // namespace moetune
