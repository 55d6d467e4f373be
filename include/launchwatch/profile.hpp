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

/// Type-erased, move-only holder of the callable behind a profile_duration.
///
/// C++20 has no std::move_only_function, and the deferred-timing path builds one of these per
/// launch, so small resolvers (a pointer and an index, say) are stored inline rather than on the
/// heap.
class profile_resolver {
 public:
  static constexpr std::size_t inline_size = 6 * sizeof(void*);

  profile_resolver() noexcept = default;

  template <class F>
  explicit profile_resolver(F&& resolve) {
    using stored = std::decay_t<F>;
    if constexpr (fits_inline<stored>()) {
      ::new (static_cast<void*>(storage_)) stored(std::forward<F>(resolve));
      ops_ = &inline_ops<stored>;
    } else {
      heap_ = new stored(std::forward<F>(resolve));
      ops_ = &heap_ops<stored>;
    }
  }

  profile_resolver(profile_resolver&& other) noexcept { take(other); }
  profile_resolver& operator=(profile_resolver&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  profile_resolver(const profile_resolver&) = delete;
  profile_resolver& operator=(const profile_resolver&) = delete;
  ~profile_resolver() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  /// Runs the callable once and empties the holder, whether it returns or throws.
  std::optional<profile_ticks> call_once() {
    struct empties {
      profile_resolver* self;
      ~empties() { self->reset(); }
    } on_exit{this};
    return ops_->call(target());
  }

 private:
  struct operations {
    std::optional<profile_ticks> (*call)(void* target);
    void (*relocate)(void* from, void* to) noexcept;  // inline storage only
    void (*destroy)(void* target) noexcept;
  };

  template <class F>
  static constexpr bool fits_inline() {
    return sizeof(F) <= inline_size && alignof(F) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<F>;
  }

  template <class F>
  static constexpr operations inline_ops{
      [](void* target) -> std::optional<profile_ticks> { return (*static_cast<F*>(target))(); },
      [](void* from, void* to) noexcept {
        ::new (to) F(std::move(*static_cast<F*>(from)));
        static_cast<F*>(from)->~F();
      },
      [](void* target) noexcept { static_cast<F*>(target)->~F(); }};

  template <class F>
  static constexpr operations heap_ops{
      [](void* target) -> std::optional<profile_ticks> { return (*static_cast<F*>(target))(); },
      nullptr, [](void* target) noexcept { delete static_cast<F*>(target); }};

  void* target() noexcept { return ops_->relocate ? static_cast<void*>(storage_) : heap_; }

  void take(profile_resolver& other) noexcept {
    ops_ = std::exchange(other.ops_, nullptr);
    if (ops_ == nullptr) return;
    if (ops_->relocate) {
      ops_->relocate(other.storage_, storage_);
    } else {
      heap_ = std::exchange(other.heap_, nullptr);
    }
  }

  void reset() noexcept {
    if (ops_ != nullptr) ops_->destroy(target());
    ops_ = nullptr;
    heap_ = nullptr;
  }

  const operations* ops_ = nullptr;
  void* heap_ = nullptr;
  alignas(std::max_align_t) std::byte storage_[inline_size];
};

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
