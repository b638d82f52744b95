#pragma once
/// Internal to the speed model: the time of one decoded token and of one
/// prefill micro-batch for a resolved placement (see speed_model.h for the
/// formulas and docs/speed-model.md for the constants).

#include <vector>

#include "speed/cpu_threads.h"
#include "speed/gpu_footprint.h"
#include "speed/speed_model.h"
#include "speed/spill.h"

namespace moetune {

/// One device of the placement, resolved once per prediction.
struct DeviceInputs {
  AcceleratorSpec spec;   // one device (count 1)
  std::string name;       // the engine's name: "CUDA0", "RPC1"
  ThreadScaling threads;  // ggml-rpc-server's threads (RPC device)
  GpuFootprint footprint;
  int64_t budget = 0;  // free - reserve
  SpillShares spill;
};

/// Everything a phase needs, resolved once per prediction.
struct PhaseInputs {
  const ModelShape* shape = nullptr;
  const Residency* residency = nullptr;  // device indices into `devices`
  const MachineSpec* machine = nullptr;
  const CalibrationConstants* c = nullptr;
  const RunSettings* run = nullptr;
  ThreadScaling host;                 // llama.cpp's threads
  std::vector<DeviceInputs> devices;  // the placement's devices, in its order
  std::vector<double> kv_cell_bytes;  // K + V bytes per cached token, per layer
  double host_overflow = 0;           // share of host-resident weights that does not fit in RAM
  bool offload = false;               // op offload active for this micro-batch size
  /// The device that runs host-weight operators with op offload: the first GPU
  /// (ggml_backend_sched tries its backends in order; RPC has no offload_op);
  /// -1 when none.
  int offload_device = -1;
};

/// Seconds for one token at `depth` tokens of context; `handovers` receives the
/// number of device switches in its layer sequence (GPU<->CPU and between devices).
TimeSplit DecodeTokenTime(const PhaseInputs& in, int depth, int* handovers);

/// Seconds for one micro-batch of `tokens` tokens that starts at `depth`.
TimeSplit PrefillUbatchTime(const PhaseInputs& in, int depth, int tokens);

}  // namespace moetune
