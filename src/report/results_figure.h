#pragma once
/// Tokens/s of every configuration of a benchmark run, one panel per test
/// (pp512, tg128, pp512 @ d8192), configurations side by side with their 95%
/// intervals and failures marked. Used by `bench --report`, where the sweep
/// may vary anything, not only N.

#include <string>
#include <vector>

#include "engine/run_config.h"
#include "report/document.h"

namespace moetune {

struct ResultsFigureOptions {
  std::string id = "results";
  std::string title = "Tokens/s of every configuration";
  /// One label per result naming its configuration; empty: what differs
  /// between them (ConfigurationLabels).
  std::vector<std::string> labels;
  int panel_height = 200;  // of each test's panel (SVG units)
};

/// nullopt-free: a run without results gives a figure with an empty table.
Figure ResultsFigure(const std::vector<RunResult>& results, const ResultsFigureOptions& options);
inline Figure ResultsFigure(const std::vector<RunResult>& results,
                            const std::string& id = "results") {
  ResultsFigureOptions o;
  o.id = id;
  return ResultsFigure(results, o);
}

/// The settings that differ between configurations, as a short label per
/// result ("t=4 N=2"); "all" when nothing differs.
std::vector<std::string> ConfigurationLabels(const std::vector<RunResult>& results);

}  // namespace moetune
