#pragma once
/// Confidence intervals and the question a tuner asks of two configurations:
/// is one faster, or can the noise not tell them apart? Student's t for a
/// mean, Welch's t for a difference of two means (unequal variances, which is
/// the normal case when one configuration shares cores and the other does not).

#include <optional>

#include "stats/summary.h"

namespace moetune {

/// Two-sided quantile of Student's t distribution with `df` degrees of freedom
/// (e.g. level 0.95 gives 12.71 for df 1, 2.26 for df 9, 1.96 for df -> inf).
double StudentTQuantile(double level, double df);

/// Mean with its two-sided confidence interval.
struct Interval {
  double mean = 0;
  double low = 0;
  double high = 0;
  /// False when the spread is unknown (one sample and no sd given): then
  /// low == high == mean and no comparison can claim a difference.
  bool has_spread = false;
};

/// Interval for the mean of `s` (needs n >= 2 for a spread).
Interval MeanInterval(const Summary& s, double level = 0.95);
/// Interval from a mean, a sample standard deviation and a sample count.
Interval MeanInterval(double mean, std::optional<double> sd, int n, double level = 0.95);

/// Result of comparing a with b.
enum class Comparison { kLess, kTie, kGreater };

/// Welch's test at `level`: kGreater when a's mean is higher than b's beyond the
/// noise, kLess when lower, kTie when the difference's interval contains 0 or a
/// spread is unknown. `min_relative` is a difference too small to matter
/// (e.g. 0.01 = 1%), a tie whatever the statistics say.
Comparison CompareMeans(double mean_a, std::optional<double> sd_a, int n_a, double mean_b,
                        std::optional<double> sd_b, int n_b, double level = 0.95,
                        double min_relative = 0.01);
Comparison CompareMeans(const Summary& a, const Summary& b, double level = 0.95,
                        double min_relative = 0.01);

}  // namespace moetune
