// Measurements the tests hand the launch path (measured, measured_on_device, measured_while), as a
// backend would. The observer the tests install is recording_observer.hpp's.
#pragma once

#include <chrono>
#include <optional>

#include <launchwatch/profile.hpp>

namespace launchwatch::testing {

/// A measurement of `length` taken on the host, as a backend without device timestamps hands one
/// over: reading it waits on nothing.
inline profile_duration measured(std::chrono::nanoseconds length) {
  const auto start = std::chrono::steady_clock::now();
  return profile_duration::from_system_time(start, start + length);
}

/// The same, claiming the device clock.
inline profile_duration measured_on_device(std::chrono::nanoseconds length) {
  const auto start = std::chrono::steady_clock::now();
  return profile_duration{
      [ticks = profile_ticks::from_start_end(start, start + length)]() -> std::optional<profile_ticks> {
        return ticks;
      },
      timing_method::device};
}

/// A measurement whose read runs `during_the_read` first, the way a pass that ends while its last
/// kernel is still running drops its observation under the read.
template <class F>
profile_duration measured_while(std::chrono::nanoseconds length, F during_the_read) {
  const auto start = std::chrono::steady_clock::now();
  return profile_duration{[=]() mutable -> std::optional<profile_ticks> {
                            during_the_read();
                            return profile_ticks::from_start_end(start, start + length);
                          },
                          timing_method::system};
}

}  // namespace launchwatch::testing
