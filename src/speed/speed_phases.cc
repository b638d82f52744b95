#include "speed/speed_phases.h"

#include <algorithm>
#include <cmath>

#include "speed/kv_cache_reads.h"
#include "speed/rpc_link.h"

namespace moetune {
namespace {

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

Rates CpuRates(const CpuSpec& cpu, double ram_gbps, const CalibrationConstants& c,
               const ThreadScaling& t) {
  Rates r;
  const double peak = std::max(1.0, cpu.core_peak_gflops) * 1e9;
  r.bw = std::max(0.1, ram_gbps) * 1e9 * c.cpu_bw_efficiency;
  r.matvec = peak * c.cpu_matvec_efficiency * t.decode;
  r.matmul = peak * c.cpu_matmul_efficiency * t.prefill;
  r.attn_decode = peak * c.cpu_attn_decode_efficiency * t.decode;
  r.attn_prefill = peak * c.cpu_attn_prefill_efficiency * t.prefill;
  r.layer_overhead = c.cpu_layer_overhead_us * 1e-6;
  r.llc_bw_factor = c.llc_bw_factor;
  return r;
}

Rates HostRates(const MachineSpec& m, const CalibrationConstants& c, const ThreadScaling& t) {
  return CpuRates(m.cpu, m.ram.read_gbps, c, t);
}

Rates DeviceRates(const PhaseInputs& in, const DeviceInputs& d) {
  const AcceleratorSpec& a = d.spec;
  const CalibrationConstants& c = *in.c;
  if (a.kind == AcceleratorKind::kRpcCpu) {
    // The server's own CPU and RAM (this machine's on loopback).
    Rates r = a.rpc_cpu ? CpuRates(*a.rpc_cpu, a.mem_bw_gbps, c, d.threads)
                        : HostRates(*in.machine, c, d.threads);
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

// Host-to-device rate of device `d`. `weight_copies`: the scheduler's weight
// copies for op offload, which reach only part of a bandwidth test's rate
// (link_efficiency).
double LinkRate(const PhaseInputs& in, int d, bool pinned, bool weight_copies = false) {
  const AcceleratorSpec& a = in.devices[static_cast<size_t>(d)].spec;
  if (a.kind == AcceleratorKind::kRpcCpu) return RpcPayloadRate(a, *in.c) * 1e9;
  const double g = pinned ? a.link_gbps : a.link_pageable_gbps;
  return std::max(0.1, g) * 1e9 * (weight_copies ? in.c->link_efficiency : 1.0);
}

// Adds the cost of moving `bytes` of activations between device `d` and the
// host, and of the synchronisation that goes with it: PCIe and a handover for
// a GPU, the socket and a graph_compute round trip for an RPC device.
void AddDeviceCrossing(const PhaseInputs& in, int d, double bytes, TimeSplit* t) {
  const AcceleratorSpec& a = in.devices[static_cast<size_t>(d)].spec;
  if (a.kind == AcceleratorKind::kRpcCpu) {
    const RpcLinkTime rt = RpcLinkSeconds(a, *in.c, RpcTraffic{1, bytes});
    t->at(Resource::kHandover) += rt.latency_s;
    t->at(Resource::kLink) += rt.transfer_s;
    return;
  }
  t->at(Resource::kHandover) += in.c->handover_us * 1e-6;
  t->at(Resource::kLink) += bytes / LinkRate(in, d, /*pinned=*/true);
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

// The device switches of a sequence of compute units (kHostDevice: the CPU).
struct Sequence {
  int last = kHostDevice;  // the input embedding is looked up in host memory
  std::vector<std::pair<int, int>> hops;
  void Visit(int d) {
    if (d != last) hops.emplace_back(last, d);
    last = d;
  }
  int switches() const { return static_cast<int>(hops.size()); }
};

// The time of a sequence's switches, each moving `bytes` of hidden state: a
// device's side of every hop is a crossing between it and the host (two
// devices of different backends exchange tensors through host memory).
void AddSwitches(const PhaseInputs& in, const Sequence& seq, double bytes, TimeSplit* t) {
  for (const auto& [from, to] : seq.hops) {
    if (from != kHostDevice) AddDeviceCrossing(in, from, bytes, t);
    if (to != kHostDevice) AddDeviceCrossing(in, to, bytes, t);
  }
}

// What a phase touches on device `d`, for the silent-spill terms.
SpillLoad SpillLoadOf(const PhaseInputs& in, int d, const Work& dev) {
  SpillLoad load;
  load.ubatch = std::max(1, in.run->n_ubatch);
  load.gpu_layers = dev.layers;
  load.attention_layers = dev.kv_layers;
  load.dense_bytes = dev.dense_bytes;
  load.expert_bytes = std::max(0.0, dev.weight_bytes - dev.dense_bytes);
  load.expert_fraction = in.shape->ExpertFraction();
  load.kv_bytes = dev.kv_bytes;
  load.state_bytes = dev.state_bytes;
  load.link_gbps = LinkRate(in, d, /*pinned=*/true) / 1e9;
  load.copy_gbps = LinkRate(in, d, in.run->pinned, /*weight_copies=*/true) / 1e9;
  return load;
}

// Work on the host (index 0) and on each device (index d + 1).
struct Sides {
  std::vector<Work> w;
  explicit Sides(size_t devices) : w(devices + 1) {}
  Work& at(int d) { return w[static_cast<size_t>(d) + 1]; }
  Work& host() { return w[0]; }
};

// Adds every device's work, its silent-spill traffic (`spill_load` fills in
// the phase's own part) and the switches of `seq` to `t`.
template <typename SpillFn>
void AddDevices(const PhaseInputs& in, Sides& sides, bool decode, const SpillFn& spill_time,
                TimeSplit* t) {
  for (size_t d = 0; d < in.devices.size(); ++d) {
    const int di = static_cast<int>(d);
    AddWork(sides.at(di), DeviceRates(in, in.devices[d]), decode, t);
    if (in.devices[d].spill.any()) t->at(Resource::kSpill) += spill_time(di, sides.at(di));
  }
}

// Layer `i`'s share of a token decoded at position `pos`: its weights,
// matmuls, attention and recurrent state on its device or the host, and the
// devices the token visits for it. `frac` is the share of the experts a token
// reads.
void AddDecodeLayer(const PhaseInputs& in, size_t i, double pos, double frac, Sides* sides,
                    Sequence* seq) {
  const LayerShape& L = in.shape->layers[i];
  const LayerResidency& r = in.residency->layers[i];
  const double fd = r.dense_gpu_fraction;
  const double fe = r.expert_gpu_fraction;
  const double dense_b = L.dense.bytes + L.shared.bytes;
  const double dense_p = L.dense.params + L.shared.params;
  const double exp_b = L.experts.bytes * frac;
  const double exp_p = L.experts.params * frac;
  Work& host = sides->host();
  if (r.device != kHostDevice) {
    Work& dev = sides->at(r.device);
    dev.weight_bytes += dense_b * fd;
    dev.dense_bytes += dense_b * fd;
    dev.matmul_flops += 2 * dense_p * fd;
  }
  if (r.expert_device != kHostDevice) {
    Work& dev = sides->at(r.expert_device);
    dev.weight_bytes += exp_b * fe;
    dev.matmul_flops += 2 * exp_p * fe;
  }
  host.weight_bytes += dense_b * (1 - fd) + exp_b * (1 - fe);
  host.matmul_flops += 2 * (dense_p * (1 - fd) + exp_p * (1 - fe));
  // Attention reads the layer's whole cache (KV follows the layer, -kvo).
  Work& kv_side = sides->at(r.device);
  const double cells = Cells(L, pos);
  kv_side.kv_bytes += cells * in.kv_cell_bytes[i];
  if (cells > 0) ++kv_side.kv_layers;
  kv_side.attn_flops += 4.0 * L.n_head * L.head_dim * cells;
  kv_side.state_bytes += 2 * L.state_bytes;  // read and write the recurrent state
  const int dense_dev = fd >= 0.5 ? r.device : kHostDevice;
  seq->Visit(dense_dev);
  ++sides->at(dense_dev).layers;
  if (L.experts.bytes > 0) {
    if (fe > 0 && fe < 1) {
      seq->Visit(r.expert_device);
      seq->Visit(kHostDevice);
      ++host.layers;
    } else {
      const int d = fe >= 1 ? r.expert_device : kHostDevice;
      if (d != dense_dev) ++sides->at(d).layers;
      seq->Visit(d);
    }
  }
}

// The output norm and LM head where they live; a matrix-vector product (one
// output per sequence).
void AddOutput(const PhaseInputs& in, Sides* sides, Sequence* seq) {
  const ModelShape& shape = *in.shape;
  const int out_dev = in.residency->output_device;
  Work& out_side = sides->at(out_dev);
  out_side.weight_bytes += shape.output.bytes;
  out_side.dense_bytes += shape.output.bytes;
  out_side.matmul_flops += 2 * shape.output.params;
  seq->Visit(out_dev);
}

// The logits of one output come back to the host from the device that holds
// the head (an RPC device sends them over its socket: n_vocab floats, which on
// a slow link costs more than the hidden state of every boundary).
void AddLogitsReturn(const PhaseInputs& in, TimeSplit* t) {
  const int out_dev = in.residency->output_device;
  if (out_dev == kHostDevice) return;
  AddDeviceCrossing(in, out_dev, static_cast<double>(in.shape->n_vocab) * 4.0, t);
}

// Layer `i`'s share of a prefill micro-batch of `u` tokens at `depth`: its
// weights and FLOPs where they live (host-resident weights copied to
// `offload_dev` for op offload, adding to `link_bytes`, or computed by the
// CPU), its attention where its cache is, and the devices the batch visits.
void AddPrefillLayer(const PhaseInputs& in, size_t i, int depth, double u, double touched,
                     double frac, int offload_dev, Sides* sides_in, Sequence* seq_in,
                     double* link_bytes_in) {
  Sides& sides = *sides_in;
  Sequence& seq = *seq_in;
  double& link_bytes = *link_bytes_in;
  const bool offload = offload_dev != kHostDevice;
  Work& host = sides.host();
  const LayerShape& L = in.shape->layers[i];
  const LayerResidency& r = in.residency->layers[i];
  const double fd = r.dense_gpu_fraction;
  const double fe = r.expert_gpu_fraction;
  const double dense_b = L.dense.bytes + L.shared.bytes;
  const double dense_f = 2 * u * (L.dense.params + L.shared.params);
  const double exp_b = L.experts.bytes * touched;
  const double exp_f = 2 * u * L.experts.params * frac;
  const double scan_f = 6.0 * u * L.state_bytes / 4;  // recurrent update per state element
  if (r.device != kHostDevice) {
    Work& dev = sides.at(r.device);
    dev.weight_bytes += dense_b * fd;
    dev.dense_bytes += dense_b * fd;
    dev.matmul_flops += dense_f * fd + scan_f * fd;
  }
  if (r.expert_device != kHostDevice) {
    Work& dev = sides.at(r.expert_device);
    dev.weight_bytes += exp_b * fe;
    dev.matmul_flops += exp_f * fe;
  }
  // Host-resident weights: copied to the offloading GPU and computed there
  // (op offload), or computed by the CPU.
  Work& host_side = sides.at(offload_dev);
  if (offload) link_bytes += dense_b * (1 - fd) + exp_b * (1 - fe);
  if (!offload) host.weight_bytes += dense_b * (1 - fd) + exp_b * (1 - fe);
  host_side.matmul_flops += dense_f * (1 - fd) + exp_f * (1 - fe) + scan_f * (1 - fd);
  // Attention stays where the cache is (it has no weights to offload).
  Work& kv_side = sides.at(r.device);
  kv_side.kv_bytes += Cells(L, depth + u) * in.kv_cell_bytes[i];
  if (Cells(L, depth + u) > 0) ++kv_side.kv_layers;
  kv_side.attn_flops += 4.0 * L.n_head * L.head_dim * CellSum(L, depth, depth + u);
  kv_side.state_bytes += 2 * L.state_bytes;
  const bool has_attn =
      L.has_kv && L.attention != AttentionKind::kRecurrent && L.attention != AttentionKind::kNone;
  if (has_attn) seq.Visit(r.device);
  const int dense_dev = fd >= 0.5 ? r.device : offload_dev;
  seq.Visit(dense_dev);
  ++sides.at(dense_dev != kHostDevice ? dense_dev : r.device).layers;
  if (L.experts.bytes > 0) {
    const int d = fe > 0 ? r.expert_device : offload_dev;
    seq.Visit(d);
    if (!offload && fe > 0 && fe < 1) seq.Visit(kHostDevice);
    if (!offload && fe < 1) ++host.layers;
  }
}

}  // namespace

TimeSplit DecodeTokenTime(const PhaseInputs& in, int depth, int* handovers) {
  const ModelShape& shape = *in.shape;
  const double frac = shape.ExpertFraction();
  const double pos = static_cast<double>(depth) + 1;
  Sides sides(in.devices.size());
  Sequence seq;
  for (size_t i = 0; i < shape.layers.size(); ++i) AddDecodeLayer(in, i, pos, frac, &sides, &seq);
  AddOutput(in, &sides, &seq);

  // The host's KV cache is read again by every token: the part that fits in the
  // last-level cache beside the weights the token streams comes from there
  // (speed/kv_cache_reads.h).
  Work& host = sides.host();
  host.kv_llc_bytes =
      SplitKvReads(host.kv_bytes, host.weight_bytes, static_cast<double>(in.machine->cpu.llc_bytes))
          .from_llc;
  TimeSplit t;
  AddWork(host, HostRates(*in.machine, *in.c, in.host), /*decode=*/true, &t);
  if (in.host_overflow > 0) {
    t.at(Resource::kDisk) +=
        host.weight_bytes * in.host_overflow / (in.machine->ram.disk_gbps * 1e9);
  }
  // Silent spill (speed/spill.h): what the token reads from host memory.
  AddDevices(
      in, sides, /*decode=*/true,
      [&](int d, const Work& w) {
        const DeviceInputs& di = in.devices[static_cast<size_t>(d)];
        return DecodeSpillTime(di.spill, SpillLoadOf(in, d, w), di.footprint, *in.c).total();
      },
      &t);
  AddSwitches(in, seq, shape.n_embd * 4.0, &t);
  AddLogitsReturn(in, &t);
  if (handovers != nullptr) *handovers = seq.switches();
  return t;
}

TimeSplit PrefillUbatchTime(const PhaseInputs& in, int depth, int tokens) {
  const ModelShape& shape = *in.shape;
  const double u = std::max(1, tokens);
  const double frac = shape.ExpertFraction();
  const double touched = shape.ExpertsTouched(tokens);
  const int offload_dev = in.offload ? in.offload_device : kHostDevice;
  const bool offload = offload_dev != kHostDevice;
  Sides sides(in.devices.size());
  Work& host = sides.host();
  double link_bytes = 0;
  Sequence seq;
  for (size_t i = 0; i < shape.layers.size(); ++i)
    AddPrefillLayer(in, i, depth, u, touched, frac, offload_dev, &sides, &seq, &link_bytes);
  // Only the last token's logits are computed (llama-bench's prompt batches ask
  // for one output), a matrix-vector product where the head lives.
  AddOutput(in, &sides, &seq);

  TimeSplit t;
  AddWork(host, HostRates(*in.machine, *in.c, in.host), /*decode=*/false, &t);
  if (in.host_overflow > 0) {
    t.at(Resource::kDisk) +=
        (host.weight_bytes + link_bytes) * in.host_overflow / (in.machine->ram.disk_gbps * 1e9);
  }
  if (offload)
    t.at(Resource::kLink) +=
        link_bytes / LinkRate(in, offload_dev, in.run->pinned, /*weight_copies=*/true);
  AddDevices(
      in, sides, /*decode=*/false,
      [&](int d, const Work& w) {
        const DeviceInputs& di = in.devices[static_cast<size_t>(d)];
        SpillLoad load = SpillLoadOf(in, d, w);
        load.tokens = tokens;
        load.offload_bytes = d == offload_dev ? link_bytes : 0;
        return PrefillSpillTime(di.spill, load, di.footprint, *in.c).total();
      },
      &t);
  AddSwitches(in, seq, u * shape.n_embd * 4.0, &t);
  AddLogitsReturn(in, &t);
  return t;
}

}  // namespace moetune
