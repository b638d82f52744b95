// The fit of moetune's default speed constants to published llama.cpp runs
// (bench/speed/public_points.json) and its leave-one-out check: prints the
// fitted constants (to be the defaults in src/speed/calibration.h), every
// point's error with the fit to all and with the fit to the others, and the
// bands of uncalibrated predictions (src/speed/uncertainty.cc).
// docs/speed-model.md ("Uncalibrated predictions") holds the last run.
//
// usage: public_fit [POINTS_JSON] [SWEEPS]
#include "speed/public_fit.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace {

std::string Pct(double predicted, double measured) {
  return predicted > 0 ? fmt::format("{:+.0f}%", (predicted / measured - 1) * 100) : "fails";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moetune;
  const std::string path = argc > 1 ? argv[1] : "bench/speed/public_points.json";
  const int sweeps = argc > 2 ? std::atoi(argv[2]) : 6;
  auto points = LoadPublicPoints(path);
  if (!points.ok()) {
    std::cerr << "public_fit: " << points.error().message() << "\n";
    return 1;
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("moetune-public-fit-{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto set = PublicSet::Prepare(std::move(points).value(), dir.string());
  if (!set.ok()) {
    std::cerr << "public_fit: " << set.error().message() << "\n";
    std::filesystem::remove_all(dir);
    return 1;
  }
  const CalibrationConstants start;  // the compiled-in defaults
  const PublicFitResult r = FitAndLeaveOneOut(*set, start, sweeps);
  std::filesystem::remove_all(dir);

  std::cout << "| constant | default | fitted |\n|---|---:|---:|\n";
  const auto before = start.Values();
  const auto after = r.constants.Values();
  for (size_t i = 0; i < after.size(); ++i) {
    for (const auto& name : PublicFitConstants()) {
      if (after[i].first == name)
        std::cout << fmt::format("| `{}` | {:.4g} | {:.4g} |\n", name, before[i].second,
                                 after[i].second);
    }
  }
  std::cout << "\n| point | test | measured t/s | defaults | fit to all | left out |\n"
               "|---|---|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const auto& row = r.rows[i];
    const double def = set->Predict(i, start);
    std::cout << fmt::format("| {} | {} | {:.1f} | {} | {} | {} |\n", row.id,
                             row.prefill ? "pp" : "tg", row.measured, Pct(def, row.measured),
                             Pct(row.fitted, row.measured), Pct(row.left_out, row.measured));
  }
  std::cout << fmt::format(
      "\nleave-one-out bands ({:.0f}% of points): prefill x{:.2f}-x{:.2f}, decode x{:.2f}-x{:.2f} "
      "(measured / predicted)\n",
      r.band.coverage * 100, r.band.prefill.low, r.band.prefill.high, r.band.decode.low,
      r.band.decode.high);
  return 0;
}
