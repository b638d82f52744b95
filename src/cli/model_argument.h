#pragma once
/// The MODEL argument of every command that reads a model (inspect, plan,
/// tune, bench, calibrate, serve, doctor --model): resolved in one place,
/// before the command runs, by store/reference.h.

#include <CLI/CLI.hpp>
#include <string>

#include "cli/command.h"

namespace moetune {

/// `run`, preceded by resolving `*model` in place: a reference
/// (ollama:NAME[:TAG], hf:ORG/REPO[:QUANT], lmstudio:PUBLISHER/MODEL[:QUANT])
/// becomes the local file it names, with a note on stderr saying which; a path
/// stays exactly as given; an empty string (an optional model not given) is
/// left alone. A reference that does not resolve is reported (exit 1) and
/// `run` does not run. `model` must outlive the returned function.
CommandRun WithModel(std::string* model, CommandRun run);

/// A CLI11 check for a MODEL that must exist when the command line is read:
/// an existing path or a well-formed reference (resolved later by WithModel).
CLI::Validator ExistingModel();

}  // namespace moetune
