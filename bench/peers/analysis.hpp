// The arithmetic of the peers harness: spreads of repeated runs, device idle time from kernel
// intervals, and per-kernel agreement between two ways of timing the same kernels.
//
// Kept apart from the harness (which needs a GPU) and from the rendering (which needs none of this
// to be right) so that it can be tested on a machine without a GPU, with numbers chosen by hand.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace launchwatch::peers {

/// The spread of repeated measurements of one quantity: the median, the 10th and 90th percentiles
/// (linear interpolation between order statistics), and the extremes.
///
/// Medians and inner percentiles rather than means, because the runs on a shared machine have a
/// long tail (a preempted thread, a clock step) that a mean would carry into every ratio.
struct spread {
  double median = std::numeric_limits<double>::quiet_NaN();
  double p10 = std::numeric_limits<double>::quiet_NaN();
  double p90 = std::numeric_limits<double>::quiet_NaN();
  double min = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
  std::size_t count = 0;
};

/// The `q` quantile (0..1) of `sorted` (ascending, not empty), interpolating linearly between the
/// two order statistics around it, as numpy's default does.
inline double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument{"quantile_of_sorted: no values"};
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

/// Summarizes `values`; an empty input gives a spread of NaNs with count 0 (a case that did not
/// run), never zeros, so a table cannot show a skipped case as free.
inline spread summarize(std::vector<double> values) {
  spread result;
  result.count = values.size();
  if (values.empty()) return result;
  std::sort(values.begin(), values.end());
  result.median = quantile_of_sorted(values, 0.5);
  result.p10 = quantile_of_sorted(values, 0.1);
  result.p90 = quantile_of_sorted(values, 0.9);
  result.min = values.front();
  result.max = values.back();
  return result;
}

/// The median over rounds of `numerator[i] / denominator[i]`: each round's ratio is taken between
/// two cases measured moments apart, so a slow drift of the machine cancels out of it, which it
/// would not in a ratio of two medians taken over the whole run.
///
/// Throws std::invalid_argument when the two series are of different lengths. Rounds whose
/// denominator is not positive are left out.
inline spread ratio_per_round(const std::vector<double>& numerator,
                              const std::vector<double>& denominator) {
  if (numerator.size() != denominator.size()) {
    throw std::invalid_argument{"ratio_per_round: " + std::to_string(numerator.size()) +
                                " rounds against " + std::to_string(denominator.size()) +
                                "; both cases must run in every round"};
  }
  std::vector<double> ratios;
  ratios.reserve(numerator.size());
  for (std::size_t i = 0; i < numerator.size(); ++i) {
    if (denominator[i] > 0.0) ratios.push_back(numerator[i] / denominator[i]);
  }
  return summarize(std::move(ratios));
}

/// One kernel's window on one clock, in nanoseconds.
struct interval {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

/// How a pass's window splits into time some kernel ran and time none did.
struct idle_summary {
  /// From the earliest start to the latest end.
  std::int64_t window_ns = 0;
  /// The length of the union of the kernel windows (overlaps counted once).
  std::int64_t busy_ns = 0;
  /// `window_ns - busy_ns`: the device sat with no kernel of the pass running.
  std::int64_t idle_ns = 0;
  std::size_t kernels = 0;
};

/// Device idle time as launchwatch's report defines it: the window from the first kernel's start to
/// the last one's end, minus the union of the kernels' windows. A reversed window (end before
/// start) counts as zero length at its start. An empty input gives all zeros.
inline idle_summary idle_time(std::vector<interval> kernels) {
  idle_summary result;
  result.kernels = kernels.size();
  if (kernels.empty()) return result;
  for (auto& k : kernels) k.end_ns = std::max(k.end_ns, k.start_ns);
  std::sort(kernels.begin(), kernels.end(),
            [](const interval& a, const interval& b) { return a.start_ns < b.start_ns; });
  std::int64_t window_start = kernels.front().start_ns;
  std::int64_t window_end = window_start;
  std::int64_t busy = 0;
  std::int64_t run_start = kernels.front().start_ns;
  std::int64_t run_end = kernels.front().end_ns;
  for (const auto& k : kernels) {
    window_end = std::max(window_end, k.end_ns);
    if (k.start_ns > run_end) {
      busy += run_end - run_start;
      run_start = k.start_ns;
      run_end = k.end_ns;
    } else {
      run_end = std::max(run_end, k.end_ns);
    }
  }
  busy += run_end - run_start;
  result.window_ns = window_end - window_start;
  result.busy_ns = busy;
  result.idle_ns = result.window_ns - busy;
  return result;
}

/// How closely one way of timing kernels agrees with a reference on the same kernels.
struct agreement {
  /// Kernels compared.
  std::size_t pairs = 0;
  /// |measured - reference| / reference, median and 99th percentile.
  double median_relative_error = std::numeric_limits<double>::quiet_NaN();
  double p99_relative_error = std::numeric_limits<double>::quiet_NaN();
  /// measured - reference, nanoseconds, median: the method's bias (positive = reads long).
  double median_signed_error_ns = std::numeric_limits<double>::quiet_NaN();
  /// The medians of the two series, nanoseconds, to read the errors against.
  double median_measured_ns = std::numeric_limits<double>::quiet_NaN();
  double median_reference_ns = std::numeric_limits<double>::quiet_NaN();
};

/// Compares `measured[i]` with `reference[i]` for every i: the two series are the same kernels in
/// the same order (the harness pairs them by issue order, which CUPTI's correlation ids give).
///
/// Throws std::invalid_argument when the lengths differ, rather than pairing kernel i with kernel
/// i+1 and reporting the shift as error. A reference shorter than 1 ns is taken as 1 ns, so an
/// empty kernel's relative error stays finite.
inline agreement compare_durations(const std::vector<std::int64_t>& measured,
                                   const std::vector<std::int64_t>& reference) {
  if (measured.size() != reference.size()) {
    throw std::invalid_argument{"compare_durations: " + std::to_string(measured.size()) +
                                " measured kernels against " + std::to_string(reference.size()) +
                                " reference kernels; the two must be the same launches"};
  }
  agreement result;
  result.pairs = measured.size();
  if (measured.empty()) return result;
  std::vector<double> relative;
  std::vector<double> signed_error;
  std::vector<double> measured_ns;
  std::vector<double> reference_ns;
  relative.reserve(measured.size());
  signed_error.reserve(measured.size());
  measured_ns.reserve(measured.size());
  reference_ns.reserve(measured.size());
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const auto m = static_cast<double>(measured[i]);
    const auto r = static_cast<double>(reference[i]);
    relative.push_back(std::abs(m - r) / std::max(r, 1.0));
    signed_error.push_back(m - r);
    measured_ns.push_back(m);
    reference_ns.push_back(r);
  }
  std::sort(relative.begin(), relative.end());
  result.median_relative_error = quantile_of_sorted(relative, 0.5);
  result.p99_relative_error = quantile_of_sorted(relative, 0.99);
  result.median_signed_error_ns = summarize(std::move(signed_error)).median;
  result.median_measured_ns = summarize(std::move(measured_ns)).median;
  result.median_reference_ns = summarize(std::move(reference_ns)).median;
  return result;
}

}  // namespace launchwatch::peers
