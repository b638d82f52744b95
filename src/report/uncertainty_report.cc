#include "report/uncertainty_report.h"

#include <fmt/format.h>

#include <cmath>

#include "stats/summary.h"

namespace moetune {

using nlohmann::json;

json UncertaintyJson(const PredictionUncertainty& u) {
  json j = {{"calibrated", u.calibrated},
            {"prefill_band", {u.prefill.low, u.prefill.high}},
            {"decode_band", {u.decode.low, u.decode.high}},
            {"coverage", u.coverage},
            {"points", u.points},
            {"basis", u.basis}};
  if (!u.calibrated) j["how_to_calibrate"] = HowToCalibrate();
  return j;
}

std::string BandRange(double tps, const SpeedBand& band) {
  return FormatNonNegativeRange(tps * band.low, tps * band.high);
}

json BandRangeJson(double tps, const SpeedBand& band) {
  return json::array({tps * band.low, tps * band.high});
}

const char* CalibrationWord(const PredictionUncertainty& u) {
  return u.calibrated ? "calibrated" : "uncalibrated";
}

std::string UncertaintyText(const PredictionUncertainty& u) {
  const long in10 = std::lround(u.coverage * 10);
  const std::string bands = fmt::format("prefill x{:.2f}-x{:.2f} and decode x{:.2f}-x{:.2f}",
                                        u.prefill.low, u.prefill.high, u.decode.low, u.decode.high);
  if (u.calibrated) {
    return fmt::format("calibrated ({}): expect {} of the prediction on this machine", u.basis,
                       bands);
  }
  return fmt::format(
      "uncalibrated: these figures come from default constants; with each of the {} published "
      "runs they were fitted to left out in turn, {} in 10 measured {} of the prediction. To "
      "narrow the band, {}.",
      u.points, in10, bands, HowToCalibrate());
}

}  // namespace moetune
