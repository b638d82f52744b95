// libFuzzer target for the parsers of llama.cpp's text output
// (engine/engine_output.h): --version, --list-devices, --help, the
// load_backend lines, llama-bench's progress lines, MiB figures, and
// sysbench's figure (hw/bandwidth_reference.h). Beyond "no crash, no
// sanitizer report, no exception":
//  - every device has a valid name and non-negative, consistent memory figures;
//  - a progress line's index is within 1..total;
//  - a MiB value is non-negative and a whole number of bytes that fits;
//  - parsing is deterministic (the same text twice gives the same result).
// Seeds: tests/fuzz/corpus/engine_output/ (real output of the installed engine).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/engine_output.h"
#include "fuzz_check.h"
#include "hw/bandwidth_reference.h"
#include "util/text.h"

namespace {

using namespace moetune;

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "engine_output_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  EngineInfo a;
  EngineInfo b;
  ParseVersionOutput(text, &a);
  ParseVersionOutput(text, &b);
  Check(a.version_line == b.version_line && a.build_number == b.build_number, "deterministic");
  Check(a.build_number >= -1, "build number -1 or parsed");
  Check(a.version_line.empty() || a.version_line.starts_with("version:"), "version line");

  for (const auto& d : ParseListDevices(text)) {
    Check(!d.name.empty(), "device name");
    Check((d.name[0] >= 'A' && d.name[0] <= 'Z') || (d.name[0] >= 'a' && d.name[0] <= 'z'),
          "device name starts with a letter");
    Check(d.total.has_value() == d.free.has_value(), "total and free together");
    if (d.total) Check(d.total->count() >= 0 && d.free->count() >= 0, "non-negative memory");
  }
  for (const auto& f : ParseHelpFlags(text)) Check(f.size() >= 2 && f[0] == '-', "flag");
  for (const auto& backend : ParseLoadedBackends(text)) Check(!backend.empty(), "backend name");

  for (const std::string_view line : SplitLines(text)) {
    if (const auto p = ParseBenchProgressLine(line)) {
      Check(p->index >= 1 && p->index <= p->total, "progress index in range");
    }
    std::string_view rest = line;
    for (std::string_view w = NextWord(&rest); !w.empty(); w = NextWord(&rest)) {
      if (const auto mib = ParseMiB(w)) Check(mib->count() >= 0, "non-negative MiB");
    }
  }
  if (const auto gbps = ParseSysbenchGbps(text)) Check(*gbps > 0, "positive sysbench figure");
  return 0;
}
