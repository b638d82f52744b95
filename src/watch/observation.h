#pragma once
/// The unit of evidence for the overflow rule: the prefill and decode work
/// seen in one request (from a log) or one sampling interval (live), with the
/// context depth it ran at. Live watch, `watch --log` and the recorded traces
/// in tests/fixtures/watch all become a sequence of these, so one detector
/// judges them all the same way.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "util/result.h"

namespace moetune {

/// Tokens processed and the server's own time for them.
struct WorkSample {
  double tokens = 0;
  double seconds = 0;
  /// Mid depth of the work: tokens already in the context halfway through it.
  std::optional<double> depth;
  double rate() const { return seconds > 0 ? tokens / seconds : 0; }
};

struct Observation {
  double time_s = 0;  // since the session started
  std::optional<WorkSample> prefill;
  std::optional<WorkSample> decode;
  /// More than one slot was busy: per-request speeds are shared and not
  /// comparable with a single-sequence baseline.
  bool concurrent = false;
};

/// The trace format (one JSON object per line): `{"t": seconds, "prefill":
/// {"tokens", "seconds", "depth"}, "decode": {...}, "concurrent": bool}`. The
/// sample lines of `moetune watch --json` carry these fields, so a recorded
/// watch output is a trace.
nlohmann::json ObservationJson(const Observation& o);
/// Reads an observation from a trace line; lines without prefill or decode
/// work give an observation with neither (an idle interval).
Result<Observation> ObservationFromJson(const nlohmann::json& j);

}  // namespace moetune
