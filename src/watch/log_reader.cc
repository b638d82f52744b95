#include "watch/log_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/bench_jsonl.h"
#include "util/command_files.h"
#include "util/json_parse.h"

namespace moetune {
namespace {

constexpr std::size_t kMaxLine = std::size_t{64} * 1024;

std::size_t SkipSpaces(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

// The integer right after `key` (spaces allowed between).
std::optional<int64_t> IntAfter(std::string_view line, std::string_view key, std::size_t from = 0) {
  const auto pos = line.find(key, from);
  if (pos == std::string_view::npos) return std::nullopt;
  std::size_t i = SkipSpaces(line, pos + key.size());
  int64_t v = 0;
  const auto r = std::from_chars(line.data() + i, line.data() + line.size(), v);
  if (r.ec != std::errc() || v < -1 || v > (int64_t{1} << 40)) return std::nullopt;
  return v;
}

std::optional<double> DoubleAt(std::string_view line, std::size_t i) {
  i = SkipSpaces(line, i);
  double v = 0;
  const auto r = std::from_chars(line.data() + i, line.data() + line.size(), v);
  if (r.ec != std::errc() || !(v >= 0) || v > 1e12) return std::nullopt;
  return v;
}

// "<key> = X ms / N tokens" -> (N, X).
std::optional<std::pair<int64_t, double>> TimingAt(std::string_view line, std::size_t key_pos) {
  const auto eq = line.find('=', key_pos);
  if (eq == std::string_view::npos) return std::nullopt;
  const auto ms = DoubleAt(line, eq + 1);
  const auto slash = line.find('/', eq);
  if (!ms || slash == std::string_view::npos) return std::nullopt;
  const auto n = IntAfter(line, "/", slash);
  if (!n || *n < 0) return std::nullopt;
  return std::make_pair(*n, *ms);
}

// "M.SS.mmm.uuu" at the start of the line -> seconds.
std::optional<double> Timestamp(std::string_view line) {
  int64_t parts[4];
  std::size_t i = 0;
  for (int k = 0; k < 4; ++k) {
    int64_t v = 0;
    const auto r = std::from_chars(line.data() + i, line.data() + line.size(), v);
    if (r.ec != std::errc() || v < 0) return std::nullopt;
    parts[k] = v;
    i = static_cast<std::size_t>(r.ptr - line.data());
    if (k < 3) {
      if (i >= line.size() || line[i] != '.') return std::nullopt;
      ++i;
    }
  }
  if (i < line.size() && line[i] != ' ') return std::nullopt;
  return static_cast<double>(parts[0]) * 60 + static_cast<double>(parts[1]) +
         static_cast<double>(parts[2]) / 1e3 + static_cast<double>(parts[3]) / 1e6;
}

}  // namespace

Observation LogRequest::ToObservation(double fallback_time_s) const {
  Observation o;
  o.time_s = time_s.value_or(fallback_time_s);
  o.concurrent = concurrent;
  const double gen = static_cast<double>(generated_tokens);
  // A time of (almost) nothing makes an infinite speed: "1e-300 ms" is no
  // measurement, and neither is a speed beyond any machine (bench_jsonl.h).
  const auto plausible = [](double tokens, double ms) {
    return tokens > 0 && ms > 0 && IsPlausibleTokensPerSecond(tokens / (ms / 1e3));
  };
  if (plausible(static_cast<double>(prompt_tokens), prompt_ms)) {
    WorkSample w{static_cast<double>(prompt_tokens), prompt_ms / 1e3, std::nullopt};
    if (n_tokens_end) {
      const double start =
          std::max(0.0, static_cast<double>(*n_tokens_end) - w.tokens - std::max(0.0, gen - 1));
      w.depth = start + w.tokens / 2;
    }
    o.prefill = w;
  }
  if (plausible(gen, generated_ms)) {
    WorkSample w{gen, generated_ms / 1e3, std::nullopt};
    if (n_tokens_end)
      w.depth = std::max(0.0, static_cast<double>(*n_tokens_end) - (gen - 1) + gen / 2);
    o.decode = w;
  }
  return o;
}

void ServerLogParser::Complete(int64_t task) {
  auto it = pending_.find(task);
  if (it == pending_.end()) return;
  if (it->second.has_prompt || it->second.has_eval) log_.requests.push_back(it->second.request);
  pending_.erase(it);
}

std::string ServeCommandLine(const std::vector<std::string>& argv) {
  return std::string(kServeCommandTag) + nlohmann::json(argv).dump();
}

void ServerLogParser::FeedServeCommand(std::string_view json) {
  // Untrusted like the rest: an array of at most 4096 strings, else a note.
  const auto j = ParseJsonOrDiscarded(json);
  std::vector<std::string> argv;
  const bool ok = j.is_array() && !j.empty() && j.size() <= 4096 &&
                  std::all_of(j.begin(), j.end(), [](const auto& a) { return a.is_string(); });
  if (ok) {
    for (const auto& a : j) argv.push_back(a.template get<std::string>());
    log_.commands.push_back(std::move(argv));
  } else {
    log_.notes.push_back(
        fmt::format("line {}: a serve command line that is not a JSON array "
                    "of strings (ignored)",
                    log_.lines));
  }
}

void ServerLogParser::StartTask() {
  bool others = false;
  for (const auto& [s, t] : active_) {
    if (s == slot_) continue;
    others = true;
    if (auto it = pending_.find(t); it != pending_.end()) it->second.request.concurrent = true;
  }
  active_[slot_] = task_;
  auto& p = pending_[task_];
  p.request.slot = slot_;
  p.request.task = task_;
  p.request.session = log_.sessions;
  p.request.concurrent = p.request.concurrent || others;
}

void ServerLogParser::Feed(std::string_view line) {
  ++log_.lines;
  if (line.substr(0, kServeCommandTag.size()) == kServeCommandTag) {
    FeedServeCommand(line.substr(kServeCommandTag.size()));
    return;
  }
  const auto ts = Timestamp(line);
  if (line.find("llama_server: initializing") != std::string_view::npos ||
      line.find("HTTP server is listening") != std::string_view::npos) {
    std::vector<int64_t> tasks;
    for (const auto& [t, p] : pending_) tasks.push_back(t);
    for (int64_t t : tasks) Complete(t);
    active_.clear();
    ++log_.sessions;
    slot_ = -1;
    task_ = -1;
    return;
  }
  if (auto p = line.find("loading model '"); p != std::string_view::npos) {
    const auto start = p + std::strlen("loading model '");
    const auto end = line.find('\'', start);
    if (end != std::string_view::npos)
      log_.model_path = std::string(line.substr(start, end - start));
    return;
  }
  if (auto n = IntAfter(line, "n_slots =");
      n && line.find("n_ctx_slot") != std::string_view::npos) {
    log_.n_slots = static_cast<int>(std::clamp<int64_t>(*n, 0, 1 << 20));
    log_.n_ctx_slot = std::max<int64_t>(0, IntAfter(line, "n_ctx_slot =").value_or(0));
    return;
  }
  // "id  0 | task 12 |" names the slot and task of this line and of the
  // unprefixed lines that follow it (older builds).
  if (const auto tp = line.find("| task "); tp != std::string_view::npos) {
    const auto idp = line.rfind("id ", tp);
    const auto slot = idp == std::string_view::npos ? std::nullopt : IntAfter(line, "id ", idp);
    const auto task = IntAfter(line, "| task ", tp);
    if (slot && task) {
      slot_ = static_cast<int>(*slot);
      task_ = *task;
    }
  }
  const bool launch = line.find("processing task") != std::string_view::npos;
  if (launch && task_ >= 0 && slot_ >= 0) {
    StartTask();
    return;
  }
  const auto prompt_pos = line.find("prompt eval time");
  const auto eval_pos = line.find("eval time");
  const bool is_eval = eval_pos != std::string_view::npos && prompt_pos == std::string_view::npos;
  if ((prompt_pos != std::string_view::npos || is_eval) && task_ >= 0) {
    const auto t = TimingAt(line, prompt_pos != std::string_view::npos ? prompt_pos : eval_pos);
    if (!t) return;
    auto& p = pending_[task_];
    p.request.slot = slot_;
    p.request.task = task_;
    p.request.session = log_.sessions;
    if (ts) p.request.time_s = ts;
    if (prompt_pos != std::string_view::npos) {
      p.request.prompt_tokens = t->first;
      p.request.prompt_ms = t->second;
      p.has_prompt = true;
    } else {
      p.request.generated_tokens = t->first;
      p.request.generated_ms = t->second;
      p.has_eval = true;
    }
    return;
  }
  if (line.find("stop processing") != std::string_view::npos ||
      line.find("slot released") != std::string_view::npos) {
    auto n = IntAfter(line, "n_tokens =");
    if (!n) n = IntAfter(line, "n_past =");
    if (task_ >= 0) {
      if (auto it = pending_.find(task_); it != pending_.end() && n && *n >= 0)
        it->second.request.n_tokens_end = *n;
      Complete(task_);
    }
    if (slot_ >= 0) active_.erase(slot_);
  }
}

ServerLog ServerLogParser::Finish() {
  std::vector<int64_t> tasks;
  for (const auto& [t, p] : pending_) tasks.push_back(t);
  for (int64_t t : tasks) Complete(t);
  std::size_t no_depth = 0;
  for (const auto& r : log_.requests) no_depth += r.n_tokens_end ? 0 : 1;
  if (no_depth > 0) {
    log_.notes.push_back(fmt::format(
        "{} request(s) have no release line with the slot's context size: their depth is "
        "unknown and they are not judged",
        no_depth));
  }
  return std::move(log_);
}

ServerLog ParseServerLog(std::string_view text) {
  ServerLogParser p;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (line.size() > kMaxLine) line = line.substr(0, kMaxLine);
    p.Feed(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return p.Finish();
}

Result<ServerLog> ReadServerLog(const std::string& path, const LogReadOptions& options) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;
    return Error(e == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                 fmt::format("cannot open log {}: {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} is not a regular file (a FIFO, device or folder); --log reads "
                             "a saved llama-server log file",
                             path));
  }
  if (st.st_size > options.max_bytes) {
    ::close(fd);
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("log {} is {} bytes, more than the {} bytes --log reads; cut it "
                             "first (e.g. tail -c 500M {} > part.log)",
                             path, st.st_size, options.max_bytes, path));
  }
  if (auto noted = NoteInputFile(path, "the --log file"); !noted.ok()) {
    ::close(fd);
    return noted.error();
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  ServerLogParser parser;
  std::string partial;
  std::vector<char> buf(1 << 20);
  int64_t offset = 0;
  bool cut = false;
  while (offset <= options.max_bytes) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return Error(ErrorKind::kIo, fmt::format("reading log {}: {}", path, std::strerror(e)));
    }
    if (n == 0) break;
    const std::string_view chunk(buf.data(), static_cast<std::size_t>(n));
    if (const auto nul = chunk.find('\0'); nul != std::string_view::npos) {
      ::close(fd);
      return Error(ErrorKind::kFormat,
                   fmt::format("{} holds binary data (a NUL byte at offset {}): not a text log",
                               path, offset + static_cast<int64_t>(nul)));
    }
    offset += n;
    std::size_t start = 0;
    while (start < chunk.size()) {
      const auto nl = chunk.find('\n', start);
      const std::string_view piece =
          chunk.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
      const std::size_t room = kMaxLine - partial.size();
      if (piece.size() > room) cut = true;
      partial.append(piece.substr(0, room));
      if (nl == std::string_view::npos) break;
      parser.Feed(partial);
      partial.clear();
      start = nl + 1;
    }
  }
  ::close(fd);
  if (!partial.empty()) parser.Feed(partial);
  ServerLog log = parser.Finish();
  if (cut) log.notes.push_back("lines longer than 64 KiB were cut");
  if (log.requests.empty()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{} ({} lines) has no llama-server request timing line ('prompt "
                             "eval time = ... ms / N tokens'): not a llama-server log, or one "
                             "written with logging turned down (llama-server prints them at "
                             "its default verbosity)",
                             path, log.lines));
  }
  return log;
}

}  // namespace moetune
