#pragma once
/// Parsers of what llama.cpp's tools print: `--version`, `--list-devices`,
/// `--help`, the "load_backend" log lines and llama-bench's `--progress`
/// lines. Engine output is untrusted input: these parsers scan text once, use
/// no regular expressions (std::regex recurses per character; a 3 MB line
/// overflowed its stack), never throw, and range-check every number
/// (std::from_chars) so that a huge build number or a 400-digit MiB value is
/// refused instead of aborting moetune. tests/fuzz/engine_output_fuzz.cc
/// drives them with arbitrary bytes.

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_info.h"
#include "util/units.h"

namespace moetune {

/// Parses "version: 0.7.0 (build 11669, commit Debian)" / "version: 6500 (abc123)"
/// and "built with ..." lines into `info`. A build number that does not fit
/// an int64 leaves build_number at -1.
void ParseVersionOutput(std::string_view text, EngineInfo* info);

/// Parses the "Available devices:" list ("  CUDA0: NVIDIA ... (24080 MiB, 23000 MiB free)").
std::vector<EngineDevice> ParseListDevices(std::string_view text);

/// Every flag mentioned at the start of a --help option line.
std::set<std::string> ParseHelpFlags(std::string_view text);

/// Backend names from "load_backend: loaded CPU backend from ..." lines.
std::vector<std::string> ParseLoadedBackends(std::string_view text);

/// A mebibyte count as llama.cpp prints it ("24080", "12.5"): non-negative,
/// finite and small enough that its byte count fits an int64; nullopt otherwise.
std::optional<Bytes> ParseMiB(std::string_view text);

/// "llama-bench: benchmark 3/12: prompt run 1/5": the test index (1-based),
/// the total and what it is doing. nullopt for any other line.
struct BenchProgressLine {
  std::size_t index = 0;
  std::size_t total = 0;
  std::string_view what;
};
std::optional<BenchProgressLine> ParseBenchProgressLine(std::string_view line);

}  // namespace moetune
