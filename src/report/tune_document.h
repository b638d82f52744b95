#pragma once
/// The `--report` document of `moetune tune`, composed from the shared pieces
/// (report/report_blocks.h, report/curve_figures.h, report/memory_figures.h):
/// the verdict with the tuned llama-server command and the speed-up over
/// llama.cpp's defaults; speed against N with the cliff, rejections and
/// failures; long context; threads and micro-batch sizes with their
/// intervals; the memory map of the pick; tuned against defaults; every
/// decision with its rule; the machine and engine; the raw measurements and
/// how to reproduce. Render with RenderReport (report/document.h).

#include <string>
#include <vector>

#include "report/document.h"
#include "report/tune_report.h"

namespace moetune {

/// `moetune tune ... --report FILE` (and `moetune report TUNE.json --report
/// FILE`). `invocation` is the command line that wrote the report.
Report TuneDocument(const TuneReport& report, const std::vector<std::string>& invocation);

/// The measurements behind the comparison with llama.cpp's defaults: the
/// latest result of each test for the tuned configuration and for the
/// defaults, with a label for each ("tuned", "llama.cpp defaults").
struct DefaultsMeasurements {
  std::vector<RunResult> results;
  std::vector<std::string> labels;
};
DefaultsMeasurements VersusDefaultsMeasurements(const TuneReport& report);

}  // namespace moetune
