// Mapping a GPU's nanosecond timer onto the host's steady clock, from anchors however they are
// taken (device_clock.hpp takes them).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <launchwatch/profile.hpp>

namespace launchwatch::detail::gpu {

/// One reading of both clocks at (nearly) the same moment.
struct clock_anchor {
  /// The device's timer, nanoseconds.
  std::uint64_t device_ns = 0;
  /// The host's steady clock, nanoseconds since its epoch, at the midpoint of the exchange.
  std::int64_t host_ns = 0;
  /// Half the exchange's round trip: the device's reading lies within this of `host_ns`.
  std::int64_t uncertainty_ns = 0;
};

/// One piece of the mapping: from `device_ns` on, host time is `host_ns + (t - device_ns) * slope`.
struct clock_segment {
  std::uint64_t device_ns = 0;
  std::int64_t host_ns = 0;
  double slope = 1.0;
};

/// Places device timestamps on the host's steady clock, given anchors.
///
/// The device's timer runs on its own epoch and its own oscillator. The mapping is a chain of
/// segments, like a clock disciplined by NTP: each new anchor starts a segment where the previous
/// one had got to (so the mapping never jumps) with a slope that is the oscillators' measured rate
/// plus whatever closes the gap to the new anchor over the next interval. So the mapping is
/// continuous and increasing (kernels that ran in order on the device stay in order on the host,
/// whenever each was read), a device time maps to the same instant however late it is read, and its
/// error stays the anchors' uncertainty plus one interval's drift however long the run (the keeper
/// anchors every `reanchor_interval` while launches are timed). Arithmetic is on integer
/// nanoseconds relative to a segment's start, never on a float counted from a distant epoch.
///
/// Thread safety: every member may be called from any thread.
class clock_mapping {
 public:
  /// How often an active device is re-anchored, and the time over which a segment closes the gap.
  static constexpr std::chrono::milliseconds reanchor_interval{1000};
  /// A gap larger than this is closed by a step rather than by slewing (a first anchor's
  /// correction, or a clock that jumped).
  static constexpr std::chrono::nanoseconds max_slew_gap{std::chrono::milliseconds{1}};

  /// Extends the mapping with `taken`; false (nothing changed) when it is not later than the last
  /// anchor, as when two anchors raced.
  bool extend(const clock_anchor& taken);

  /// Whether the mapping has at least one segment.
  bool anchored() const;

  /// Maps a window, both ends through the segment that holds its start: a re-anchor that steps
  /// the mapping inside the window moves the window, never changes its length.
  /// Precondition: anchored().
  profile_ticks to_ticks(std::uint64_t start_ns, std::uint64_t end_ns) const;

  /// The anchors and segments so far, oldest first (for the measurement harness and tests).
  std::vector<clock_anchor> anchors() const;
  std::vector<clock_segment> segments() const;

  /// Maps `device_ns` through `segments` (oldest first, at least one): the last segment starting at
  /// or before it, or the first one extrapolated back. Pure, for tests.
  static std::int64_t map(const std::vector<clock_segment>& segments, std::uint64_t device_ns);

  /// Maps a window through `segments` (oldest first, at least one), both ends through the segment
  /// that holds `start_ns`. Pure, for tests.
  static std::pair<std::int64_t, std::int64_t> map_window(
      const std::vector<clock_segment>& segments, std::uint64_t start_ns, std::uint64_t end_ns);

  /// The segment a new anchor starts, given the anchors so far (oldest first, the new one last, at
  /// least two) and the current last segment. Pure, for tests.
  static clock_segment next_segment(const std::vector<clock_anchor>& anchors,
                                    const clock_segment& last);

 private:
  mutable std::mutex mutex_;
  std::vector<clock_anchor> anchors_;
  std::vector<clock_segment> segments_;
};

/// The host's steady clock, in nanoseconds since its epoch.
std::int64_t steady_now_ns() noexcept;

}  // namespace launchwatch::detail::gpu
