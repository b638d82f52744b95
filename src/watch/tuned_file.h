#pragma once
/// What `--from FILE` reads (serve and watch): a JSON file written by
/// moetune, from which two things are taken, each optional:
///
/// - the llama-server command: the pick of `moetune tune --json` (read whole
///   by the one tune reader, tune/tune_reader.h, and written by the one
///   command builder), else the top-level `command_argv` array of strings of
///   `moetune plan --json`;
/// - the baseline: the analysis (`moetune analyze --json` itself, or the one
///   `moetune tune --json` embeds, read by the same reader), measured; else
///   predicted speeds (`options[].predicted` of `moetune plan --predict --json`).
///
/// A file with no command and no baseline is refused. The file is bounded (64 MiB, regular file).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tune/analysis.h"
#include "util/result.h"
#include "watch/server_settings.h"

namespace moetune {

struct TunedFile {
  std::string path;
  /// The command, when the file has one.
  std::optional<std::vector<std::string>> command_argv;
  /// The analysis, when the file is an analysis or a tune whose analysis has curves.
  std::optional<Analysis> analysis;
  /// The whole file, when it holds predicted speeds (plan --predict).
  std::optional<nlohmann::json> prediction;
  /// "plan", "tune", "analyze" or "moetune JSON": what the file looked like.
  std::string kind;
};

Result<TunedFile> LoadTunedFile(const std::string& path);

/// Parses the text of such a file (`path` only names it in messages).
Result<TunedFile> ParseTunedFile(const std::string& text, const std::string& path);

}  // namespace moetune
