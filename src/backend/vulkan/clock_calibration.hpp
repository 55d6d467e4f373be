// The arithmetic that places a Vulkan device's shader-clock stamps on the host's steady clock:
// anchors from calibration probes, the clock's rate, the grid overhead, and a window's mapping.
// Pure (no Vulkan call), so every case is tested on the CPU with made-up probes.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include <launchwatch/profile.hpp>

#include "backend/vulkan/clock_slots.hpp"

namespace launchwatch::detail::vulkan {

/// Maps shader-clock ticks (`clockRealtimeEXT`, VK_KHR_shader_clock's device scope) onto the
/// steady clock, from calibration probes.
///
/// The shader clock's unit and epoch are not specified by Vulkan, so each is measured. A probe is
/// a one-unit dispatch that reads the shader clock at its entry and exit, between two timestamp
/// queries that the device clock (VK_EXT_calibrated_timestamps) places on the host: the host time
/// of the entry lies in [before, after - span], whose middle is the probe's anchor, and whose width
/// is what the timestamps saw that the shader did not (the dispatch's launch and drain: the grid
/// overhead). A probe whose width is more than twice the narrowest of the last ones (plus 10 µs)
/// is too uncertain to anchor the mapping (a CPU device's queue thread was descheduled): it counts
/// only towards the overhead, unless eight in a row were refused. The rate comes from two anchors:
/// the first two at least 20 ms apart (a rate within 1%, plus what the anchors' widths leave
/// uncertain, of one nanosecond a tick is taken as exactly that: NVIDIA's clock is its nanosecond
/// global timer, Mesa's is CLOCK_MONOTONIC), then anchors at least half a second apart whose widths
/// leave the rate uncertain by at most 0.01%.
///
/// A narrow clock keeps only its low 32 bits (Mesa's lavapipe: its high word reads zero), so it
/// wraps every 4.3 s: a stamp is unwrapped to the value nearest where the mapping expects it. A
/// window is then placed right when its kernel starts within about a second before to three
/// seconds after its launch's submission, and lasts under two seconds.
///
/// Thread safety: none; shader_clock holds it under its lock.
class clock_calibration {
 public:
  /// One probe: the host times of its two timestamps and its two shader-clock readings (raw).
  struct probe {
    std::int64_t host_before = 0;
    std::int64_t host_after = 0;
    std::uint64_t clock_entry = 0;
    std::uint64_t clock_exit = 0;
  };

  /// Probes at least this far apart give the first rate.
  static constexpr std::chrono::milliseconds first_rate_span{20};

  explicit clock_calibration(bool narrow) noexcept;

  /// Folds `taken` in: a new anchor, and the rate and grid overhead it refines.
  void add(const probe& taken);

  /// Whether windows can be mapped: the rate is known.
  bool ready() const noexcept { return rate_known_; }
  std::size_t anchors() const noexcept { return anchors_.size(); }
  /// The host times of the first and the last anchor, in steady-clock nanoseconds.
  std::int64_t first_anchor_ns() const noexcept;
  std::int64_t last_anchor_ns() const noexcept;
  /// Host nanoseconds per shader-clock tick.
  double ns_per_tick() const noexcept { return ns_per_tick_; }
  /// The grid overhead: what a timestamp pair around a dispatch sees beyond its shader's window,
  /// the lower quartile over the last nine probes.
  std::chrono::nanoseconds overhead() const noexcept;

  /// Host nanoseconds of shader-clock tick `ticks` (unwrapped), through the current mapping.
  std::int64_t host_ns(std::uint64_t ticks) const noexcept;

  /// `record`'s window on the steady clock: both ends (and the end of the stream's previous window)
  /// through the current mapping, moved, whole, to start at its submission if it would start before
  /// it; then widened at its start by `overhead` (the dispatch's launch and drain, which the
  /// shader's stamps do not see, so that a duration means what a timestamp pair around the dispatch
  /// would have said), but never back past its submission nor the previous window's end on its
  /// stream.
  /// Precondition: ready(), and `record` was collected.
  profile_ticks window(const clock_record& record, std::chrono::nanoseconds overhead) const;

 private:
  struct anchor {
    std::uint64_t ticks = 0;  // unwrapped
    std::int64_t host_ns = 0;
    std::int64_t width_ns = 0;  // its probe's: the anchor is uncertain by half of it
  };
  /// Refines the rate with `next`, from an anchor far enough back. Before `next` joins anchors_.
  void measure_rate(const anchor& next);
  /// The unwrapped tick nearest `reference` whose low bits are `raw`'s.
  std::uint64_t unwrap(std::uint64_t raw, std::uint64_t reference) const noexcept;
  /// The tick the mapping expects at host time `ns`.
  std::uint64_t expected_ticks(std::int64_t ns) const noexcept;

  std::uint64_t mask_;
  std::vector<anchor> anchors_;  // oldest first
  double ns_per_tick_ = 1.0;
  bool rate_known_ = false;
  std::vector<std::int64_t> overheads_;  // the last probes' widths, oldest first
  int refused_in_a_row_ = 0;
};

}  // namespace launchwatch::detail::vulkan
