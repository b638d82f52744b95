// libFuzzer target for the calibration record reader (`moetune calibrate`
// stores it in the machine profile; a profile copied from elsewhere or edited
// by hand carries any JSON there). Properties: no crash, no exception, no
// sanitizer report; an accepted record has finite positive constants and reads
// back the same after it is written.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "speed/calibration.h"
#include "util/utf8.h"

namespace {

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "calibration_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const auto input = fuzz::JsonInput(data, size);
  if (!input) return 0;
  const nlohmann::json& j = *input;
  auto r = CalibrationRecordFromJson(j);
  if (!r.ok()) return 0;
  for (const auto& [name, v] : r->constants.Values()) Check(std::isfinite(v), "finite constant");
  const auto again =
      nlohmann::json::parse(DumpJson(CalibrationRecordToJson(*r), -1), nullptr, false);
  Check(!again.is_discarded(), "written record is JSON");
  auto back = CalibrationRecordFromJson(again);
  Check(back.ok(), "a written record reads back");
  Check(back->points.size() == r->points.size(), "same points");
  Check(back->constants.Values() == r->constants.Values(), "same constants");
  return 0;
}
