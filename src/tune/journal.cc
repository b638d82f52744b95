#include "tune/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "engine/result_json.h"
#include "util/utf8.h"

namespace moetune {
namespace {

using nlohmann::json;

constexpr int64_t kMaxJournalBytes = int64_t{256} << 20;

std::string UtcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Error Io(const std::string& what, const std::string& path) {
  return Error(ErrorKind::kIo, fmt::format("{} '{}': {}", what, path, std::strerror(errno)));
}

Status WriteLine(int fd, const std::string& line, const std::string& path) {
  std::string text = line + "\n";
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Io("cannot append to the journal", path);
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return Io("cannot flush the journal", path);
  return OkStatus();
}

}  // namespace

std::string Journal::Key(const RunConfig& c) {
  return fmt::format("{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}", c.ModelKey(),
                     c.threads, c.n_ubatch, c.n_batch, GgmlTypeName(c.type_k),
                     GgmlTypeName(c.type_v), FlashAttnName(c.flash_attn), c.n_depth, c.n_prompt,
                     c.n_gen);
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& path, const JournalIdentity& id,
                                               std::vector<std::string>* notes) {
  std::unique_ptr<Journal> j(new Journal());
  j->path_ = path;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("journal '{}' is not a regular file; give a file path", path));
  }
  if (exists && st.st_size > kMaxJournalBytes) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("journal '{}' is over {} MiB; start a new one", path, kMaxJournalBytes >> 20));
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Io("cannot open the journal", path);
  j->fd_ = fd;
  std::string text;
  if (exists && st.st_size > 0) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Io("cannot read the journal", path);
      got += static_cast<size_t>(n);
    }
  }
  const json header = {{"moetune_journal", 1},
                       {"model", id.model},
                       {"engine", id.engine},
                       {"machine", id.machine},
                       {"created", UtcNow()}};
  if (text.empty()) {
    MOETUNE_TRY(WriteLine(fd, header.dump(), path));
    return j;
  }
  // Only whole lines count: a line without its newline was torn by a crash.
  size_t complete = text.rfind('\n');
  complete = complete == std::string::npos ? 0 : complete + 1;
  if (complete < text.size()) {
    if (notes != nullptr)
      notes->push_back(
          "the journal's last line was incomplete (an interrupted write) and was dropped");
    if (::ftruncate(fd, static_cast<off_t>(complete)) != 0)
      return Io("cannot repair the journal", path);
    text.resize(complete);
  }
  size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    const std::string line = text.substr(start, nl - start);
    start = nl + 1;
    const json obj = json::parse(line, nullptr, false);
    if (first) {
      first = false;
      if (obj.is_discarded() || !obj.is_object() || !obj.contains("moetune_journal")) {
        return Error(
            ErrorKind::kFormat,
            fmt::format("'{}' is not a moetune tune journal; give another --journal path", path));
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
                                   path, field, have, want));
        }
      }
      continue;
    }
    if (obj.is_discarded() || !obj.is_object() || !obj.contains("result")) continue;
    auto r = RunResultFromJson(obj["result"]);
    if (!r.ok()) continue;
    j->by_key_[Key(r->config)].push_back(j->results_.size());
    j->results_.push_back(std::move(r).value());
  }
  if (::lseek(fd, 0, SEEK_END) < 0) return Io("cannot append to the journal", path);
  j->resumed_ = j->results_.size();
  if (notes != nullptr && j->resumed_ > 0) {
    notes->push_back(fmt::format("resumed from journal '{}': {} measurement(s) already done", path,
                                 j->resumed_));
  }
  return j;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<RunResult> Journal::Find(const RunConfig& config, int occurrence) const {
  auto it = by_key_.find(Key(config));
  if (it == by_key_.end() || occurrence < 0 || static_cast<size_t>(occurrence) >= it->second.size())
    return std::nullopt;
  return results_[it->second[static_cast<size_t>(occurrence)]];
}

Status Journal::Append(const RunResult& result) {
  const json line = {{"result", RunResultToJson(result)}, {"at", UtcNow()}};
  MOETUNE_TRY(WriteLine(fd_, line.dump(-1, ' ', false, json::error_handler_t::replace), path_));
  by_key_[Key(result.config)].push_back(results_.size());
  results_.push_back(result);
  return OkStatus();
}

}  // namespace moetune
