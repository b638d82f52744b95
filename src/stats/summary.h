#pragma once
/// Summaries of repeated measurements, computed from the raw samples (which are
/// always kept): mean, standard deviation (absent for a single sample, never a
/// misleading 0), median, min/max, and outliers by the median absolute
/// deviation, like hyperfine (docs/architecture.md, Conventions: statistics keep raw samples).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace moetune {

/// Statistics of one series of samples (e.g. tokens/s of each repetition).
struct Summary {
  std::size_t n = 0;
  double mean = 0;
  /// Sample standard deviation (n-1); absent when n < 2.
  std::optional<double> stddev;
  double median = 0;
  double min = 0;
  double max = 0;
  /// The best repetition (BestRepetition of the samples): what the machine can
  /// do when nothing else interferes.
  double best = 0;
  /// Median absolute deviation (unscaled).
  double mad = 0;
  /// Indices of samples whose modified z-score |0.6745 (x - median) / MAD|
  /// exceeds 3.5 (Iglewicz and Hoaglin); empty when MAD is 0 or n < 5.
  std::vector<std::size_t> outliers;

  /// Coefficient of variation (sd / mean), absent when sd is absent or mean is 0.
  std::optional<double> cv() const;
};

/// Summarizes `samples`. An empty series gives n = 0 and zeros.
Summary Summarize(const std::vector<double>& samples);

/// A lone sample more than this factor above the next fastest is a timing
/// artefact, not the machine: on the shared development VM one tg32 repetition
/// read 1094 t/s beside five of 548-681, while honest repetitions on a busy
/// machine spread by up to about a third.
inline constexpr double kLoneOutlierRatio = 1.5;
/// ... when at least this many samples remain below it to stand for the
/// machine. With two, a fast sample is as likely the truth beside two
/// disturbed repetitions (995 t/s beside 646 and 519 in a simulated run with
/// 4% of repetitions slowed 1.25-2x) as an artefact beside two honest ones.
inline constexpr std::size_t kLoneOutlierMinOthers = 3;

/// The best repetition of a test, the one rule every reader of speeds uses
/// (tune's collapse rule, analyze, the calibration): interference from other
/// processes only ever slows a repetition down, so the fastest one is the least
/// biased estimate of what the machine can do - except a fastest sample that
/// stands alone more than kLoneOutlierRatio above the next while at least
/// kLoneOutlierMinOthers others remain (dropped, and again for the next one).
/// With fewer samples the fastest counts. 0 for no samples.
double BestRepetition(std::vector<double> samples);

/// Median of a series (0 for an empty one).
double Median(std::vector<double> samples);

/// A range of a quantity that cannot be negative (a speed, a time), as text:
/// "low-high" with `decimals` digits, the low end clipped at 0. A spread of few
/// repetitions (mean minus sd, a 95% interval) can reach below zero; the
/// quantity cannot, so the text never says it does ("0.0-27.0", never
/// "-3.0-27.0"). Every range of speeds in reports is written by this.
std::string FormatNonNegativeRange(double low, double high, int decimals = 1);

/// "123.45 ± 1.23" (or "123.45" without sd), with `decimals` digits, for a
/// quantity that cannot be negative: when the sd reaches below zero the spread
/// is written as its range clipped at 0 instead ("12.00 (0.00-27.00)", never
/// "12.00 ± 15.00").
std::string FormatMeanSd(const Summary& s, int decimals = 2);

/// Warnings that tell the fix: too few samples, high variance, outliers.
std::vector<std::string> SummaryWarnings(const Summary& s, const std::string& what);

}  // namespace moetune
