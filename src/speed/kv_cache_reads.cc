#include "speed/kv_cache_reads.h"

#include <algorithm>

namespace moetune {

KvReadSplit SplitKvReads(double kv_bytes, double competing_bytes, double llc_bytes) {
  KvReadSplit s;
  const double kv = std::max(0.0, kv_bytes);
  // The room the KV cache has in the LLC once the token's other reads passed.
  const double room = std::max(0.0, std::max(0.0, llc_bytes) - std::max(0.0, competing_bytes));
  s.from_llc = std::min(kv, room);
  s.from_ram = kv - s.from_llc;
  return s;
}

double KvReadSeconds(const KvReadSplit& split, double ram_rate, double llc_factor) {
  const double rate = std::max(ram_rate, 1.0);
  return split.from_ram / rate + split.from_llc / (rate * std::max(1.0, llc_factor));
}

}  // namespace moetune
