#include "speed/speed_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gguf/ggml_type.h"
#include "speed/gpu_footprint.h"
#include "speed/speed_phases.h"
#include "speed/spill.h"

namespace moetune {

const char* ResourceName(Resource r) {
  switch (r) {
    case Resource::kVramBandwidth:
      return "vram_bandwidth";
    case Resource::kGpuCompute:
      return "gpu_compute";
    case Resource::kRamBandwidth:
      return "ram_bandwidth";
    case Resource::kCpuCompute:
      return "cpu_compute";
    case Resource::kLink:
      return "pcie";
    case Resource::kHandover:
      return "handover";
    case Resource::kOverhead:
      return "launch_overhead";
    case Resource::kSpill:
      return "spill";
    case Resource::kDisk:
      return "disk";
  }
  return "unknown";
}

double TimeSplit::total() const {
  double s = 0;
  for (double v : seconds) s += v;
  return s;
}

Resource TimeSplit::binding() const {
  size_t best = 0;
  for (size_t i = 1; i < seconds.size(); ++i) {
    if (seconds[i] > seconds[best]) best = i;
  }
  return static_cast<Resource>(best);
}

TimeSplit& TimeSplit::operator+=(const TimeSplit& o) {
  for (size_t i = 0; i < seconds.size(); ++i) seconds[i] += o.seconds[i];
  return *this;
}

TimeSplit TimeSplit::Scaled(double k) const {
  TimeSplit t = *this;
  for (double& v : t.seconds) v *= k;
  return t;
}

bool LoadModeIsPinned(const std::string& load_mode) {
  // llama-bench -lm: "none" and "dio" read the file into buffers the backend
  // allocates (CUDA_Host, pinned, when a GPU is present); "mlock" without mmap
  // does too. The mmap modes leave weights in pageable page-cache memory.
  return load_mode == "none" || load_mode == "dio" || load_mode == "mlock";
}

// A placement's weights over the machine's devices and the residency of its
// tensors, resolved once per placement (SpeedModel::placements_).
struct PlacementMemo {
  struct Entry {
    WeightPlacement placement;
    std::vector<size_t> order;
    Residency residency;
  };
  std::map<std::string, Entry> entries;
  // Beyond this many placements the memo starts again (a tune or grid uses a
  // few hundred; this bounds a long-lived simulated engine).
  static constexpr size_t kMaxEntries = 4096;
};

SpeedModel::SpeedModel(const ModelInfo& model, MachineSpec machine, CalibrationConstants constants)
    : model_(model),
      shape_(BuildModelShape(model)),
      machine_(std::move(machine)),
      constants_(constants),
      plans_(std::make_shared<FootprintPlans>()),
      placements_(std::make_shared<PlacementMemo>()) {}

namespace {

double KvCellBytes(uint32_t type, uint32_t n) {
  if (n == 0) return 0;
  auto t = GgmlTypeById(type);
  if (!t || t->block_size == 0) return 2.0 * n;
  // Whole blocks: a row of n values takes ceil(n / block) blocks.
  const uint64_t blocks = (uint64_t{n} + t->block_size - 1) / t->block_size;
  return static_cast<double>(blocks * t->type_size);
}

PhasePrediction Finish(const TimeSplit& total, double tokens) {
  PhasePrediction p;
  p.per_token = total.Scaled(1.0 / std::max(1.0, tokens));
  const double s = p.per_token.total();
  p.tokens_per_second = s > 0 ? 1.0 / s : 0;
  p.binding = p.per_token.binding();
  return p;
}

// The depth after `done` more tokens than the run's depth.
int DepthAt(const RunSettings& run, int64_t done) {
  return static_cast<int>(std::min<int64_t>(run.n_depth + done, INT32_MAX));
}

// The time of a prompt of `p` tokens; leaves `in->offload` as the last
// micro-batch had it.
TimeSplit PrefillTime(const RunSettings& run, int64_t p, PhaseInputs* in) {
  // Prefill: ceil(p / ub) micro-batches, each at its own depth. Past
  // kExactUbatches the full micro-batches are taken in equal groups, each
  // timed at its middle depth and multiplied (the midpoint rule: exact while
  // a micro-batch's time is linear in its depth), so that a prompt of 2^30
  // tokens costs as much work as one of a few million, not minutes.
  constexpr int64_t kExactUbatches = 4096;
  const int64_t ub = run.n_ubatch;
  const int64_t full = p / ub;
  const int64_t stride = std::max<int64_t>(1, (full + kExactUbatches - 1) / kExactUbatches);
  const bool can_offload = in->offload_device >= 0 && run.op_offload;
  TimeSplit prefill;
  // GGML_OP_OFFLOAD_MIN_BATCH (ggml/src/ggml-backend.cpp, default 32): from this
  // batch size the scheduler runs host-weight operators on the GPU.
  in->offload = can_offload && ub >= 32;
  for (int64_t b = 0; b < full; b += stride) {
    const int64_t group = std::min(stride, full - b);
    const TimeSplit t =
        PrefillUbatchTime(*in, DepthAt(run, b * ub + (group - 1) * ub / 2), static_cast<int>(ub));
    prefill += group == 1 ? t : t.Scaled(static_cast<double>(group));
  }
  if (const int64_t rest = p - full * ub; rest > 0) {
    in->offload = can_offload && rest >= 32;
    prefill += PrefillUbatchTime(*in, DepthAt(run, full * ub), static_cast<int>(rest));
  }
  return prefill;
}

// Strict mode fails where the memory map says a device is full (and RPC
// always does); silent mode spills the excess to host memory. Host weights
// beyond the available RAM are read again from disk.
void JudgeMemory(const MachineSpec& machine, const Residency& res, PhaseInputs* in,
                 SpeedPrediction* out) {
  for (size_t d = 0; d < in->devices.size(); ++d) {
    DeviceInputs& dev = in->devices[d];
    const bool used = d < res.device_weight_bytes.size() && res.device_weight_bytes[d] > 0;
    if (!used) continue;
    const bool is_rpc = dev.spec.kind == AcceleratorKind::kRpcCpu;
    if (machine.spill == SpillMode::kStrict || is_rpc) {
      out->failure = StrictFailure(dev.footprint, dev.budget, dev.name);
      if (!out->failure.empty()) {
        out->loads = false;
        return;
      }
      continue;
    }
    dev.spill = ComputeSpill(dev.footprint, dev.budget);
    out->spill_bytes += dev.spill.bytes;
    if (dev.spill.bytes > 0) {
      out->notes.push_back(fmt::format(
          "{:.0f} MiB of {}'s allocations live in host memory (silent spill): compute buffers "
          "{:.0f}%, KV cache {:.0f}%, weights {:.0f}%",
          static_cast<double>(dev.spill.bytes) / 1048576.0, dev.name, dev.spill.compute * 100,
          dev.spill.kv * 100, dev.spill.weights * 100));
      out->noise_cv += 0.05;
    }
  }
  if (machine.ram.available > 0 &&
      res.host_weight_bytes > static_cast<double>(machine.ram.available)) {
    in->host_overflow = 1.0 - static_cast<double>(machine.ram.available) / res.host_weight_bytes;
    out->notes.push_back(
        fmt::format("host weights exceed available RAM by {:.0f}%: pages are read "
                    "again from disk",
                    in->host_overflow * 100));
    out->noise_cv += 0.1;
  }
}

// The placement of `run` over the machine's devices, and in `order` the
// machine's single device behind each of the placement's devices.
Result<WeightPlacement> RunPlacement(const RunSettings& run, const MachineSpec& machine,
                                     std::vector<size_t>* order) {
  const std::vector<std::string> names = machine.DeviceNames();
  std::vector<int64_t> free;
  for (const AcceleratorSpec& d : machine.SingleDevices()) free.push_back(d.vram_free);
  ServerConfig config;
  config.placement.n_gpu_layers = run.n_gpu_layers;
  config.placement.n_cpu_moe = run.n_cpu_moe;
  config.placement.devices = run.devices;
  MOETUNE_TRY(config.placement.SetOverrideTensor(run.override_tensor));
  order->clear();
  if (run.devices.empty()) *order = DefaultDeviceOrder(names);
  for (const DevicePlacement& d : run.devices) {
    const auto it = std::find(names.begin(), names.end(), d.device);
    if (it == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("-dev {}: the machine has no such device (it has: {})", d.device,
                               known.empty() ? "none" : known));
    }
    order->push_back(static_cast<size_t>(it - names.begin()));
  }
  return WeightPlacementOf(config, names, free);
}

// A name for the placement of `run` (the cache key of its memory map).
std::string PlacementKey(const RunSettings& run) {
  std::string key = fmt::format("{}|{}|{}", run.n_gpu_layers, run.n_cpu_moe, run.override_tensor);
  for (const DevicePlacement& d : run.devices) key += fmt::format("|{}={}", d.device, d.layers);
  return key;
}

// Each of the placement's devices: its figures, threads, footprint and budget.
void ResolveDevices(const ModelInfo& model, const ModelShape& shape, const Residency& res,
                    const WeightPlacement& placement, const std::vector<size_t>& order,
                    const CalibrationConstants& c, FootprintPlans* plans, PhaseInputs* in) {
  const MachineSpec& m = *in->machine;
  const std::vector<AcceleratorSpec> singles = m.SingleDevices();
  const std::vector<std::string> names = m.DeviceNames();
  std::vector<AcceleratorSpec> used;
  used.reserve(order.size());
  for (size_t i : order) used.push_back(singles[i]);
  std::vector<GpuFootprint> footprints;
  if (used.size() == 1) {
    footprints.push_back(ComputeGpuFootprint(model, shape, res, *in->run, &used[0], plans));
  } else if (used.size() > 1) {
    footprints =
        ComputeDeviceFootprints(model, placement, *in->run, used, PlacementKey(*in->run), plans);
  }
  for (size_t d = 0; d < order.size(); ++d) {
    DeviceInputs dev;
    dev.spec = used[d];
    dev.name = names[order[d]];
    dev.threads =
        ScaleThreads(dev.spec.rpc_cpu ? *dev.spec.rpc_cpu : m.cpu, dev.spec.rpc_threads, c);
    dev.footprint = footprints[d];
    dev.budget = std::max<int64_t>(0, dev.spec.vram_free - m.reserve);
    if (in->offload_device < 0 && dev.spec.kind == AcceleratorKind::kGpu)
      in->offload_device = static_cast<int>(d);
    in->devices.push_back(std::move(dev));
  }
}

}  // namespace

Result<SpeedPrediction> SpeedModel::Predict(const RunSettings& run_in) const {
  RunSettings run = run_in;
  run.n_batch = std::max(1, run.n_batch);
  run.n_ubatch = std::max(1, std::min(run.n_ubatch, run.n_batch));
  if (run.threads <= 0) run.threads = std::max(1, machine_.cpu.p_cores);
  // -ngl -1 is llama.cpp's default: every layer and the output head.
  if (run.n_gpu_layers < 0) run.n_gpu_layers = static_cast<int>(shape_.layers.size()) + 1;
  if (run.n_depth < 0 || run.n_prompt < 0 || run.n_gen < 0) {
    return Error(ErrorKind::kInvalidArgument, "prompt, generation and depth must not be negative");
  }
  const std::string key = PlacementKey(run);
  auto memo = placements_->entries.find(key);
  if (memo == placements_->entries.end()) {
    std::vector<size_t> order;
    MOETUNE_ASSIGN_OR_RETURN(WeightPlacement placement, RunPlacement(run, machine_, &order));
    MOETUNE_ASSIGN_OR_RETURN(Residency res, ResolveResidency(model_, shape_, placement));
    if (placements_->entries.size() >= PlacementMemo::kMaxEntries) placements_->entries.clear();
    memo = placements_->entries
               .emplace(key, PlacementMemo::Entry{std::move(placement), std::move(order),
                                                  std::move(res)})
               .first;
  }
  const WeightPlacement& placement = memo->second.placement;
  const std::vector<size_t>& order = memo->second.order;
  const Residency& res = memo->second.residency;
  SpeedPrediction out;
  out.uncertainty = uncertainty_;
  PhaseInputs in;
  in.shape = &shape_;
  in.residency = &res;
  in.machine = &machine_;
  in.c = &constants_;
  in.run = &run;
  in.host = ScaleThreads(machine_.cpu, run.threads, constants_);
  for (const auto& L : shape_.layers) {
    in.kv_cell_bytes.push_back(KvCellBytes(run.type_k, L.n_embd_k_gqa) +
                               KvCellBytes(run.type_v, L.n_embd_v_gqa));
  }
  out.noise_cv = in.host.noise_cv;
  if (in.host.oversubscribed > 0)
    out.notes.push_back(
        fmt::format("{} thread(s) beyond the CPUs available: they take turns and "
                    "hold every barrier",
                    in.host.oversubscribed));

  // Memory: strict mode fails where the memory map says a device is full;
  // silent mode spills the excess to host memory.
  ResolveDevices(model_, shape_, res, placement, order, constants_, plans_.get(), &in);
  for (const DeviceInputs& d : in.devices) {
    out.gpu_bytes += d.footprint.allocated();
    out.gpu_budget += d.budget;
  }
  JudgeMemory(machine_, res, &in, &out);
  if (!out.loads) return out;

  const int64_t p = run.n_prompt > 0 ? run.n_prompt : 512;
  const int64_t ub = run.n_ubatch;
  const TimeSplit prefill = PrefillTime(run, p, &in);
  out.op_offload_active = in.offload_device >= 0 && run.op_offload && std::min(ub, p) >= 32;
  out.prefill = Finish(prefill, static_cast<double>(p));

  // Decode: n tokens, the cache growing from depth; the middle token's cost is
  // the mean (every term is linear in depth).
  const int n = run.n_gen > 0 ? run.n_gen : 128;
  int switches = 0;
  const TimeSplit token = DecodeTokenTime(in, DepthAt(run, n / 2), &switches);
  out.decode = Finish(token, 1);
  out.handovers_per_token = switches;

  const double tp = prefill.total(), tg = token.total() * n;
  if (run.n_prompt > 0 && run.n_gen > 0) {
    out.tokens_per_second = (run.n_prompt + run.n_gen) / std::max(1e-12, tp + tg);
  } else if (run.n_gen > 0) {
    out.tokens_per_second = out.decode.tokens_per_second;
  } else {
    out.tokens_per_second = out.prefill.tokens_per_second;
  }
  return out;
}

}  // namespace moetune
