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

/// Everything a phase needs, resolved once per prediction.
struct PhaseInputs {
  const ModelShape* shape = nullptr;
  const Residency* residency = nullptr;
  const MachineSpec* machine = nullptr;
  const CalibrationConstants* c = nullptr;
  const RunSettings* run = nullptr;
  ThreadScaling host;                 // llama.cpp's threads
  ThreadScaling device;               // ggml-rpc-server's threads (RPC device)
  std::vector<double> kv_cell_bytes;  // K + V bytes per cached token, per layer
  SpillShares spill;
  GpuFootprint footprint;
  double host_overflow = 0;  // share of host-resident weights that does not fit in RAM
  bool offload = false;      // op offload active for this micro-batch size
};

/// Seconds for one token at `depth` tokens of context; `handovers` receives the
/// number of GPU<->CPU switches in its layer sequence.
TimeSplit DecodeTokenTime(const PhaseInputs& in, int depth, int* handovers);

/// Seconds for one micro-batch of `tokens` tokens that starts at `depth`.
TimeSplit PrefillUbatchTime(const PhaseInputs& in, int depth, int tokens);

}  // namespace moetune
