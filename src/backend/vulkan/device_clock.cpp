// The Vulkan device clock: device timestamps placed on the host's steady clock.
#include "backend/vulkan/device_clock.hpp"

#include <cmath>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail::vulkan {
namespace {

/// Device ticks from `from` to `to`, signed: a timestamp may lie before the anchor it is mapped
/// through (a window read after a re-anchor).
std::int64_t ticks_between(std::uint64_t from, std::uint64_t to) noexcept {
  return static_cast<std::int64_t>(to - from);
}

}  // namespace

device_clock::device_clock(const device_api& api, VkDevice device, double period_ns,
                           std::chrono::nanoseconds reanchor_after)
    : api_{api}, device_{device}, period_ns_{period_ns}, reanchor_after_{reanchor_after} {
  anchor_ = calibrate();
}

device_clock::anchor device_clock::calibrate() {
  VkCalibratedTimestampInfoEXT infos[2]{};
  infos[0].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
  infos[0].timeDomain = VK_TIME_DOMAIN_DEVICE_EXT;
  infos[1].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
  infos[1].timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
  std::uint64_t stamps[2]{};
  std::uint64_t deviation = 0;
  check(api_.vkGetCalibratedTimestampsEXT(device_, 2, infos, stamps, &deviation),
        "vkGetCalibratedTimestampsEXT");
  deviation_ns_ = deviation;
  // steady_clock is CLOCK_MONOTONIC with libstdc++ on Linux: the host stamp is its nanoseconds.
  return anchor{stamps[0], static_cast<std::int64_t>(stamps[1]), std::chrono::steady_clock::now()};
}

device_clock::mapping device_clock::current() {
  if (std::chrono::steady_clock::now() - anchor_.taken > reanchor_after_) {
    try {
      const anchor next = calibrate();
      const std::int64_t ticks = ticks_between(anchor_.device_ticks, next.device_ticks);
      const double elapsed = static_cast<double>(ticks) * period_ns_;  // device ns, from anchor_
      const mapping last{anchor_.device_ticks, anchor_.host_ns, period_ns_ * slope_};
      const std::int64_t predicted = map(last, next.device_ticks);
      if (std::llabs(predicted - next.host_ns) > 1'000'000 || ticks <= 0) {
        slope_ = 1.0;  // the clock was stepped: start over from this anchor
      } else if (elapsed > 5e8) {
        slope_ = static_cast<double>(next.host_ns - anchor_.host_ns) / elapsed;
      }
      anchor_ = next;
    } catch (const device_error&) {
      // Keep mapping with the last anchor: a second-old anchor is off by microseconds.
    }
  }
  return mapping{anchor_.device_ticks, anchor_.host_ns, period_ns_ * slope_};
}

std::int64_t device_clock::map(const mapping& through, std::uint64_t ticks) noexcept {
  // Relative to the anchor, the double holds at most a few seconds' ticks and loses nothing.
  const std::int64_t offset = ticks_between(through.device_ticks, ticks);
  return through.host_ns + std::llround(static_cast<double>(offset) * through.ns_per_tick);
}

device_clock::mapping device_clock::current_mapping() {
  std::lock_guard lock{mutex_};
  return current();
}

instant device_clock::to_host(std::uint64_t ticks) {
  return instant{std::chrono::nanoseconds{map(current_mapping(), ticks)}};
}

profile_ticks device_clock::window(std::uint64_t start, std::uint64_t end, instant submitted) {
  const mapping through = current_mapping();
  const std::int64_t from = map(through, start);
  // An end stamped before the start (a driver's reordering) is a window of length zero.
  const std::int64_t length = ticks_between(start, end) > 0 ? map(through, end) - from : 0;
  instant opened{std::chrono::nanoseconds{from}};
  // A launch cannot start before it was submitted: a mapping off by more than that (an anchor that
  // stepped, a window read long after) moves the window, never changes its length.
  if (opened < submitted) opened = submitted;
  return profile_ticks::from_start_end(opened, opened + std::chrono::nanoseconds{length});
}

std::chrono::nanoseconds device_clock::deviation() const {
  std::lock_guard lock{mutex_};
  return std::chrono::nanoseconds{static_cast<std::int64_t>(deviation_ns_)};
}

}  // namespace launchwatch::detail::vulkan
