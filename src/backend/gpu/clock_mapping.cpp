#include "clock_mapping.hpp"

#include <algorithm>
#include <tuple>

namespace launchwatch::detail::gpu {
namespace {

// A span shorter than this gives too noisy a rate; use the nominal one.
constexpr std::int64_t min_slope_span_ns = 250'000'000;
// Oscillators agree to a few parts per million; a slope further off than this is a bad anchor.
constexpr double max_slope_error = 1e-4;  // 100 µs a second
// The rate is measured over at most this much of the past, so it follows a slowly changing drift.
constexpr std::int64_t rate_window_ns = 60'000'000'000;
constexpr std::size_t anchors_kept = 256;
constexpr std::size_t segments_kept = 100'000;  // a day and more at one a second

double slope_between(const clock_anchor& from, const clock_anchor& to) {
  const auto device_span = static_cast<std::int64_t>(to.device_ns - from.device_ns);
  const std::int64_t host_span = to.host_ns - from.host_ns;
  if (device_span <= 0) return 1.0;
  const double slope = static_cast<double>(host_span) / static_cast<double>(device_span);
  return std::clamp(slope, 1.0 - max_slope_error, 1.0 + max_slope_error);
}

std::int64_t along(const clock_segment& segment, std::uint64_t device_ns) {
  // Relative to the segment's start, so the double holds at most a few seconds' nanoseconds and
  // loses nothing, however far the epoch is.
  const auto offset = static_cast<std::int64_t>(device_ns - segment.device_ns);
  return segment.host_ns + static_cast<std::int64_t>(static_cast<double>(offset) * segment.slope);
}

const clock_segment& holding(const std::vector<clock_segment>& segments, std::uint64_t device_ns) {
  auto after =
      std::upper_bound(segments.begin(), segments.end(), device_ns,
                       [](std::uint64_t ns, const clock_segment& s) { return ns < s.device_ns; });
  return after == segments.begin() ? segments.front() : *(after - 1);
}

}  // namespace

std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool clock_mapping::extend(const clock_anchor& taken) {
  std::lock_guard lock{mutex_};
  if (!anchors_.empty() && taken.device_ns <= anchors_.back().device_ns) return false;  // raced
  anchors_.push_back(taken);
  if (segments_.empty()) {
    segments_.push_back(clock_segment{taken.device_ns, taken.host_ns, 1.0});
  } else {
    segments_.push_back(next_segment(anchors_, segments_.back()));
  }
  if (anchors_.size() > anchors_kept) anchors_.erase(anchors_.begin());
  if (segments_.size() > segments_kept) segments_.erase(segments_.begin());
  return true;
}

bool clock_mapping::anchored() const {
  std::lock_guard lock{mutex_};
  return !segments_.empty();
}

std::vector<clock_anchor> clock_mapping::anchors() const {
  std::lock_guard lock{mutex_};
  return anchors_;
}

std::vector<clock_segment> clock_mapping::segments() const {
  std::lock_guard lock{mutex_};
  return segments_;
}

std::int64_t clock_mapping::map(const std::vector<clock_segment>& segments,
                                std::uint64_t device_ns) {
  return along(holding(segments, device_ns), device_ns);
}

clock_segment clock_mapping::next_segment(const std::vector<clock_anchor>& anchors,
                                          const clock_segment& last) {
  const clock_anchor& now = anchors.back();
  const std::int64_t reached = along(last, now.device_ns);
  double rate = 1.0;
  for (std::size_t i = 0; i + 1 < anchors.size(); ++i) {
    const std::int64_t span = now.host_ns - anchors[i].host_ns;
    if (span > rate_window_ns) continue;
    if (span >= min_slope_span_ns) rate = slope_between(anchors[i], now);
    break;
  }
  const std::int64_t gap = now.host_ns - reached;
  if (gap > max_slew_gap.count() || gap < -max_slew_gap.count()) {
    return clock_segment{now.device_ns, now.host_ns, rate};
  }
  const double interval_ns =
      static_cast<double>(std::chrono::nanoseconds{reanchor_interval}.count());
  const double slope = std::clamp(rate + static_cast<double>(gap) / interval_ns,
                                  1.0 - max_slope_error, 1.0 + max_slope_error);
  return clock_segment{now.device_ns, reached, slope};
}

std::pair<std::int64_t, std::int64_t> clock_mapping::map_window(
    const std::vector<clock_segment>& segments, std::uint64_t start_ns, std::uint64_t end_ns) {
  const clock_segment& segment = holding(segments, start_ns);
  return {along(segment, start_ns), along(segment, std::max(start_ns, end_ns))};
}

profile_ticks clock_mapping::to_ticks(std::uint64_t start_ns, std::uint64_t end_ns) const {
  std::int64_t start = 0;
  std::int64_t end = 0;
  {
    std::lock_guard lock{mutex_};
    std::tie(start, end) = map_window(segments_, start_ns, end_ns);
  }
  const auto to = [](std::int64_t ns) { return instant{std::chrono::nanoseconds{ns}}; };
  return profile_ticks::from_start_end(to(start), to(end));
}

}  // namespace launchwatch::detail::gpu
