#pragma once
/// One configuration's measurements as one point: repeated results (several
/// runs, merged files, a resumed journal) pooled into one summary per speed,
/// and the workload's objective with its spread. Analyze builds its curves
/// from these; tune scores its candidates with the same functions.

#include <optional>
#include <string>
#include <vector>

#include "engine/run_config.h"
#include "tune/curve.h"
#include "tune/objective.h"

namespace moetune {

/// The prefill and decode results of one configuration.
struct Cell {
  std::vector<const RunResult*> prefill, decode;
};

/// One summary of the successful results: pooled samples when they have them
/// (ResultStats of the pool), else the one result's statistics. nullopt when
/// none ran. `assumed_n` is set when a result without samples had its number
/// of repetitions assumed.
std::optional<Summary> PoolResults(const std::vector<const RunResult*>& results,
                                   bool* assumed_n = nullptr);

/// Requests/s of `workload` from the two speeds, 1 / (P/pp + A/tg), with its
/// spread by the delta method; the one speed's estimate when only one is known.
std::optional<Estimate> WorkloadObjective(const std::optional<Summary>& prefill,
                                          const std::optional<Summary>& decode,
                                          const Workload& workload);

/// The point of placement `n` from its results: pooled speeds and objective,
/// or the engine's failure ("kind: message") when none ran; nullopt when the
/// cell holds nothing usable and no failure.
std::optional<CurvePoint> PointOf(int n, const Cell& cell, const Workload& workload,
                                  bool* assumed_n = nullptr);

}  // namespace moetune
