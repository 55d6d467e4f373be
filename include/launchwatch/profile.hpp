// Measurements of a launch: where its time was taken and how to read it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include <launchwatch/detail/profile_resolver.hpp>

namespace launchwatch {

/// A point on the one timeline launchwatch reports on.
///
/// Device clocks are mapped onto the host's steady clock, so host scopes and kernels measured on a
/// device can be laid on one axis without a conversion at every reader.
using instant = std::chrono::steady_clock::time_point;

/// How a measurement was taken, which decides what it means.
///
/// `device` is a window whose start and end were stamped on the device on one clock while nothing
/// waited: it is the kernel. `system` is host wall time around a blocking submit: it holds the
/// submission, the wait and, on a first launch, any compilation. The two differ several-fold, so
/// every duration carries its method and a report must not add one to the other unawares.
enum class timing_method {
  system,  ///< Host wall time around a blocking submit.
  device,  ///< Start and end stamped by the device, on one clock, with nothing waited.
};

/// The method's name as reports, logs and saved summaries spell it: "system" or "device".
constexpr std::string_view to_string(timing_method method) noexcept {
  return method == timing_method::device ? "device" : "system";
}

/// Start and end of one measured window, on one clock.
///
/// Kept as two instants rather than a length so an observer can place kernels on a timeline and see
/// where the device sat idle between them.
///
/// Thread safety: a value type; copies are independent. Cost: two stores.
class profile_ticks {
 public:
  /// The window from `start` to `end`.
  ///
  /// Precondition: `end` is not before `start`; a reversed window is clamped to zero length at
  /// `start`, since a negative kernel time is a clock fault, not a duration.
  static constexpr profile_ticks from_start_end(instant start, instant end) noexcept {
    return profile_ticks{start, end < start ? start : end};
  }

  /// When the window opened.
  constexpr instant start() const noexcept { return start_; }
  /// When the window closed.
  constexpr instant end() const noexcept { return end_; }
  /// How long it was open.
  constexpr std::chrono::nanoseconds length() const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(end_ - start_);
  }

  friend constexpr bool operator==(const profile_ticks&, const profile_ticks&) = default;

 private:
  constexpr profile_ticks(instant start, instant end) noexcept : start_{start}, end_{end} {}

  instant start_;
  instant end_;
};

namespace detail {
/// The holder every profile_duration keeps its read in.
using profile_resolver = basic_profile_resolver<std::optional<profile_ticks>>;
}  // namespace detail

/// One launch's measurement, not yet read.
///
/// A measurement on a device is two timestamps the device has not necessarily reached yet, so it is
/// handed around unread and read once, when the caller chooses: reading blocks until the device has
/// passed both, and reading early is exactly what keeps kernels from running back to back.
/// Move-only and read once because reading consumes what the backend set aside for it (a timing
/// slot, a pair of events).
///
/// Thread safety: one owner at a time; it may be moved to and read on any thread.
class profile_duration {
 public:
  /// A measurement that `resolve` reads.
  ///
  /// `resolve` is a move-only callable returning `std::optional<profile_ticks>`: it blocks until the
  /// window has closed and returns its ticks, or an empty optional when the window carried no
  /// measurement (never a zero: a zero would put an untimed launch into the timings). `method` says
  /// how the ticks were taken.
  ///
  /// Cost: no allocation when `resolve` fits in six pointers.
  template <class F>
    requires std::is_invocable_r_v<std::optional<profile_ticks>, std::decay_t<F>&> &&
             (!std::is_same_v<std::decay_t<F>, profile_duration>)
  profile_duration(F resolve, timing_method method)
      : resolver_{std::move(resolve)}, method_{method} {}

  /// A measurement already taken on the host: reading it waits on nothing.
  static profile_duration from_system_time(instant start, instant end) {
    return profile_duration{[ticks = profile_ticks::from_start_end(start, end)]() noexcept
                                -> std::optional<profile_ticks> { return ticks; },
                            timing_method::system};
  }

  profile_duration(profile_duration&&) noexcept = default;
  profile_duration& operator=(profile_duration&&) noexcept = default;
  profile_duration(const profile_duration&) = delete;
  profile_duration& operator=(const profile_duration&) = delete;
  ~profile_duration() = default;

  /// How the measurement was taken.
  timing_method method() const noexcept { return method_; }

  /// Whether the measurement can still be read: false once read, or after it was moved from.
  bool readable() const noexcept { return static_cast<bool>(resolver_); }

  /// Reads the measurement, blocking until the device has passed the window's end.
  ///
  /// Returns the window, or an empty optional when the window carried no measurement.
  /// Precondition: `readable()`; reading twice throws std::logic_error, since a second read would
  /// have nothing behind it. Exceptions from the backend's read (a kernel that faulted) propagate.
  std::optional<profile_ticks> resolve() &&;

 private:
  detail::profile_resolver resolver_;
  timing_method method_;
};

}  // namespace launchwatch
