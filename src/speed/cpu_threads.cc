#include "speed/cpu_threads.h"

#include <algorithm>
#include <cmath>

namespace moetune {

ThreadScaling ScaleThreads(const CpuSpec& cpu, int threads, const CalibrationConstants& c) {
  ThreadScaling s;
  const int t = std::max(1, threads);
  const int p = std::max(1, cpu.p_cores);
  const int e = std::max(0, cpu.e_cores);
  const int siblings = p * (std::max(1, cpu.smt) - 1);
  // Where the OS puts the threads (llama.cpp does not pin by default; Linux and
  // Windows fill idle physical cores before second hardware threads, and Intel's
  // Thread Director prefers P-cores for busy threads).
  s.on_p_cores = std::min(t, p);
  s.on_e_cores = std::min(t - s.on_p_cores, e);
  s.smt_siblings = std::min(t - s.on_p_cores - s.on_e_cores, siblings);
  int placed = s.on_p_cores + s.on_e_cores + s.smt_siblings;
  // A cgroup quota below the CPU count caps the CPU time the threads get.
  double capacity = static_cast<double>(placed);
  if (cpu.quota && *cpu.quota > 0 && *cpu.quota < capacity) capacity = *cpu.quota;
  s.oversubscribed = t - placed;
  const double e_rel = std::clamp(cpu.e_core_relative, 0.05, 1.0);
  // A core with two busy hardware threads delivers 1 + smt_gain; each thread on it
  // runs at half that.
  const double smt_pair = (1.0 + c.smt_gain) / 2.0;
  double sum = 0, slowest = 1.0;
  for (int i = 0; i < s.on_p_cores; ++i) {
    const bool shared = i < s.smt_siblings;
    sum += shared ? 2 * smt_pair : 1.0;
    if (shared) slowest = std::min(slowest, smt_pair);
  }
  if (s.on_e_cores > 0) {
    sum += s.on_e_cores * e_rel;
    slowest = std::min(slowest, e_rel);
  }
  // Dynamic chunks: speeds add up. Barriers: every thread waits for the slowest.
  const double w_dynamic = sum;
  const double w_barrier = placed * slowest;
  const double w_prefill = w_dynamic;
  const double w_decode = 0.5 * w_dynamic + 0.5 * w_barrier;
  auto scale = [&](double w, double eff) {
    // eff < 0 is allowed: on a machine shared with busy processes each added
    // thread makes the others wait at every barrier (docs/speed-model.md).
    double v = 1.0 + (w - 1.0) * eff;
    // CPU time beyond the quota or the CPUs: threads take turns, and a thread
    // that is not running holds every barrier.
    const double want = std::max(1.0, static_cast<double>(t));
    const double have = std::min(capacity, static_cast<double>(placed));
    if (want > have) v *= std::pow(have / want, 2.0);
    return std::max(v, 0.05);
  };
  s.prefill = scale(w_prefill, c.thread_efficiency_prefill);
  s.decode = scale(w_decode, c.thread_efficiency_decode);
  s.noise_cv = 0.015;
  if (s.smt_siblings > 0) s.noise_cv += 0.04;
  if (s.on_e_cores > 0) s.noise_cv += 0.025;
  if (t > capacity) s.noise_cv += 0.12;
  return s;
}

}  // namespace moetune
