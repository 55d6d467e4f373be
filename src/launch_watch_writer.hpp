// The only writer of launch_watch's bits: the observer slot and the profiling logger.
#pragma once

#include <atomic>
#include <cstdint>

#include <launchwatch/detail/launch_watch.hpp>

namespace launchwatch::detail {

struct launch_watch_writer {
  /// Sets or clears `bit`. Call only once what the bit announces is in place (set) or gone (clear).
  static void set(std::uint8_t bit, bool on) noexcept {
    if (on) {
      launch_watch::word_.fetch_or(bit, std::memory_order_relaxed);
    } else {
      launch_watch::word_.fetch_and(static_cast<std::uint8_t>(~bit), std::memory_order_relaxed);
    }
  }
};

}  // namespace launchwatch::detail
