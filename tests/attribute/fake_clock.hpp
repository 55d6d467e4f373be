// A clock a test sets by hand, injected into an attribution for exact instants.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include <launchwatch/profile.hpp>

namespace launchwatch::testing {

/// Process-wide, because an attribution_clock is a plain function pointer.
struct fake_clock {
  static inline std::atomic<std::int64_t> now_ns{0};

  static instant now() noexcept {
    return instant{std::chrono::nanoseconds{now_ns.load(std::memory_order_relaxed)}};
  }
  static void set(std::chrono::nanoseconds at) { now_ns.store(at.count(), std::memory_order_relaxed); }
  static instant at(std::chrono::nanoseconds t) { return instant{t}; }

  /// The fake clock's instant, counting its reads in `reads`: for tests of what reads a clock.
  static inline std::atomic<long> reads{0};
  static instant counted_now() noexcept {
    reads.fetch_add(1, std::memory_order_relaxed);
    return now();
  }
};

}  // namespace launchwatch::testing
