#pragma once
/// Each command lives in its own file under src/cli and registers a CLI11
/// subcommand. The callback it installs stores the work to run in `*run`;
/// main() runs it after parsing and maps the result to an exit code.

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/llama_bench.h"
#include "util/result.h"

namespace moetune {

/// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;           // the command failed (message on stderr)
inline constexpr int kExitUsage = 2;           // bad command line
inline constexpr int kExitNothingFits = 3;     // plan: no placement fits the GPU (no command)
inline constexpr int kExitCheckDisagrees = 4;  // plan --check: a prediction is out of tolerance

using CommandRun = std::function<int()>;

/// Prints "moetune: error: <message>" (plus kind) on stderr; returns kExitError.
int ReportError(const Error& error);

/// Writes `text` to stdout when `path` is "-" or empty, else to `path` with
/// util/output_file.h (atomic for regular files, through for special files,
/// never onto one of `inputs` or another output of the command; `role` names
/// the flag in messages and in util/command_files.h).
Status WriteOutput(const std::string& path, const std::string& text,
                   const std::vector<std::string>& inputs = {}, std::string_view role = "-o");

/// Claims the output files named on the command line of the chosen command
/// (`-o`, `--report`, tune's `--journal`, doctor's `--profile`, serve's
/// `--server-log`) in util/command_files.h before any work starts, so that
/// two outputs on one file (`--report r.html -o r.html`) are a bad command
/// line, and reading an input that is one of them is refused before
/// anything is written. Writers claim their file again when they write (the
/// rule holds for default paths too).
Status ClaimOutputFlags(const CLI::App& app);

/// `j` as indented JSON text (with a newline) that is always valid UTF-8; says
/// on stderr when invalid bytes had to be replaced.
std::string JsonOutput(const nlohmann::json& j);

/// The llama-bench command lines that would measure `configs`, one a line
/// (`--dry-run`).
std::string InvocationLines(const LlamaBenchEngine& bench, const std::vector<RunConfig>& configs);

/// A progress callback that redraws one line on stderr (FormatProgressLine).
ProgressCallback TerminalProgress();

// One Register<Name>Command(CLI::App&, CommandRun*) per command, below.
void RegisterInspectCommand(CLI::App& app, CommandRun* run);
void RegisterPlanCommand(CLI::App& app, CommandRun* run);
void RegisterSynthCommand(CLI::App& app, CommandRun* run);
void RegisterBenchCommand(CLI::App& app, CommandRun* run);
void RegisterEngineCommand(CLI::App& app, CommandRun* run);
void RegisterDemoCommand(CLI::App& app, CommandRun* run);
void RegisterDoctorCommand(CLI::App& app, CommandRun* run);
void RegisterAnalyzeCommand(CLI::App& app, CommandRun* run);
void RegisterTuneCommand(CLI::App& app, CommandRun* run);
void RegisterCalibrateCommand(CLI::App& app, CommandRun* run);
void RegisterMachinesCommand(CLI::App& app, CommandRun* run);
void RegisterWatchCommand(CLI::App& app, CommandRun* run);
void RegisterServeCommand(CLI::App& app, CommandRun* run);
void RegisterReportCommand(CLI::App& app, CommandRun* run);
void RegisterModelsCommand(CLI::App& app, CommandRun* run);

}  // namespace moetune
