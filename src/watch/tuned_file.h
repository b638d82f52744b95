#pragma once
/// What `--from FILE` reads (serve and watch): a JSON file written by
/// moetune, from which two things are taken, each optional:
///
/// - the llama-server command: the top-level `command_argv` array of strings
///   (`moetune plan --json`), else a top-level `command` that is an array of
///   strings (`moetune tune --json`);
/// - the baseline: an analysis object with `curves[]` (the output of
///   `moetune analyze --json` itself, or the `analysis` object that
///   `moetune tune --json` embeds), measured; else predicted speeds
///   (`options[].predicted` of `moetune plan --predict --json`).
///
/// A file with no command and no baseline is refused. The file is bounded (64 MiB, regular file).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"
#include "watch/server_settings.h"

namespace moetune {

struct TunedFile {
  std::string path;
  /// The command, when the file has one.
  std::optional<std::vector<std::string>> command_argv;
  /// The analysis object, when the file has `curves` or `analysis.curves`.
  std::optional<nlohmann::json> analysis;
  /// The whole file, when it holds predicted speeds (plan --predict).
  std::optional<nlohmann::json> prediction;
  /// "plan", "tune", "analyze" or "moetune JSON": what the file looked like.
  std::string kind;
};

Result<TunedFile> LoadTunedFile(const std::string& path);

/// Parses the text of such a file (`path` only names it in messages).
Result<TunedFile> ParseTunedFile(const std::string& text, const std::string& path);

}  // namespace moetune
