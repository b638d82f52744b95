#include "stats/summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace moetune {

std::optional<double> Summary::cv() const {
  if (!stddev || mean == 0) return std::nullopt;
  return *stddev / std::fabs(mean);
}

double BestRepetition(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  std::size_t top = samples.size() - 1;
  while (top >= kLoneOutlierMinOthers && samples[top] > samples[top - 1] * kLoneOutlierRatio) --top;
  return samples[top];
}

double Median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const std::size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid),
                   samples.end());
  const double upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

Summary Summarize(const std::vector<double>& samples) {
  Summary s;
  s.n = samples.size();
  if (samples.empty()) return s;
  // Two-pass mean/variance: exact enough and immune to the cancellation of
  // the naive sum-of-squares formula.
  double sum = 0;
  for (double x : samples) sum += x;
  s.mean = sum / static_cast<double>(s.n);
  if (s.n >= 2) {
    double sq = 0;
    for (double x : samples) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(s.n - 1));
  }
  const auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
  s.min = *lo;
  s.max = *hi;
  s.best = BestRepetition(samples);
  s.median = Median(samples);
  std::vector<double> dev;
  dev.reserve(s.n);
  for (double x : samples) dev.push_back(std::fabs(x - s.median));
  s.mad = Median(dev);
  // Fewer than 5 samples cannot tell an outlier from ordinary spread.
  if (s.mad > 0 && s.n >= 5) {
    for (std::size_t i = 0; i < s.n; ++i) {
      if (std::fabs(0.6745 * (samples[i] - s.median) / s.mad) > 3.5) s.outliers.push_back(i);
    }
  }
  return s;
}

std::string FormatNonNegativeRange(double low, double high, int decimals) {
  low = std::max(0.0, low);
  high = std::max(low, high);
  return fmt::format("{:.{}f}-{:.{}f}", low, decimals, high, decimals);
}

std::string FormatMeanSd(const Summary& s, int decimals) {
  if (s.stddev && s.mean - *s.stddev < 0) {
    return fmt::format("{:.{}f} ({})", s.mean, decimals,
                       FormatNonNegativeRange(s.mean - *s.stddev, s.mean + *s.stddev, decimals));
  }
  if (s.stddev) return fmt::format("{:.{}f} ± {:.{}f}", s.mean, decimals, *s.stddev, decimals);
  return fmt::format("{:.{}f}", s.mean, decimals);
}

std::vector<std::string> SummaryWarnings(const Summary& s, const std::string& what) {
  std::vector<std::string> w;
  if (s.n == 1) {
    w.push_back(fmt::format(
        "{}: one sample only, no standard deviation; use more repetitions (-r 3 or more)", what));
  }
  if (auto cv = s.cv(); cv && *cv > 0.10) {
    w.push_back(fmt::format(
        "{}: high variance (sd {:.0f}% of the mean); close other programs or use more repetitions",
        what, *cv * 100));
  }
  if (!s.outliers.empty()) {
    w.push_back(fmt::format(
        "{}: {} statistical outlier(s) among {} samples; the system may have been busy, rerun it",
        what, s.outliers.size(), s.n));
  }
  return w;
}

}  // namespace moetune
