// libFuzzer target for the engine failure classifier (engine/failure.h): the
// engine's log lines are arbitrary bytes. The first input byte picks how the
// process ended (exit code, signal, timeout). Beyond "no crash, no sanitizer
// report": every failure has a kind with a stable name, a non-empty message
// and the exit description; a timeout is always classified as one.
// Seeds: tests/fuzz/corpus/failure/ (real logs of the installed engine).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "engine/failure.h"
#include "fuzz_check.h"
#include "util/text.h"

namespace {

using namespace moetune;

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "failure_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  ExitStatus status;
  const bool timed_out = (mode & 0x80) != 0;
  if (mode & 0x40) {
    status.signal = 1 + (mode & 0x1f);
  } else {
    status.exited = true;
    status.exit_code = mode & 0x3f;
  }
  std::vector<std::string> diagnostics;
  std::deque<std::string> tail;
  for (const std::string_view line : SplitLines(text)) {
    if (IsNoiseLine(line)) continue;
    if (IsDiagnosticLine(line)) diagnostics.emplace_back(line);
    tail.emplace_back(line);
    if (tail.size() > 40) tail.pop_front();
  }
  const EngineFailure f = ClassifyFailure(status, timed_out, 1.5, diagnostics, tail);
  Check(std::strcmp(FailureKindName(f.kind), "unknown") != 0, "a named kind");
  Check(!f.message.empty(), "a message");
  Check(f.exit == status.Describe(), "the exit as described");
  if (timed_out) Check(f.kind == FailureKind::kTimeout, "a timeout is a timeout");
  return 0;
}
