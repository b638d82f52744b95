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

/// Where a tune was made (tune files only): its engine and machine lines as
/// the tune wrote them (tune/tune_job.h TuneReport).
struct TuneOrigin {
  bool simulated = false;
  std::string engine;   // "version: 0.7.0 (build 11669, ...) at DIR", or the simulated engine's
  std::string machine;  // hw/cpu_topology.h CpuFingerprint, or "SIMULATED ..."
};

/// Why a tune's pick was not measured here.
enum class ForeignTuneKind {
  kSimulated,     // measured on the simulated engine, never on a real one
  kOtherMachine,  // measured on a machine with another CPU fingerprint
  kOtherEngine,   // measured with another llama.cpp version
};

struct ForeignTune {
  ForeignTuneKind kind = ForeignTuneKind::kSimulated;
  std::string recorded;  // what the file says
  std::string here;      // what this machine has ("" for kSimulated)
  std::string Describe() const;
};

/// The ways `origin` differs from this machine (`machine_here`: its
/// CpuFingerprint) and engine (`engine_version_here`: its version line; ""
/// when unknown, then not compared). Empty: the tune was made here.
std::vector<ForeignTune> ForeignTuneChecks(const TuneOrigin& origin,
                                           const std::string& machine_here,
                                           const std::string& engine_version_here);

struct TunedFile {
  std::string path;
  /// The command, when the file has one.
  std::optional<std::vector<std::string>> command_argv;
  /// The analysis, when the file is an analysis or a tune whose analysis has curves.
  std::optional<Analysis> analysis;
  /// The whole file, when it holds predicted speeds (plan --predict).
  std::optional<nlohmann::json> prediction;
  /// Where the tune was made (tune files only).
  std::optional<TuneOrigin> origin;
  /// "plan", "tune", "analyze" or "moetune JSON": what the file looked like.
  std::string kind;
};

Result<TunedFile> LoadTunedFile(const std::string& path);

/// Parses the text of such a file (`path` only names it in messages).
Result<TunedFile> ParseTunedFile(const std::string& text, const std::string& path);

}  // namespace moetune
