// libFuzzer target for the machine profile reader (`moetune doctor` writes the
// profile; `plan`, `bench --engine sim`, `calibrate` and `serve` read it, and a
// person may edit it). Properties: no crash, no exception, no sanitizer report
// (a float converted to an integer out of range aborts here); an accepted
// profile has no negative or absurd memory figure, turns into a machine spec,
// and survives a write and a read back unchanged in its GPU figures.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "hw/machine_profile.h"
#include "speed/calibration.h"
#include "speed/machine_spec.h"
#include "util/utf8.h"

namespace {

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "profile_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const auto input = fuzz::JsonInput(data, size);
  if (!input) return 0;
  const nlohmann::json& j = *input;
  auto p = MachineProfileFromJson(j);
  if (!p.ok()) {
    Check(!p.error().message().empty(), "an error says why");
    return 0;
  }
  for (const auto& g : p->gpus) {
    Check(g.free_bytes >= 0 && g.free_bytes <= g.total_bytes, "free VRAM within the total");
  }
  Check(p->memory.total_bytes >= 0 && p->memory.available_bytes >= 0, "RAM non-negative");
  (void)MachineSpecFromProfile(*p);
  if (!p->calibration.is_null()) (void)CalibrationRecordFromJson(p->calibration);
  nlohmann::json out = MachineProfileToJson(*p);
  if (!p->calibration.is_null()) out["calibration"] = p->calibration;
  const auto again = nlohmann::json::parse(DumpJson(out, -1), nullptr, false);
  Check(!again.is_discarded(), "written profile is JSON");
  auto back = MachineProfileFromJson(again);
  Check(back.ok(), "a written profile reads back");
  Check(back->gpus.size() == p->gpus.size(), "same GPUs");
  for (size_t i = 0; i < p->gpus.size(); ++i) {
    Check(back->gpus[i].free_bytes == p->gpus[i].free_bytes, "same free VRAM");
  }
  return 0;
}
