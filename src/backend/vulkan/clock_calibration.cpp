// The arithmetic that places shader-clock stamps on the steady clock.
#include "backend/vulkan/clock_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace launchwatch::detail::vulkan {
namespace {

constexpr std::size_t anchors_kept = 64;
constexpr std::size_t overheads_kept = 9;
// Anchors this far apart, at least, give a rate after the first one; older than the longest, they
// are not used, so the rate follows a slowly changing drift.
constexpr std::int64_t min_rate_span_ns = 500'000'000;
constexpr std::int64_t max_rate_span_ns = 60'000'000'000;
// A first rate this close to a nanosecond a tick (plus its anchors' uncertainty) is taken as
// exactly that.
constexpr double nominal_tolerance = 0.01;
// A later rate is measured only from anchors that leave it uncertain by at most this.
constexpr double max_rate_uncertainty = 1e-4;
// A probe wider than twice the narrowest recent one, plus this, does not anchor the mapping...
constexpr std::int64_t anchor_width_slack_ns = 10'000;
// ...unless this many in a row were refused.
constexpr int max_refused_in_a_row = 8;
// Where a kernel is expected to start, after its submission: the middle of the range a narrow
// clock's stamp is unwrapped into.
constexpr std::int64_t expected_start_delay_ns = 1'000'000'000;
// A previous window further back than this (about 18 minutes at a nanosecond a tick) is ignored.
constexpr std::uint64_t max_previous_gap_ticks = std::uint64_t{1} << 40;

/// `ns` rounded, saturated to the int64 range (a corrupt stamp must not be undefined behaviour).
std::int64_t rounded(double ns) noexcept {
  constexpr double limit = 9.0e18;
  return std::llround(std::clamp(ns, -limit, limit));
}

}  // namespace

clock_calibration::clock_calibration(bool narrow) noexcept
    : mask_{narrow ? std::uint64_t{0xFFFF'FFFF} : ~std::uint64_t{0}} {}

std::uint64_t clock_calibration::unwrap(std::uint64_t raw, std::uint64_t reference) const noexcept {
  if (mask_ == ~std::uint64_t{0}) return raw;
  // The signed 32-bit distance from the reference's low bits to the stamp: the nearest wrap.
  const auto delta = static_cast<std::int32_t>(static_cast<std::uint32_t>(raw - reference));
  return reference + static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
}

std::uint64_t clock_calibration::expected_ticks(std::int64_t ns) const noexcept {
  const anchor& last = anchors_.back();
  const std::int64_t ticks = rounded(static_cast<double>(ns - last.host_ns) / ns_per_tick_);
  return last.ticks + static_cast<std::uint64_t>(ticks);
}

std::int64_t clock_calibration::host_ns(std::uint64_t ticks) const noexcept {
  const anchor& last = anchors_.back();
  // Relative to the anchor, so the double holds seconds of ticks and loses nothing, however far
  // the clock's epoch is.
  const auto offset = static_cast<std::int64_t>(ticks - last.ticks);
  return last.host_ns + rounded(static_cast<double>(offset) * ns_per_tick_);
}

void clock_calibration::add(const probe& taken) {
  const std::uint64_t span_ticks = (taken.clock_exit - taken.clock_entry) & mask_;
  const std::uint64_t entry =
      anchors_.empty() ? taken.clock_entry & mask_
                       : unwrap(taken.clock_entry & mask_, expected_ticks(taken.host_before));
  const std::int64_t span_ns = rounded(static_cast<double>(span_ticks) * ns_per_tick_);
  // The entry's host time lies in [before, after - span]: its middle is the anchor, its width what
  // the timestamps saw beyond the shader.
  const std::int64_t width =
      std::max<std::int64_t>(taken.host_after - taken.host_before - span_ns, 0);
  const std::int64_t narrowest =
      overheads_.empty() ? width : *std::min_element(overheads_.begin(), overheads_.end());
  overheads_.push_back(width);
  if (overheads_.size() > overheads_kept) overheads_.erase(overheads_.begin());
  if (!anchors_.empty() && width > 2 * narrowest + anchor_width_slack_ns &&
      refused_in_a_row_ < max_refused_in_a_row) {
    ++refused_in_a_row_;
    return;
  }
  refused_in_a_row_ = 0;
  const anchor next{entry, taken.host_before + width / 2, width};
  measure_rate(next);
  anchors_.push_back(next);
  if (anchors_.size() > anchors_kept) anchors_.erase(anchors_.begin());
}

void clock_calibration::measure_rate(const anchor& next) {
  const auto rate_from = [&](const anchor& from, double& uncertainty) {
    const auto ticks = static_cast<std::int64_t>(next.ticks - from.ticks);
    const std::int64_t ns = next.host_ns - from.host_ns;
    uncertainty =
        static_cast<double>(from.width_ns + next.width_ns) / 2.0 / static_cast<double>(ns);
    return ticks > 0 && ns > 0 ? static_cast<double>(ns) / static_cast<double>(ticks) : 0.0;
  };
  double uncertainty = 0;
  if (!rate_known_) {
    if (anchors_.empty()) return;
    const anchor& first = anchors_.front();
    if (next.host_ns - first.host_ns < std::chrono::nanoseconds{first_rate_span}.count()) return;
    const double rate = rate_from(first, uncertainty);
    if (rate <= 0) return;
    ns_per_tick_ = std::abs(rate - 1.0) <= nominal_tolerance + uncertainty ? 1.0 : rate;
    rate_known_ = true;
    return;
  }
  for (const anchor& from : anchors_) {
    const std::int64_t ns = next.host_ns - from.host_ns;
    if (ns > max_rate_span_ns) continue;
    if (ns < min_rate_span_ns) break;
    const double rate = rate_from(from, uncertainty);
    if (rate > 0 && uncertainty <= max_rate_uncertainty) ns_per_tick_ = rate;
    break;
  }
}

std::int64_t clock_calibration::first_anchor_ns() const noexcept {
  return anchors_.empty() ? std::numeric_limits<std::int64_t>::min() : anchors_.front().host_ns;
}

std::int64_t clock_calibration::last_anchor_ns() const noexcept {
  return anchors_.empty() ? std::numeric_limits<std::int64_t>::min() : anchors_.back().host_ns;
}

std::chrono::nanoseconds clock_calibration::overhead() const noexcept {
  if (overheads_.empty()) return std::chrono::nanoseconds{0};
  // The lower quartile: a probe whose queue thread or queue was held up reads wider, never
  // narrower, than the dispatch's own launch and drain.
  std::vector<std::int64_t> sorted = overheads_;
  std::sort(sorted.begin(), sorted.end());
  return std::chrono::nanoseconds{sorted[(sorted.size() - 1) / 4]};
}

profile_ticks clock_calibration::window(const clock_record& record,
                                        std::chrono::nanoseconds overhead) const {
  const std::int64_t submitted = record.submitted.time_since_epoch().count();
  const std::uint64_t start =
      unwrap(record.start & mask_, expected_ticks(submitted + expected_start_delay_ns));
  std::uint64_t length = (record.end - record.start) & mask_;
  // An end stamped before the start (a driver's reordering, or a corrupt lane) is a window of
  // length zero.
  if (length > mask_ / 2) length = 0;
  std::int64_t from = host_ns(start);
  std::int64_t to = host_ns(start + length);
  // A launch cannot start before it was submitted: a mapping off by more than that moves the
  // window, never changes its length.
  if (from < submitted) {
    to += submitted - from;
    from = submitted;
  }
  // Widened at its start by the overhead, but not back past the launch's submission nor the end
  // of the stream's previous window.
  std::int64_t floor = submitted;
  if (record.has_previous) {
    const std::uint64_t gap = (record.start - record.previous_end) & mask_;
    if (gap <= max_previous_gap_ticks) floor = std::max(floor, host_ns(start - gap));
  }
  const std::int64_t opened = std::max(from - overhead.count(), std::min(floor, from));
  const std::int64_t closed = to;
  const auto at = [](std::int64_t ns) { return instant{std::chrono::nanoseconds{ns}}; };
  return profile_ticks::from_start_end(at(opened), at(closed));
}

}  // namespace launchwatch::detail::vulkan
