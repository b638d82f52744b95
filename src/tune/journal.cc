#include "tune/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "engine/result_json.h"
#include "util/json_parse.h"
#include "util/output_file.h"
#include "util/read_file.h"
#include "util/utf8.h"

namespace moetune {
namespace {

using nlohmann::json;

constexpr int64_t kMaxJournalBytes = int64_t{256} << 20;
constexpr int kJournalVersion = 1;

std::string UtcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Error Io(const std::string& what, const std::string& path, int err) {
  return Error(ErrorKind::kIo, fmt::format("{} '{}': {}", what, path, std::strerror(err)));
}

// "process 1234 (moetune tune m.gguf ...)" for the holder of a lock.
std::string DescribeProcess(pid_t pid) {
  auto cmdline = ReadRegularFile(fmt::format("/proc/{}/cmdline", pid), 4096);
  std::string text;
  if (cmdline.ok()) {
    for (char c : *cmdline) text += c == '\0' ? ' ' : c;
    while (!text.empty() && text.back() == ' ') text.pop_back();
  }
  if (text.size() > 120) text = text.substr(0, 117) + "...";
  return text.empty() ? fmt::format("process {}", pid)
                      : fmt::format("process {} ({})", pid, ForTerminalField(text));
}

// Takes the journal's lock (a POSIX record lock on the whole file: a write
// lock to append, a read lock to only read). A second tune on the same journal
// would interleave or tear its records; it is told who holds the lock instead.
Status Lock(int fd, bool write, const std::string& path) {
  struct flock fl {};
  fl.l_type = write ? F_WRLCK : F_RDLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &fl) == 0) return OkStatus();
  const int err = errno;
  if (err != EAGAIN && err != EACCES) return Io("cannot lock the journal", path, err);
  struct flock who {};
  who.l_type = write ? F_WRLCK : F_RDLCK;
  who.l_whence = SEEK_SET;
  const bool known = ::fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK && who.l_pid > 0;
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("journal '{}' is in use by {}: two tunes on one journal would mix their "
                           "records. Wait for it to finish, or give this tune another --journal",
                           path, known ? DescribeProcess(who.l_pid) : "another process"));
}

Result<std::string> ReadAll(int fd, int64_t size, const std::string& path) {
  std::string text(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Io("cannot read the journal", path, errno);
    if (n == 0) break;  // shrank: keep what is there
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

// True when the engine was ended by a signal from outside (a person's kill, a
// session ending, the kernel's out-of-memory killer): not a verdict on the
// configuration, so a resumed tune measures it again instead of trusting it. An
// RPC host that failed says nothing about the configuration either.
bool KilledFromOutside(const RunResult& r) {
  if (r.failure && r.failure->kind == FailureKind::kRpcHost) return true;
  if (!r.failure || r.failure->kind != FailureKind::kCrash) return false;
  switch (r.failure->signal) {
    case SIGKILL:
    case SIGTERM:
    case SIGINT:
    case SIGHUP:
    case SIGQUIT:
    case SIGPIPE:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string Journal::Key(const RunConfig& c) {
  return fmt::format("{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}", c.ModelKey(),
                     c.threads, c.n_ubatch, c.n_batch, GgmlTypeName(c.type_k),
                     GgmlTypeName(c.type_v), FlashAttnName(c.flash_attn), c.n_depth, c.n_prompt,
                     c.n_gen);
}

Status Journal::CheckHeader(const std::string& line, const JournalIdentity& id) const {
  const json obj = ParseJsonOrDiscarded(line);
  const auto version = obj.is_object() ? obj.find("moetune_journal") : obj.end();
  if (obj.is_discarded() || !obj.is_object() || version == obj.end()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("'{}' is not a moetune tune journal (it was left as it is); give "
                             "another --journal path",
                             path_));
  }
  if (!version->is_number_integer() || version->get<int64_t>() != kJournalVersion) {
    return Error(ErrorKind::kFormat,
                 fmt::format("journal '{}' has format version {}; this moetune reads version {} "
                             "only. Give another --journal file (the journal was left as it is)",
                             path_, DumpJson(*version, -1).substr(0, 40), kJournalVersion));
  }
  for (const char* field : {"model", "engine", "machine"}) {
    const std::string want = field == std::string("model")    ? id.model
                             : field == std::string("engine") ? id.engine
                                                              : id.machine;
    const auto it = obj.find(field);
    const std::string have = it != obj.end() && it->is_string() ? it->get<std::string>() : "";
    if (have != want) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("journal '{}' was written for another {} ({}); this run is for "
                               "{}. Its measurements do not apply here: give another --journal "
                               "file, or delete this one to start over",
                               path_, field, have, want));
    }
  }
  return OkStatus();
}

Status Journal::Load(const std::string& text, const JournalIdentity& id,
                     std::vector<std::string>* notes) {
  // The header is checked before anything else happens to the file.
  const size_t first_nl = text.find('\n');
  MOETUNE_TRY(CheckHeader(text.substr(0, first_nl), id));
  if (first_nl == std::string::npos) {
    needs_newline_ = true;
    return OkStatus();
  }
  size_t torn = 0;
  size_t killed = 0;
  size_t start = first_nl + 1;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    const bool whole = nl != std::string::npos;
    if (!whole) nl = text.size();
    const std::string_view line(text.data() + start, nl - start);
    start = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const json obj = whole ? ParseJsonOrDiscarded(line) : json(json::value_t::discarded);
    // A record of another kind (the budget's) holds no measurement.
    if (obj.is_object() && !obj.contains("result") && obj.contains("kind") &&
        obj["kind"].is_string()) {
      if (obj["kind"] == "budget") ++budget_stops_;
      continue;
    }
    const auto r = obj.is_object() && obj.contains("result")
                       ? RunResultFromJson(obj["result"])
                       : Result<RunResult>(Error(ErrorKind::kFormat, "torn"));
    if (!r.ok()) {
      ++torn;
      continue;
    }
    if (KilledFromOutside(*r)) {
      ++killed;
      continue;
    }
    by_key_[Key(r->config)].push_back(results_.size());
    results_.push_back(*r);
  }
  needs_newline_ = !text.empty() && text.back() != '\n';
  if (notes != nullptr && torn > 0) {
    notes->push_back(fmt::format(
        "journal '{}': {} record(s) torn or unreadable (a write cut short by a crash, a full "
        "disk or a second writer) were skipped; those configurations are measured again",
        path_, torn));
  }
  if (notes != nullptr && killed > 0) {
    notes->push_back(fmt::format(
        "journal '{}': {} measurement(s) whose engine was killed by a signal from outside, or "
        "whose RPC host failed, are measured again",
        path_, killed));
  }
  return OkStatus();
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path, const JournalIdentity& id,
                                               std::vector<std::string>* notes) {
  // The rule every output follows (util/output_file.h): a regular file or a
  // new one, not a dangling link, not an input or another output.
  OutputFileOptions rules;
  rules.role = "--journal";
  rules.regular_only = true;
  MOETUNE_ASSIGN_OR_RETURN(OutputTarget target, CheckOutputTarget(path, rules));
  std::unique_ptr<Journal> j(new Journal());
  j->path_ = path;
  // Opening for append changes nothing in an existing file: the header is
  // checked before anything is written, and records are only ever appended.
  int fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
  if (fd < 0 && target.exists && (errno == EACCES || errno == EROFS || errno == EPERM)) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    j->read_only_ = true;
  }
  if (fd < 0) return Io("cannot open the journal", path, errno);
  j->fd_ = fd;
  MOETUNE_TRY(Lock(fd, !j->read_only_, path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Io("cannot read the journal", path, errno);
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("journal '{}' is not a regular file; give a file path", path));
  }
  if (st.st_size > kMaxJournalBytes) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("journal '{}' is over {} MiB; start a new one", path, kMaxJournalBytes >> 20));
  }
  MOETUNE_ASSIGN_OR_RETURN(std::string text, ReadAll(fd, st.st_size, path));
  if (text.empty()) {
    if (j->read_only_) {
      return Error(ErrorKind::kIo,
                   fmt::format("journal '{}' is empty and cannot be written (read-only); give "
                               "another --journal path",
                               path));
    }
    const json header = {{"moetune_journal", kJournalVersion},
                         {"model", id.model},
                         {"engine", id.engine},
                         {"machine", id.machine},
                         {"created", UtcNow()}};
    MOETUNE_TRY(j->WriteRecord(DumpJson(header, -1)));
    return j;
  }
  MOETUNE_TRY(j->Load(text, id, notes));
  j->resumed_ = j->results_.size();
  if (notes != nullptr && j->resumed_ > 0) {
    notes->push_back(fmt::format("resumed from journal '{}': {} measurement(s) already done", path,
                                 j->resumed_));
  }
  if (notes != nullptr && j->read_only_) {
    notes->push_back(fmt::format(
        "journal '{}' is read-only: its measurements are used, new ones are not saved (give a "
        "writable --journal, e.g. a copy of it, to keep them)",
        path));
  }
  return j;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::optional<RunResult> Journal::Find(const RunConfig& config, int occurrence) const {
  auto it = by_key_.find(Key(config));
  if (it == by_key_.end() || occurrence < 0 || static_cast<size_t>(occurrence) >= it->second.size())
    return std::nullopt;
  return results_[it->second[static_cast<size_t>(occurrence)]];
}

// One record, whole or not at all: a single write(2) of the record and its
// newline (O_APPEND, under the lock), and a short write (a full disk, a file
// size limit) is cut back off so that no torn line is left behind.
Status Journal::WriteRecord(const std::string& record) {
  const std::string text = (needs_newline_ ? "\n" : "") + record + "\n";
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return Io("cannot append to the journal", path_, errno);
  const off_t before = st.st_size;
  size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    if (n == 0) {
      err = EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd_) != 0) err = errno;
  if (err != 0) {
    if (done > 0 && ::ftruncate(fd_, before) != 0) needs_newline_ = true;
    return Io("cannot append to the journal", path_, err);
  }
  needs_newline_ = false;
  return OkStatus();
}

Status Journal::Append(const RunResult& result) {
  by_key_[Key(result.config)].push_back(results_.size());
  results_.push_back(result);
  if (read_only_) return OkStatus();  // Open said so
  const json line = {{"result", RunResultToJson(result)}, {"at", UtcNow()}};
  auto st = WriteRecord(DumpJson(line, -1));
  if (!st.ok()) {
    ++unsaved_;
    if (!write_error_) write_error_ = st.error();
  }
  return st;
}

Status Journal::AppendBudgetStop(const BudgetStop& stop) {
  if (read_only_) return OkStatus();  // Open said so
  const json line = {{"kind", "budget"},
                     {"budget",
                      {{"run", stop.run},
                       {"ended", stop.ended},
                       {"expected_seconds", stop.expected_seconds},
                       {"left_seconds", stop.left_seconds},
                       {"budget_seconds", stop.budget_seconds}}},
                     {"at", UtcNow()}};
  return WriteRecord(DumpJson(line, -1));
}

}  // namespace moetune
