#pragma once
/// CLI11 validators built on moetune's own parsers, so that a bad value is a
/// bad command line (exit 2) whose message names the flag, the value and the
/// accepted forms, before any work starts.

#include <CLI/CLI.hpp>
#include <cstdint>

namespace moetune {

/// A context length ("32768", "32K") within [min, max] tokens.
CLI::Validator TokenCount(int64_t min, int64_t max);
/// A size ("12GiB", "11500MiB", "0") within [min, max] bytes.
CLI::Validator ByteSize(int64_t min, int64_t max);
/// A workload: chat, agent or PROMPT:ANSWER.
CLI::Validator WorkloadName();
/// A llama-bench style list ("1,2,4", "1-8", "0-8+2") of values within [min, max],
/// at most `max_items` of them.
CLI::Validator IntList(int min, int max, int max_items = 1000);
/// A duration in seconds ("5", "0.5") within [min, max].
CLI::Validator Seconds(double min, double max);
/// An integer within [min, max] ("accepted range MIN to MAX" in the message).
CLI::Validator IntRange(int64_t min, int64_t max);

}  // namespace moetune
