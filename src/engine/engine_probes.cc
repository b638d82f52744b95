#include "engine/engine_probes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>

#include "engine/engine_info.h"
#include "engine/engine_output.h"
#include "util/cache_dir.h"
#include "util/json_parse.h"
#include "util/read_file.h"
#include "util/subprocess.h"

namespace moetune {
namespace fs = std::filesystem;
namespace {

constexpr const char* kBench = "llama-bench";
constexpr const char* kServer = "llama-server";
constexpr const char* kFitParams = "llama-fit-params";
constexpr const char* kCli = "llama-cli";

bool IsExecutable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string ProbeCacheFile(const std::string& key) {
  const std::string dir = MoetuneCacheDir();
  if (dir.empty() || key.empty()) return "";
  return (fs::path(dir) / fmt::format("engine-{:016x}.json", std::hash<std::string>{}(key)))
      .string();
}

// The probes' fields in the cache file.
struct CacheField {
  const char* name;
  std::string StaticProbes::*member;
};
constexpr CacheField kCacheFields[] = {
    {"bench_version", &StaticProbes::bench_version},
    {"version", &StaticProbes::version},
    {"version_tool", &StaticProbes::version_tool},
    {"bench_help", &StaticProbes::bench_help},
    {"server_help", &StaticProbes::server_help},
    {"fit_params_help", &StaticProbes::fit_params_help},
};

bool ReadProbeCache(const std::string& file, const std::string& key, StaticProbes* out) {
  if (file.empty()) return false;
  constexpr std::size_t kMaxCacheBytes = std::size_t{4} << 20;
  auto text = ReadRegularFile(file, kMaxCacheBytes);
  if (!text.ok()) return false;
  const auto j = ParseJsonOrDiscarded(*text);
  // The key inside guards against a hash collision between two engines; an
  // entry written by an older moetune (other fields) is a miss.
  if (j.is_discarded() || !j.is_object() || !j.contains("key") || !j["key"].is_string() ||
      j["key"].get<std::string>() != key) {
    return false;
  }
  StaticProbes p;
  for (const auto& f : kCacheFields) {
    if (!j.contains(f.name) || !j[f.name].is_string()) return false;
    p.*f.member = j[f.name].get<std::string>();
  }
  *out = std::move(p);
  return true;
}

// Best effort: a cache that cannot be written only costs a few engine starts
// next time. Written to a private temporary file (mkstemp) and renamed into
// place, and the temporary file is removed on every failure.
void WriteProbeCache(const std::string& file, const std::string& key, const StaticProbes& p) {
  if (file.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  nlohmann::json j = {{"key", key}};
  for (const auto& f : kCacheFields) j[f.name] = p.*f.member;
  // Engine output need not be UTF-8: invalid bytes become U+FFFD in the cache
  // rather than an exception (the cache feeds only the parsers, which ignore them).
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string tmp = (fs::path(file).parent_path() / "engine-XXXXXX.tmp").string();
  const int fd = ::mkstemps(tmp.data(), 4);
  if (fd < 0) return;
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) ::unlink(tmp.c_str());
}

bool HasVersionLine(const std::string& text) {
  EngineInfo scratch;
  ParseVersionOutput(text, &scratch);
  return !scratch.version_line.empty();
}

// `tool --help` in `dir`, "" when the tool is not there.
std::future<Result<std::string>> HelpOf(const fs::path& dir, const char* tool) {
  const fs::path path = dir / tool;
  return std::async(std::launch::async, [path]() -> Result<std::string> {
    if (!IsExecutable(path)) return std::string();
    return ProbeTool(path.string(), {"--help"});
  });
}

Result<StaticProbes> AskTheEngine(const fs::path& dir) {
  const std::string bench = (dir / kBench).string();
  auto version_f = std::async(std::launch::async, [&] { return ProbeTool(bench, {"--version"}); });
  auto server_help_f = HelpOf(dir, kServer);
  auto fit_help_f = HelpOf(dir, kFitParams);
  // --help exits non-zero in some versions; its text is all that matters.
  auto bench_help = ProbeTool(bench, {"--help"});
  auto bench_version = version_f.get();
  auto server_help = server_help_f.get();
  auto fit_help = fit_help_f.get();
  if (!bench_version.ok()) return bench_version.take_error();
  if (!bench_help.ok()) return bench_help.take_error();
  StaticProbes p;
  p.bench_version = *bench_version;
  p.bench_help = *bench_help;
  // A tool that does not start is a missing capability here, not an error:
  // llama-bench, which every command needs, started.
  p.server_help = server_help.ok() ? *server_help : "";
  p.fit_params_help = fit_help.ok() ? *fit_help : "";
  if (HasVersionLine(p.bench_version)) {
    p.version = p.bench_version;
    p.version_tool = kBench;
    return p;
  }
  // llama-bench 0.4.0 has no --version: the tools built on llama.cpp's
  // common argument parser print the same build info.
  for (const char* tool : {kServer, kCli, kFitParams}) {
    if (!IsExecutable(dir / tool)) continue;
    auto v = ProbeTool((dir / tool).string(), {"--version"});
    if (v.ok() && HasVersionLine(*v)) {
      p.version = *v;
      p.version_tool = tool;
      break;
    }
  }
  return p;
}

}  // namespace

Result<std::string> ProbeTool(const std::string& tool, const std::vector<std::string>& args) {
  RunOptions o;
  o.spawn.argv = {tool};
  o.spawn.argv.insert(o.spawn.argv.end(), args.begin(), args.end());
  o.timeout = std::chrono::milliseconds(60000);
  // --help is ~10-40 KiB; 4 MiB bounds an engine that prints without end.
  constexpr std::size_t kMaxProbeBytes = std::size_t{4} << 20;
  std::string all;
  o.capture_stdout = false;
  o.stderr_tail_lines = 0;
  auto add = [&](std::string_view l) {
    if (all.size() + l.size() < kMaxProbeBytes) all.append(l).push_back('\n');
  };
  o.on_stdout_line = add;
  o.on_stderr_line = add;
  MOETUNE_ASSIGN_OR_RETURN(RunOutput out, RunProcess(o));
  if (out.timed_out) {
    return Error(ErrorKind::kEngine,
                 fmt::format("'{} {}' did not answer within 60 s", tool, fmt::join(args, " ")));
  }
  if (!out.status.exited) {
    return Error(ErrorKind::kEngine,
                 fmt::format("'{} {}' ended by {}; the engine does not start: reinstall it "
                             "(scripts/setup-engine.sh) or pass --llama-dir",
                             tool, fmt::join(args, " "), out.status.Describe()));
  }
  return all;
}

Result<StaticProbes> RunStaticProbes(const std::string& dir) {
  // The identity of every tool asked: rebuilding any of them is a miss.
  std::string key;
  for (const char* tool : {kBench, kServer, kFitParams, kCli}) {
    const fs::path path = fs::path(dir) / tool;
    if (!IsExecutable(path)) continue;
    const std::string k = ProbeCacheKey(path.string());
    if (k.empty()) return AskTheEngine(dir);  // cannot identify: never cached
    key += k + ";";
  }
  const std::string cache_file = ProbeCacheFile(key);
  StaticProbes cached;
  if (ReadProbeCache(cache_file, key, &cached)) return cached;
  MOETUNE_ASSIGN_OR_RETURN(StaticProbes p, AskTheEngine(dir));
  // Only a probe that worked is cached: a broken engine is asked again next
  // time, so "version unknown" does not outlive the fix.
  if (!p.version.empty() && !ParseHelpFlags(p.bench_help).empty()) {
    WriteProbeCache(cache_file, key, p);
  }
  return p;
}

std::string ProbeCacheKey(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(path, ec);
  if (ec) return "";
  struct stat st {};
  if (::stat(canonical.c_str(), &st) != 0) return "";
  // The change time moves with every rewrite or chmod even when a build tool
  // restores the modification time; the inode changes when a file is replaced.
  return fmt::format("{}|{}|{}.{}|{}.{}|{}:{}", canonical.string(), st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec, st.st_dev,
                     st.st_ino);
}

}  // namespace moetune
