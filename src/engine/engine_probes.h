#pragma once
/// The engine's answers that depend only on its files: each tool's
/// `--version` and `--help`. They are asked once per engine build and cached
/// (in $XDG_CACHE_HOME/moetune or ~/.cache/moetune) under the identity of the
/// tools' files, so that every command does not pay several engine starts.
///
/// Versions differ in who answers: Debian's 0.7.0 llama-bench prints its
/// version, the 0.4.0 llama-bench has no --version (it prints its usage), so
/// the version comes from the first tool that prints a version line.

#include <string>
#include <vector>

#include "util/result.h"

namespace moetune {

struct StaticProbes {
  /// `llama-bench --version`, whatever it printed (its "load_backend" lines
  /// tell which backends a dynamically loading build has).
  std::string bench_version;
  /// The first `--version` output that holds a version line, and its tool
  /// ("llama-bench", "llama-server", "llama-cli", "llama-fit-params");
  /// both empty when no tool printed one.
  std::string version;
  std::string version_tool;
  /// Each tool's `--help` ("" when the tool is missing).
  std::string bench_help;
  std::string server_help;
  std::string fit_params_help;
};

/// Runs (or reads from the cache) the static probes of the engine in `dir`.
/// Errors when llama-bench does not start or does not answer.
Result<StaticProbes> RunStaticProbes(const std::string& dir);

/// Runs `tool args...` and returns stdout and stderr together (versions
/// differ in which stream they use). A non-zero exit is not an error (some
/// versions exit 1 after --help); a timeout or a crash is.
Result<std::string> ProbeTool(const std::string& tool, const std::vector<std::string>& args);

/// The key under which the static probes of the tool at `path` are cached:
/// its canonical path and the identity of the file (size, modification and
/// change times, inode). Empty when the file cannot be examined (then
/// nothing is cached).
std::string ProbeCacheKey(const std::string& path);

}  // namespace moetune
