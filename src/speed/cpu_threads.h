#pragma once
/// How much CPU throughput `-t N` threads deliver on a topology: threads go to
/// performance cores first, then efficiency cores, then second hardware threads
/// of performance cores (SMT siblings share one core's execution units), then
/// oversubscribe. ggml splits most operators evenly across threads and waits at
/// a barrier after each, so the slowest thread sets the pace; matrix products
/// hand out chunks dynamically, so there the threads' speeds add up.

#include "speed/calibration.h"
#include "speed/machine_spec.h"

namespace moetune {

struct ThreadScaling {
  /// Throughput relative to one thread on one idle performance core.
  double prefill = 1;  // batched work: matmuls dominate (dynamic chunks)
  double decode = 1;   // one token: many small operators, one barrier each
  /// Relative spread (coefficient of variation) of repeated measurements that
  /// this thread placement adds: SMT siblings, mixed core kinds, oversubscription.
  double noise_cv = 0.02;
  int on_p_cores = 0;
  int on_e_cores = 0;
  int smt_siblings = 0;
  int oversubscribed = 0;  // threads beyond the CPUs (or quota) available
};

/// Scaling of `threads` threads on `cpu` with the calibrated efficiencies.
ThreadScaling ScaleThreads(const CpuSpec& cpu, int threads, const CalibrationConstants& c);

}  // namespace moetune
