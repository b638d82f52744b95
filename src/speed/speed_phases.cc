#include "speed/speed_phases.h"

#include <algorithm>
#include <cmath>

#include "speed/kv_cache_reads.h"

namespace moetune {
namespace {

enum class Dev { kHost, kAccel };

// Rates of one device, in bytes/s and FLOP/s.
struct Rates {
  double bw = 1;
  double matvec = 1;
  double matmul = 1;
  double attn_decode = 1;
  double attn_prefill = 1;
  double layer_overhead = 0;  // seconds per layer with work
  double llc_bw_factor = 1;   // last-level cache read rate / bw (host caches)
  bool gpu = false;
};

Rates HostRates(const MachineSpec& m, const CalibrationConstants& c, const ThreadScaling& t) {
  Rates r;
  const double peak = std::max(1.0, m.cpu.core_peak_gflops) * 1e9;
  r.bw = std::max(0.1, m.ram.read_gbps) * 1e9 * c.cpu_bw_efficiency;
  r.matvec = peak * c.cpu_matvec_efficiency * t.decode;
  r.matmul = peak * c.cpu_matmul_efficiency * t.prefill;
  r.attn_decode = peak * c.cpu_attn_decode_efficiency * t.decode;
  r.attn_prefill = peak * c.cpu_attn_prefill_efficiency * t.prefill;
  r.layer_overhead = c.cpu_layer_overhead_us * 1e-6;
  r.llc_bw_factor = c.llc_bw_factor;
  return r;
}

Rates AccelRates(const PhaseInputs& in) {
  const AcceleratorSpec& a = *in.machine->accel;
  const CalibrationConstants& c = *in.c;
  if (a.kind == AcceleratorKind::kRpcCpu) {
    Rates r = HostRates(*in.machine, c, in.device);
    r.layer_overhead = c.rpc_layer_overhead_us * 1e-6;
    return r;
  }
  Rates r;
  r.gpu = true;
  r.bw = std::max(1.0, a.mem_bw_gbps) * 1e9 * c.gpu_bw_efficiency;
  const double flops = std::max(0.1, a.fp16_tflops) * 1e12 * c.gpu_compute_efficiency;
  r.matvec = r.matmul = r.attn_decode = r.attn_prefill = flops;
  r.layer_overhead = c.gpu_layer_overhead_us * 1e-6;
  return r;
}

// Host-to-device rate. `weight_copies`: the scheduler's weight copies for op
// offload, which reach only part of a bandwidth test's rate (link_efficiency).
double LinkRate(const PhaseInputs& in, bool pinned, bool weight_copies = false) {
  const AcceleratorSpec& a = *in.machine->accel;
  if (a.kind == AcceleratorKind::kRpcCpu) return std::max(0.01, in.c->rpc_link_gbps) * 1e9;
  const double g = pinned ? a.link_gbps : a.link_pageable_gbps;
  return std::max(0.1, g) * 1e9 * (weight_copies ? in.c->link_efficiency : 1.0);
}

double HandoverLatency(const PhaseInputs& in) {
  const AcceleratorSpec& a = *in.machine->accel;
  return (a.kind == AcceleratorKind::kRpcCpu ? in.c->rpc_handover_us : in.c->handover_us) * 1e-6;
}

// Cached tokens a query at position `pos` (1-based, itself included) attends to.
double Cells(const LayerShape& L, double pos) {
  if (!L.has_kv) return 0;
  switch (L.attention) {
    case AttentionKind::kFull:
    case AttentionKind::kMla:
      return pos;
    case AttentionKind::kSlidingWindow:
    case AttentionKind::kChunked:
      return std::min(pos, static_cast<double>(std::max<uint32_t>(L.window, 1)));
    case AttentionKind::kRecurrent:
    case AttentionKind::kNone:
      break;
  }
  return 0;
}

// Sum of Cells() for positions a+1 .. b.
double CellSum(const LayerShape& L, double a, double b) {
  if (b <= a || !L.has_kv) return 0;
  auto tri = [](double x, double y) { return (x + 1 + y) * (y - x) / 2; };  // sum x+1..y
  switch (L.attention) {
    case AttentionKind::kFull:
    case AttentionKind::kMla:
      return tri(a, b);
    case AttentionKind::kSlidingWindow:
    case AttentionKind::kChunked: {
      const double w = std::max<uint32_t>(L.window, 1);
      if (b <= w) return tri(a, b);
      if (a >= w) return (b - a) * w;
      return tri(a, w) + (b - w) * w;
    }
    case AttentionKind::kRecurrent:
    case AttentionKind::kNone:
      break;
  }
  return 0;
}

// Work accumulated on one device.
struct Work {
  double weight_bytes = 0;
  double matmul_flops = 0;
  double kv_bytes = 0;
  double attn_flops = 0;
  double state_bytes = 0;
  int layers = 0;
  double kv_llc_bytes = 0;  // share of kv_bytes served by the last-level cache (host decode)
  double dense_bytes = 0;   // the part of weight_bytes that is not routed experts
  int kv_layers = 0;        // layers whose attention reads a cache here
};

// Adds `w` on a device to `split`. Memory traffic and arithmetic overlap: the
// time is a smooth maximum of the two (cube root of the sum of cubes: the
// slower side dominates, the other still costs a little where they are close),
// attributed to the slower side.
void AddWork(const Work& w, const Rates& r, bool decode, TimeSplit* split) {
  const Resource mem = r.gpu ? Resource::kVramBandwidth : Resource::kRamBandwidth;
  const Resource cmp = r.gpu ? Resource::kGpuCompute : Resource::kCpuCompute;
  auto add_max = [&](double mem_s, double cmp_s) {
    const double t = std::cbrt(mem_s * mem_s * mem_s + cmp_s * cmp_s * cmp_s);
    split->at(mem_s >= cmp_s ? mem : cmp) += t;
  };
  add_max(w.weight_bytes / r.bw, w.matmul_flops / (decode ? r.matvec : r.matmul));
  const double kv_s =
      KvReadSeconds({w.kv_llc_bytes, w.kv_bytes - w.kv_llc_bytes}, r.bw, r.llc_bw_factor);
  add_max(kv_s, w.attn_flops / (decode ? r.attn_decode : r.attn_prefill));
  split->at(mem) += w.state_bytes / r.bw;
  split->at(Resource::kOverhead) += w.layers * r.layer_overhead;
}

// Counts device switches in a sequence of compute units.
struct Sequence {
  Dev last = Dev::kHost;  // the input embedding is looked up in host memory
  int switches = 0;
  void Visit(Dev d) {
    if (d != last) ++switches;
    last = d;
  }
};

// What a phase touches on the accelerator, for the silent-spill terms.
SpillLoad SpillLoadOf(const PhaseInputs& in, const Work& dev) {
  SpillLoad load;
  load.ubatch = std::max(1, in.run->n_ubatch);
  load.gpu_layers = dev.layers;
  load.attention_layers = dev.kv_layers;
  load.dense_bytes = dev.dense_bytes;
  load.expert_bytes = std::max(0.0, dev.weight_bytes - dev.dense_bytes);
  load.expert_fraction = in.shape->ExpertFraction();
  load.kv_bytes = dev.kv_bytes;
  load.state_bytes = dev.state_bytes;
  load.link_gbps = LinkRate(in, /*pinned=*/true) / 1e9;
  load.copy_gbps = LinkRate(in, in.run->pinned, /*weight_copies=*/true) / 1e9;
  return load;
}

// Layer `i`'s share of a token decoded at position `pos`: its weights,
// matmuls, attention and recurrent state on the device or the host, and the
// devices the token visits for it. `frac` is the share of the experts a token
// reads.
void AddDecodeLayer(const PhaseInputs& in, size_t i, double pos, bool accel, double frac,
                    Work* host, Work* dev, Sequence* seq) {
  const LayerShape& L = in.shape->layers[i];
  const LayerResidency& r = in.residency->layers[i];
  const double fd = accel ? r.dense_gpu_fraction : 0;
  const double fe = accel ? r.expert_gpu_fraction : 0;
  const double dense_b = L.dense.bytes + L.shared.bytes;
  const double dense_p = L.dense.params + L.shared.params;
  const double exp_b = L.experts.bytes * frac;
  const double exp_p = L.experts.params * frac;
  dev->weight_bytes += dense_b * fd + exp_b * fe;
  dev->dense_bytes += dense_b * fd;
  dev->matmul_flops += 2 * (dense_p * fd + exp_p * fe);
  host->weight_bytes += dense_b * (1 - fd) + exp_b * (1 - fe);
  host->matmul_flops += 2 * (dense_p * (1 - fd) + exp_p * (1 - fe));
  // Attention reads the layer's whole cache (KV follows the layer, -kvo).
  Work& kv_side = accel && r.layer_on_gpu ? *dev : *host;
  const double cells = Cells(L, pos);
  kv_side.kv_bytes += cells * in.kv_cell_bytes[i];
  if (cells > 0) ++kv_side.kv_layers;
  kv_side.attn_flops += 4.0 * L.n_head * L.head_dim * cells;
  kv_side.state_bytes += 2 * L.state_bytes;  // read and write the recurrent state
  const Dev dense_dev = fd >= 0.5 ? Dev::kAccel : Dev::kHost;
  seq->Visit(dense_dev);
  if (dense_dev == Dev::kAccel)
    ++dev->layers;
  else
    ++host->layers;
  if (L.experts.bytes > 0) {
    if (fe > 0 && fe < 1) {
      seq->Visit(Dev::kAccel);
      seq->Visit(Dev::kHost);
      ++host->layers;
    } else {
      const Dev d = fe >= 1 ? Dev::kAccel : Dev::kHost;
      if (d != dense_dev) ++(d == Dev::kAccel ? dev->layers : host->layers);
      seq->Visit(d);
    }
  }
}

}  // namespace

TimeSplit DecodeTokenTime(const PhaseInputs& in, int depth, int* handovers) {
  const ModelShape& shape = *in.shape;
  const Residency& res = *in.residency;
  const bool accel = in.machine->accel.has_value();
  const double frac = shape.ExpertFraction();
  const double pos = static_cast<double>(depth) + 1;
  Work host, dev;
  Sequence seq;
  for (size_t i = 0; i < shape.layers.size(); ++i) {
    AddDecodeLayer(in, i, pos, accel, frac, &host, &dev, &seq);
  }
  // Output norm + LM head.
  Work& out_side = accel && res.output_on_gpu ? dev : host;
  out_side.weight_bytes += shape.output.bytes;
  out_side.dense_bytes += shape.output.bytes;
  out_side.matmul_flops += 2 * shape.output.params;
  seq.Visit(accel && res.output_on_gpu ? Dev::kAccel : Dev::kHost);

  // The host's KV cache is read again by every token: the part that fits in the
  // last-level cache beside the weights the token streams comes from there
  // (speed/kv_cache_reads.h).
  host.kv_llc_bytes =
      SplitKvReads(host.kv_bytes, host.weight_bytes, static_cast<double>(in.machine->cpu.llc_bytes))
          .from_llc;
  TimeSplit t;
  const Rates hr = HostRates(*in.machine, *in.c, in.host);
  AddWork(host, hr, /*decode=*/true, &t);
  if (in.host_overflow > 0) {
    t.at(Resource::kDisk) +=
        host.weight_bytes * in.host_overflow / (in.machine->ram.disk_gbps * 1e9);
  }
  int switches = 0;
  if (accel) {
    const Rates ar = AccelRates(in);
    AddWork(dev, ar, /*decode=*/true, &t);
    switches = seq.switches + std::max(0, in.machine->accel->count - 1);
    const double link = LinkRate(in, /*pinned=*/true);
    t.at(Resource::kHandover) += switches * HandoverLatency(in);
    t.at(Resource::kLink) += switches * shape.n_embd * 4.0 / link;
    // Silent spill (speed/spill.h): what the token reads from host memory.
    if (in.spill.any()) {
      SpillLoad load = SpillLoadOf(in, dev);
      t.at(Resource::kSpill) += DecodeSpillTime(in.spill, load, in.footprint, *in.c).total();
    }
  }
  if (handovers != nullptr) *handovers = switches;
  return t;
}

TimeSplit PrefillUbatchTime(const PhaseInputs& in, int depth, int tokens) {
  const ModelShape& shape = *in.shape;
  const Residency& res = *in.residency;
  const bool accel = in.machine->accel.has_value();
  const double u = std::max(1, tokens);
  const double frac = shape.ExpertFraction();
  const double touched = shape.ExpertsTouched(tokens);
  const bool offload = accel && in.offload;
  Work host, dev;
  double link_bytes = 0;
  Sequence seq;
  for (size_t i = 0; i < shape.layers.size(); ++i) {
    const LayerShape& L = shape.layers[i];
    const LayerResidency& r = res.layers[i];
    const double fd = accel ? r.dense_gpu_fraction : 0;
    const double fe = accel ? r.expert_gpu_fraction : 0;
    const double dense_b = L.dense.bytes + L.shared.bytes;
    const double dense_f = 2 * u * (L.dense.params + L.shared.params);
    const double exp_b = L.experts.bytes * touched;
    const double exp_f = 2 * u * L.experts.params * frac;
    const double scan_f = 6.0 * u * L.state_bytes / 4;  // recurrent update per state element
    dev.weight_bytes += dense_b * fd + exp_b * fe;
    dev.dense_bytes += dense_b * fd;
    dev.matmul_flops += dense_f * fd + exp_f * fe + scan_f * fd;
    // Host-resident weights: copied to the GPU and computed there (op offload),
    // or computed by the CPU.
    Work& host_side = offload ? dev : host;
    if (offload) link_bytes += dense_b * (1 - fd) + exp_b * (1 - fe);
    if (!offload) host.weight_bytes += dense_b * (1 - fd) + exp_b * (1 - fe);
    host_side.matmul_flops += dense_f * (1 - fd) + exp_f * (1 - fe) + scan_f * (1 - fd);
    // Attention stays where the cache is (it has no weights to offload).
    const bool kv_dev = accel && r.layer_on_gpu;
    Work& kv_side = kv_dev ? dev : host;
    kv_side.kv_bytes += Cells(L, depth + u) * in.kv_cell_bytes[i];
    if (Cells(L, depth + u) > 0) ++kv_side.kv_layers;
    kv_side.attn_flops += 4.0 * L.n_head * L.head_dim * CellSum(L, depth, depth + u);
    kv_side.state_bytes += 2 * L.state_bytes;
    const bool has_attn =
        L.has_kv && L.attention != AttentionKind::kRecurrent && L.attention != AttentionKind::kNone;
    if (has_attn) seq.Visit(kv_dev ? Dev::kAccel : Dev::kHost);
    const Dev dense_dev = offload || fd >= 0.5 ? Dev::kAccel : Dev::kHost;
    seq.Visit(dense_dev);
    ++(dense_dev == Dev::kAccel || kv_dev ? dev.layers : host.layers);
    if (L.experts.bytes > 0) {
      const Dev d = offload || fe >= 1 ? Dev::kAccel : (fe > 0 ? Dev::kAccel : Dev::kHost);
      seq.Visit(d);
      if (!offload && fe > 0 && fe < 1) seq.Visit(Dev::kHost);
      if (!offload && fe < 1) ++host.layers;
    }
  }
  // Only the last token's logits are computed (llama-bench's prompt batches ask
  // for one output), a matrix-vector product where the head lives.
  const bool out_dev = accel && res.output_on_gpu;
  Work& out_side = out_dev ? dev : host;
  out_side.weight_bytes += shape.output.bytes;
  out_side.dense_bytes += shape.output.bytes;
  out_side.matmul_flops += 2 * shape.output.params;
  seq.Visit(out_dev ? Dev::kAccel : Dev::kHost);

  TimeSplit t;
  AddWork(host, HostRates(*in.machine, *in.c, in.host), /*decode=*/false, &t);
  if (in.host_overflow > 0) {
    t.at(Resource::kDisk) +=
        (host.weight_bytes + link_bytes) * in.host_overflow / (in.machine->ram.disk_gbps * 1e9);
  }
  if (accel) {
    AddWork(dev, AccelRates(in), /*decode=*/false, &t);
    t.at(Resource::kLink) += link_bytes / LinkRate(in, in.run->pinned, /*weight_copies=*/true);
    const int switches = seq.switches + std::max(0, in.machine->accel->count - 1);
    t.at(Resource::kHandover) += switches * HandoverLatency(in);
    t.at(Resource::kLink) += switches * u * shape.n_embd * 4.0 / LinkRate(in, true);
    if (in.spill.any()) {
      SpillLoad load = SpillLoadOf(in, dev);
      load.tokens = tokens;
      load.offload_bytes = link_bytes;
      t.at(Resource::kSpill) += PrefillSpillTime(in.spill, load, in.footprint, *in.c).total();
    }
  }
  return t;
}

}  // namespace moetune
