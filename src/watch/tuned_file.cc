#include "watch/tuned_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tune/tune_reader.h"
#include "util/command_files.h"
#include "util/json_parse.h"
#include "watch/prediction.h"

namespace moetune {
namespace {

constexpr int64_t kMaxBytes = int64_t{64} << 20;

bool HasCurves(const nlohmann::json& j) {
  return j.is_object() && j.contains("curves") && j["curves"].is_array();
}

// A file's error, with the file named.
Error InFile(const Error& e, const std::string& path) {
  return Error(ErrorKind::kFormat, fmt::format("{}: {}", path, e.message()));
}

// plan --json: "command" is a string and "command_argv" the vector.
Status ReadPlanCommand(const nlohmann::json& j, const std::string& path, TunedFile* f) {
  auto it = j.find("command_argv");
  if (it == j.end()) return OkStatus();
  if (!it->is_array() || it->empty()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}: 'command_argv' is not a non-empty array of strings", path));
  }
  std::vector<std::string> argv;
  for (const auto& a : *it) {
    if (!a.is_string()) {
      return Error(ErrorKind::kFormat,
                   fmt::format("{}: 'command_argv' holds a non-string element", path));
    }
    argv.push_back(a.get<std::string>());
  }
  f->command_argv = std::move(argv);
  return OkStatus();
}

}  // namespace

std::string ForeignTune::Describe() const {
  switch (kind) {
    case ForeignTuneKind::kSimulated:
      return fmt::format(
          "its pick was measured on the simulated engine ({}), never on this "
          "machine's GPU",
          recorded);
    case ForeignTuneKind::kOtherMachine:
      return fmt::format("it was measured on another machine ({}; this one is {})", recorded, here);
    case ForeignTuneKind::kOtherEngine:
      return fmt::format("it was measured with another llama.cpp ({}; this one is {})", recorded,
                         here);
  }
  return "";
}

std::vector<ForeignTune> ForeignTuneChecks(const TuneOrigin& origin,
                                           const std::string& machine_here,
                                           const std::string& engine_version_here) {
  std::vector<ForeignTune> out;
  if (origin.simulated) {
    out.push_back({ForeignTuneKind::kSimulated, origin.machine, ""});
    return out;  // the engine and machine lines are the what-if machine's
  }
  if (!origin.machine.empty() && !machine_here.empty() && origin.machine != machine_here) {
    out.push_back({ForeignTuneKind::kOtherMachine, origin.machine, machine_here});
  }
  // The tune wrote "VERSION_LINE at DIR": the same version from another folder is the same engine.
  if (!origin.engine.empty() && !engine_version_here.empty() &&
      origin.engine != engine_version_here &&
      origin.engine.rfind(engine_version_here + " at ", 0) != 0) {
    out.push_back({ForeignTuneKind::kOtherEngine, origin.engine, engine_version_here});
  }
  return out;
}

Result<TunedFile> ParseTunedFile(const std::string& text, const std::string& path) {
  auto parsed = ParseJson(text, path);
  if (!parsed.ok()) return parsed.take_error();
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{} is not a JSON object (expected the --json output of moetune "
                             "plan, tune or analyze)",
                             path));
  }
  TunedFile f;
  f.path = path;
  if (auto c = j.find("command"); c != j.end() && c->is_array()) {
    // tune --json: "command" is the pick's argv; the whole file is read.
    auto tune = TuneReportFromJson(j);
    if (!tune.ok()) return InFile(tune.error(), path);
    if (auto argv = tune->Command(); !argv.empty()) f.command_argv = std::move(argv);
    if (!tune->result.analysis.curves.empty()) f.analysis = std::move(tune->result.analysis);
    f.origin = TuneOrigin{tune->simulated, tune->engine, tune->machine};
    f.kind = "tune";
  } else if (HasCurves(j)) {
    auto analysis = AnalysisFromJson(j);
    if (!analysis.ok()) return InFile(analysis.error(), path);
    f.analysis = std::move(analysis).value();
    f.kind = "analyze";
  } else {
    MOETUNE_TRY(ReadPlanCommand(j, path, &f));
    if (f.command_argv) f.kind = "plan";
  }
  if (HasPlanPrediction(j)) f.prediction = j;
  if (!f.command_argv && !f.analysis && !f.prediction) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{} has neither a command ('command_argv' of moetune plan --json, "
                             "'command' of tune --json) nor "
                             "'curves' (moetune analyze --json, or tune's 'analysis') nor "
                             "predicted speeds (plan --predict --json): nothing to "
                             "serve or compare with",
                             path));
  }
  return f;
}

Result<TunedFile> LoadTunedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int e = errno;
    return Error(e == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                 fmt::format("cannot open {}: {}", path, std::strerror(e)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxBytes) {
    ::close(fd);
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} is not a regular file of at most 64 MiB (--from reads the JSON "
                             "file that moetune plan/tune/analyze --json wrote)",
                             path));
  }
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  text.resize(got);
  MOETUNE_TRY(NoteInputFile(path, "the --from file"));
  return ParseTunedFile(text, path);
}

}  // namespace moetune
