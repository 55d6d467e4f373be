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
/// Anchored by VK_EXT_calibrated_timestamps, re-anchored when a reading finds the last anchor over
/// a second old, with the slope between the last two anchors: NVIDIA's device clock is the global
/// timer, which drifts about 6 ppm against CLOCK_MONOTONIC (research/vulkan.md); an anchor that
/// jumps by more than a millisecond (the clock was stepped) starts over at the nominal period.
/// Thread safety: every member may be called from several threads at once.
class device_clock {
 public:
  device_clock(const device_api& api, VkDevice device, double period_ns);
  /// Where device timestamp `ticks` lies on the steady clock.
  instant to_host(std::uint64_t ticks);
  /// The uncertainty the driver reported for the last anchor.
  std::chrono::nanoseconds deviation() const;

 private:
  struct anchor {
    double device_ns = 0;
    std::int64_t host_ns = 0;
    std::chrono::steady_clock::time_point taken{};
  };
  anchor calibrate();

  const device_api& api_;
  VkDevice device_;
  double period_ns_;
  mutable std::mutex mutex_;
  anchor anchor_;                  // guarded by mutex_
  double slope_ = 1.0;             // guarded by mutex_: host ns per device ns
  std::uint64_t deviation_ns_ = 0; // guarded by mutex_
};

}  // namespace launchwatch::detail::vulkan
