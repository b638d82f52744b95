#include "tune/measurements.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/bench_jsonl.h"
#include "engine/result_json.h"
#include "util/command_files.h"
#include "util/json_parse.h"

namespace moetune {
namespace {

using nlohmann::json;

constexpr int64_t kMaxFileBytes = int64_t{64} << 20;

// Reads a regular file of bounded size (a FIFO or /dev/zero would never end).
Result<std::string> ReadBounded(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Error(ErrorKind::kNotFound,
                 fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' is a directory; give the result files inside it", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' is not a regular file; save the results to a file first", path));
  }
  if (st.st_size > kMaxFileBytes) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' is {} MiB; result files over {} MiB are not read", path,
                             st.st_size >> 20, kMaxFileBytes >> 20));
  }
  MOETUNE_TRY(NoteInputFile(path, "an input file"));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Error(ErrorKind::kIo, fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Error(ErrorKind::kIo, fmt::format("cannot read '{}': {}", path, std::strerror(err)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (static_cast<int64_t>(text.size()) > kMaxFileBytes) break;  // grew while reading
  }
  ::close(fd);
  return text;
}

std::string StrOr(const json& j, const char* key, const std::string& fallback = "") {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::vector<double> Numbers(const json& j, const char* key) {
  std::vector<double> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_number() && std::isfinite(v.get<double>())) out.push_back(v.get<double>());
  }
  return out;
}

// A llama-bench result object (from -o json or -o jsonl).
Result<RunResult> FromLlamaBench(const json& obj) {
  MOETUNE_ASSIGN_OR_RETURN(BenchRecord rec, ParseBenchRecord(obj.dump()));
  RunResult r;
  RunConfig& c = r.config;
  c.model = StrOr(obj, "model_filename");
  c.placement.n_gpu_layers = rec.n_gpu_layers;
  c.placement.n_cpu_moe = rec.n_cpu_moe;
  c.n_batch = rec.n_batch > 0 ? rec.n_batch : c.n_batch;
  c.n_ubatch = rec.n_ubatch > 0 ? rec.n_ubatch : c.n_ubatch;
  for (auto [name, field] :
       {std::pair{&rec.type_k, &c.type_k}, std::pair{&rec.type_v, &c.type_v}}) {
    if (name->empty()) continue;
    const auto t = GgmlTypeByName(*name);
    if (!t) {
      return Error(ErrorKind::kFormat,
                   fmt::format("llama-bench result: cache type '{}' is not a ggml type", *name));
    }
    *field = t->id;
  }
  MOETUNE_ASSIGN_OR_RETURN(c.flash_attn, ParseFlashAttn(rec.flash_attn));
  if (auto it = obj.find("tensor_buft_overrides");
      it != obj.end() && it->is_string() && it->get<std::string>() != "none") {
    MOETUNE_TRY(c.placement.SetOverrideTensor(it->get<std::string>()));
  }
  MOETUNE_ASSIGN_OR_RETURN(c.load_mode, ParseLoadMode(StrOr(obj, "load_mode")));
  c.threads = rec.n_threads;
  c.n_depth = rec.n_depth;
  c.n_prompt = rec.n_prompt;
  c.n_gen = rec.n_gen;
  r.avg_ts = rec.avg_ts;
  r.stddev_ts = rec.stddev_ts;
  // ParseBenchRecord adds a pseudo-sample when there are none; keep only real ones.
  r.samples_ts = Numbers(obj, "samples_ts");
  c.repetitions = r.samples_ts.empty() ? 0 : static_cast<int>(r.samples_ts.size());
  r.record = obj;
  return r;
}

// Where one file's results go, and how many still fit under the limit.
struct Sink {
  LoadedMeasurements* out;
  LoadedFile* file;
  std::size_t room;
  bool over = false;
};

void AddObject(const json& obj, Sink* sink) {
  LoadedMeasurements* out = sink->out;
  LoadedFile* file = sink->file;
  if (out->results.size() >= sink->room) {
    sink->over = true;
    return;
  }
  Result<RunResult> r = obj.contains("avg_ts") && obj.contains("n_prompt") ? FromLlamaBench(obj)
                                                                           : RunResultFromJson(obj);
  if (r.ok()) {
    out->results.push_back(std::move(r).value());
    ++file->results;
  } else {
    ++file->skipped;
  }
}

Error TooManyResults(std::size_t limit) {
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("more than {} results in the files together, the most one analysis "
                           "reads (about 150 MB of memory); give fewer files or the part of "
                           "the sweep you want analyzed",
                           limit));
}

Result<LoadedMeasurements> ParseUpTo(std::string_view text, const std::string& name,
                                     std::size_t room) {
  LoadedMeasurements out;
  LoadedFile file;
  file.path = name;
  Sink sink{&out, &file, room};
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return Error(ErrorKind::kFormat, fmt::format("'{}' is empty", name));
  }
  json whole = ParseJsonOrDiscarded(text);
  if (!whole.is_discarded() && whole.is_array()) {
    file.format = "llama-bench json";
    for (const auto& obj : whole) AddObject(obj, &sink);
  } else if (!whole.is_discarded() && whole.is_object() && whole.contains("results") &&
             whole["results"].is_array()) {
    file.format = "moetune bench";
    for (const auto& obj : whole["results"]) AddObject(obj, &sink);
    if (whole.contains("measurements") && whole["measurements"].is_array()) {
      for (const auto& obj : whole["measurements"]) AddObject(obj, &sink);
    }
  } else if (!whole.is_discarded() && whole.is_object() && whole.contains("measurements") &&
             whole["measurements"].is_array()) {
    file.format = "moetune tune";
    for (const auto& obj : whole["measurements"]) AddObject(obj, &sink);
  } else {
    // JSON lines: llama-bench -o jsonl, or a moetune journal (records carry "result").
    file.format = "llama-bench jsonl";
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t nl = text.find('\n', start);
      if (nl == std::string_view::npos) nl = text.size();
      const std::string_view line = text.substr(start, nl - start);
      start = nl + 1;
      if (sink.over) break;
      const auto b = line.find_first_not_of(" \t\r");
      if (b == std::string_view::npos) continue;
      if (line[b] != '{') {
        ++file.skipped;
        continue;
      }
      json obj = ParseJsonOrDiscarded(line.substr(b));
      if (obj.is_discarded() || !obj.is_object()) {
        ++file.skipped;
        continue;
      }
      if (obj.contains("result") && obj["result"].is_object()) {
        file.format = "moetune journal";
        AddObject(obj["result"], &sink);
      } else if (obj.contains("moetune_journal")) {
        file.format = "moetune journal";  // the header line
      } else {
        AddObject(obj, &sink);
      }
    }
  }
  if (sink.over) return TooManyResults(kMaxMeasurementResults);
  if (file.results == 0) {
    return Error(ErrorKind::kFormat,
                 fmt::format("'{}' holds no benchmark results (expected llama-bench output "
                             "from -o json or -o jsonl, or moetune bench/tune JSON)",
                             name));
  }
  if (file.skipped > 0) {
    out.notes.push_back(fmt::format("{}: {} entr{} skipped (not a usable result)", name,
                                    file.skipped, file.skipped == 1 ? "y" : "ies"));
  }
  out.files.push_back(file);
  return out;
}

}  // namespace

Result<LoadedMeasurements> ParseMeasurements(std::string_view text, const std::string& name) {
  return ParseUpTo(text, name, kMaxMeasurementResults);
}

Result<LoadedMeasurements> LoadMeasurements(const std::vector<std::string>& paths) {
  LoadedMeasurements all;
  for (const auto& p : paths) {
    MOETUNE_ASSIGN_OR_RETURN(std::string text, ReadBounded(p));
    auto one = ParseUpTo(text, p, kMaxMeasurementResults - all.results.size());
    if (!one.ok()) return one.take_error();
    for (auto& r : one->results) all.results.push_back(std::move(r));
    for (auto& f : one->files) all.files.push_back(std::move(f));
    for (auto& n : one->notes) all.notes.push_back(std::move(n));
  }
  return all;
}

Summary ResultStats(const RunResult& r, int assumed_n, bool* assumed) {
  if (assumed != nullptr) *assumed = false;
  if (r.samples_ts.size() >= 2) {
    Summary s = Summarize(r.samples_ts);
    if (s.outliers.empty()) return s;
    // Leave out samples that median/MAD calls outliers (a busy moment).
    std::vector<double> kept;
    for (std::size_t i = 0; i < r.samples_ts.size(); ++i) {
      if (std::find(s.outliers.begin(), s.outliers.end(), i) == s.outliers.end()) {
        kept.push_back(r.samples_ts[i]);
      }
    }
    Summary clean = Summarize(kept);
    clean.outliers = s.outliers;
    // The best repetition is read on every sample: BestRepetition has its own
    // rule for a fast one that stands alone, and a slow outlier never counts.
    clean.best = s.best;
    return clean;
  }
  Summary s;
  const double mean = r.samples_ts.size() == 1 ? r.samples_ts[0] : r.avg_ts;
  s.mean = s.median = s.min = s.max = s.best = mean;
  if (r.stddev_ts > 0 && std::isfinite(r.stddev_ts)) {
    s.n = static_cast<std::size_t>(
        std::max(2, r.config.repetitions > 1 ? r.config.repetitions : assumed_n));
    s.stddev = r.stddev_ts;
    if (assumed != nullptr) *assumed = r.config.repetitions <= 1;
  } else {
    s.n = 1;
  }
  return s;
}

}  // namespace moetune
