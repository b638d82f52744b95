#include "engine/engine.h"

namespace moetune {

int BenchRun::TotalModelLoads() const {
  int total = 0;
  for (const auto& inv : invocations) {
    if (inv.model_loads < 0) return -1;
    total += inv.model_loads;
  }
  return total;
}

std::size_t BenchRun::FailureCount() const {
  std::size_t n = 0;
  for (const auto& r : results) n += r.ok() ? 0 : 1;
  return n;
}

}  // namespace moetune
