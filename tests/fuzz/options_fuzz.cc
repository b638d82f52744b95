// libFuzzer target for the parsers behind the command-line validators
// (cli/validators.h): sizes, token counts, llama-bench style lists, workloads,
// KV cache types, flash-attention settings, what-if machine flags (bandwidths,
// CPU shapes, presets, spill modes), synth scales and quants, measurement stats.
// Properties: no crash, no sanitizer report (signed overflow and division by
// zero abort here), and accepted values are in range: sizes are non-negative,
// lists are bounded in length, a CPU shape has cores.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/server_argv.h"
#include "engine/perf_bridge.h"
#include "engine/run_config.h"
#include "fuzz_check.h"
#include "model/context_support.h"
#include "model/synth_spec.h"
#include "model/synth_tensors.h"
#include "speed/presets.h"
#include "tune/objective.h"
#include "util/units.h"

namespace {

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "options_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto b = ParseBytes(text); b.ok()) Check(b->count() >= 0, "size non-negative");
  if (auto t = ParseTokenCount(text); t.ok()) Check(*t >= 0, "token count non-negative");
  if (auto l = ParseIntList(text); l.ok()) Check(l->size() <= 10001, "list bounded");
  if (auto w = ParseWorkload(text); w.ok()) {
    Check(w->prompt_tokens >= 0 && w->answer_tokens >= 0, "workload non-negative");
    (void)w->SecondsPerRequest(100, 10);
  }
  (void)SplitList(text);
  (void)ParseKvCacheType(text);
  (void)ParseFlashAttn(text);
  (void)ParseLoadMode(text);
  (void)ParseServerArgv({"llama-server", std::string(text), std::string(text)});
  if (auto bw = ParseBandwidthGbps(text); bw.ok()) Check(*bw > 0, "bandwidth positive");
  CpuSpec cpu;
  if (ParseCpuShape(text, &cpu).ok()) Check(cpu.p_cores >= 1 && cpu.smt >= 1, "cores");
  MachineSpec machine;
  (void)ApplyMachinePresets(text, &machine);
  (void)ParseSpillMode(text);
  if (auto s = ParseSynthScale(text); s.ok()) Check(s->factor > 0 && s->factor <= 1, "scale");
  (void)ParseSynthQuant(text);
  (void)ParseMeasurementStat(text);
  return 0;
}
