#pragma once
/// Where a decoded token's reads of the KV cache come from on the CPU: the
/// last-level cache while the cache fits in it beside the weights the token
/// reads, host RAM beyond that (docs/speed-model.md, "Decode").
///
/// Each decoded token reads every cached cell of every growing layer once
/// (flash attention streams K and V rows; a group of query heads sharing a KV
/// head re-reads its slice right away, from the core's private cache). Between
/// two tokens the same KV cache is read again, so it stays in the last-level
/// cache when `kv + competing <= llc`: the weights the token streams through
/// (dense parts, the routed experts it uses, the output head) compete for the
/// same cache. Beyond that the part of the KV cache that does not fit is read
/// from RAM. The split is continuous at the boundary, the RAM share grows
/// monotonically with the cache, and a zero (unknown) LLC reads everything from
/// RAM, which is the plain bandwidth model.

namespace moetune {

struct KvReadSplit {
  double from_llc = 0;  // bytes per token served by the last-level cache
  double from_ram = 0;  // bytes per token read from host RAM
};

/// `kv_bytes`: KV bytes the token reads on the CPU; `competing_bytes`: other
/// bytes it streams through the same cache; `llc_bytes`: the last-level cache
/// (0 = unknown: everything from RAM). Negative inputs count as zero.
KvReadSplit SplitKvReads(double kv_bytes, double competing_bytes, double llc_bytes);

/// Seconds to read `split` at `ram_rate` bytes/s, the last-level cache serving
/// its share `llc_factor` times faster (a factor <= 1 makes it as slow as RAM).
double KvReadSeconds(const KvReadSplit& split, double ram_rate, double llc_factor);

}  // namespace moetune
