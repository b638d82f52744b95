#include "hw/bandwidth_reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "util/subprocess.h"
#include "util/text.h"
#include "util/units.h"

namespace moetune {

std::optional<double> ParseSysbenchGbps(std::string_view text) {
  // "4096.00 MiB transferred (16351.90 MiB/sec)"
  constexpr std::string_view kUnit = " MiB/sec)";
  const std::size_t end = text.find(kUnit);
  if (end == std::string_view::npos) return std::nullopt;
  const std::size_t open = text.rfind('(', end);
  if (open == std::string_view::npos) return std::nullopt;
  const auto mib = ParseDouble(Trim(text.substr(open + 1, end - open - 1)));
  if (!mib || *mib <= 0) return std::nullopt;
  return *mib * 1048576.0 / 1e9;
}

Result<SysbenchReference> RunSysbenchRead(int threads, int64_t block_bytes, int rounds) {
  MOETUNE_ASSIGN_OR_RETURN(const std::string sysbench, ResolveProgram("sysbench"));
  SysbenchReference ref;
  ref.threads = std::max(1, threads);
  // sysbench takes only a power of two as the block size ("FATAL: Invalid
  // value for memory-block-size" otherwise: a 105 MiB last-level cache made
  // doctor's 840 MiB buffer one): the next power of two, at most 2 GiB.
  int64_t block_mib = 1;
  while (block_mib < std::min<int64_t>(block_bytes >> 20, 2048)) block_mib *= 2;
  ref.command = {sysbench,
                 "memory",
                 "--memory-oper=read",
                 fmt::format("--memory-block-size={}M", block_mib),
                 fmt::format("--memory-total-size={}M", 4 * block_mib),
                 fmt::format("--threads={}", ref.threads),
                 "run"};
  for (int i = 0; i < std::max(1, rounds); ++i) {
    RunOptions o;
    o.spawn.argv = ref.command;
    o.timeout = std::chrono::milliseconds(60000);
    MOETUNE_ASSIGN_OR_RETURN(RunOutput out, RunProcess(o));
    if (!out.status.success() || out.timed_out) {
      // sysbench says why on stdout ("FATAL: ..."), not on stderr.
      std::string said = out.stderr_tail.empty() ? std::string() : out.stderr_tail.back();
      for (const auto line : SplitLines(out.stdout_text)) {
        if (said.empty() && Trim(line).starts_with("FATAL")) said = Truncate(Trim(line), 200);
      }
      return Error(ErrorKind::kEngine,
                   fmt::format("sysbench failed ({}): {}", out.status.Describe(), said));
    }
    const auto gbps = ParseSysbenchGbps(out.stdout_text);
    if (!gbps) {
      return Error(ErrorKind::kFormat, "sysbench printed no 'MiB/sec' figure");
    }
    ref.read_gbps = std::max(ref.read_gbps, *gbps);
    ++ref.rounds;
  }
  return ref;
}

DecodeReference MakeDecodeReference(double tokens_per_second, int64_t bytes_per_token,
                                    int64_t model_bytes, int64_t llc_bytes, int threads,
                                    std::vector<std::string> command) {
  DecodeReference d;
  d.tokens_per_second = tokens_per_second;
  d.bytes_per_token = bytes_per_token;
  d.gbps = tokens_per_second * static_cast<double>(bytes_per_token) / 1e9;
  d.threads = threads;
  d.command = std::move(command);
  if (llc_bytes > 0 && model_bytes < 4 * llc_bytes) {
    d.note = fmt::format(
        "the model ({}) is not much larger than the last-level cache ({}): part of its weights "
        "are read from the cache, so this figure can exceed RAM bandwidth",
        FormatBytes(Bytes(model_bytes)), FormatBytes(Bytes(llc_bytes)));
  }
  return d;
}

}  // namespace moetune
