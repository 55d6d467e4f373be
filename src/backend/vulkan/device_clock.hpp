// Mapping a Vulkan device's timestamps onto the host's steady clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

#include <launchwatch/profile.hpp>

#include "backend/vulkan/vulkan_api.hpp"

namespace launchwatch::detail::vulkan {

/// Maps device timestamps onto the steady clock (CLOCK_MONOTONIC on Linux).
///
/// Anchored by VK_EXT_calibrated_timestamps, re-anchored when a mapping finds the last anchor older
/// than `reanchor_after`, with the slope between the last two anchors: NVIDIA's device clock is the
/// global timer, which drifts about 6 ppm against CLOCK_MONOTONIC (research/vulkan.md); an anchor
/// that jumps by more than a millisecond (the clock was stepped) starts over at the nominal period.
///
/// Arithmetic is on integer ticks relative to the anchor, never on a double holding a device time
/// counted from a distant epoch: NVIDIA's ticks are Unix-epoch nanoseconds (about 1.8e18), where a
/// double steps by 256 ns (review-2026-12-01b finding 12). The CUDA backend's device_clock is the
/// model.
///
/// Thread safety: every member may be called from several threads at once.
class device_clock {
 public:
  /// One reading of both clocks, and the rate that carries device ticks onto host nanoseconds.
  struct mapping {
    std::uint64_t device_ticks = 0;
    std::int64_t host_ns = 0;
    /// Host nanoseconds per device tick: the period, corrected by the measured drift.
    double ns_per_tick = 1.0;
  };

  /// A clock for `device`, whose timestamps advance by `period_ns` nanoseconds a tick; takes its
  /// first anchor now (throws device_error when the driver refuses).
  device_clock(const device_api& api, VkDevice device, double period_ns,
               std::chrono::nanoseconds reanchor_after = std::chrono::seconds{1});

  /// Where device timestamp `ticks` lies on the steady clock. Two calls may map through different
  /// anchors: map a launch's window with window() instead.
  instant to_host(std::uint64_t ticks);

  /// The mapping now, re-anchoring first when the anchor is old: for placing several timestamps
  /// through one anchor with map(). Cost: a lock, and every `reanchor_after` a call into the
  /// driver.
  mapping current_mapping();

  /// A launch's window, stamped `start` and `end` in device ticks, on the steady clock: both ends
  /// through one mapping (one anchor), so a re-anchor never splits a window nor changes its length;
  /// moved, whole, to start at `submitted` if it would start before its launch was submitted.
  /// Cost: a lock, and every `reanchor_after` a call into the driver.
  profile_ticks window(std::uint64_t start, std::uint64_t end, instant submitted);

  /// The uncertainty the driver reported for the last anchor.
  std::chrono::nanoseconds deviation() const;

  /// Host nanoseconds of `ticks` through `through`: integer ticks relative to its anchor, so exact
  /// to the nanosecond however far the device's epoch is. Pure, for tests.
  static std::int64_t map(const mapping& through, std::uint64_t ticks) noexcept;

 private:
  struct anchor {
    std::uint64_t device_ticks = 0;
    std::int64_t host_ns = 0;
    std::chrono::steady_clock::time_point taken{};
  };
  anchor calibrate();
  /// The mapping now, re-anchoring first when the anchor is old. Holds mutex_.
  mapping current();

  const device_api& api_;
  VkDevice device_;
  double period_ns_;
  std::chrono::nanoseconds reanchor_after_;
  mutable std::mutex mutex_;
  anchor anchor_;                   // guarded by mutex_
  double slope_ = 1.0;              // guarded by mutex_: host ns per device ns
  std::uint64_t deviation_ns_ = 0;  // guarded by mutex_
};

}  // namespace launchwatch::detail::vulkan
