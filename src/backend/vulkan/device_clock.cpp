// The Vulkan device clock: device timestamps placed on the host's steady clock.
#include "backend/vulkan/device_clock.hpp"

#include <cmath>

#include <launchwatch/errors.hpp>

namespace launchwatch::detail::vulkan {

device_clock::device_clock(const device_api& api, VkDevice device, double period_ns)
    : api_{api}, device_{device}, period_ns_{period_ns} {
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
  return anchor{static_cast<double>(stamps[0]) * period_ns_, static_cast<std::int64_t>(stamps[1]),
                std::chrono::steady_clock::now()};
}

instant device_clock::to_host(std::uint64_t ticks) {
  const double device_ns = static_cast<double>(ticks) * period_ns_;
  std::lock_guard lock{mutex_};
  if (std::chrono::steady_clock::now() - anchor_.taken > std::chrono::seconds{1}) {
    try {
      const anchor next = calibrate();
      const double elapsed = next.device_ns - anchor_.device_ns;
      const double predicted = static_cast<double>(anchor_.host_ns) + elapsed * slope_;
      if (std::abs(predicted - static_cast<double>(next.host_ns)) > 1e6 || elapsed <= 0) {
        slope_ = 1.0;  // the clock was stepped: start over from this anchor
      } else if (elapsed > 5e8) {
        slope_ = static_cast<double>(next.host_ns - anchor_.host_ns) / elapsed;
      }
      anchor_ = next;
    } catch (const device_error&) {
      // Keep mapping with the last anchor: a second-old anchor is off by microseconds.
    }
  }
  const double offset = (device_ns - anchor_.device_ns) * slope_;
  return instant{std::chrono::nanoseconds{anchor_.host_ns + std::llround(offset)}};
}

std::chrono::nanoseconds device_clock::deviation() const {
  std::lock_guard lock{mutex_};
  return std::chrono::nanoseconds{static_cast<std::int64_t>(deviation_ns_)};
}

}  // namespace launchwatch::detail::vulkan
