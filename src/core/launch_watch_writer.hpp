// The only writer of launch_watch's bits: the observer slot and the profiling logger.
#pragma once

#include <atomic>
#include <cstdint>

#include <launchwatch/detail/launch_watch.hpp>

namespace launchwatch::detail {

struct launch_watch_writer {
  /// Told after the bits changed between "something watches" and "nothing does", so a launch
  /// source whose idle cost is not one load (the CUDA bridge: CUPTI dispatches every enabled
  /// callback) can switch itself on while something watches and off when nothing does. It reads the
  /// bits itself (two changes may race; the last call sees the last word).
  using listener = void (*)() noexcept;

  /// Sets or clears `bit`. Call only once what the bit announces is in place (set) or gone (clear).
  /// Returns whether that changed the answer of watched(): then call notify(), after releasing the
  /// locks held, since the listener calls into CUDA's tools interface, which may wait for a launch
  /// that waits for those locks.
  [[nodiscard]] static bool set(std::uint8_t bit, bool on) noexcept {
    const std::uint8_t before =
        on ? launch_watch::word_.fetch_or(bit, std::memory_order_relaxed)
           : launch_watch::word_.fetch_and(static_cast<std::uint8_t>(~bit), std::memory_order_relaxed);
    const bool others = (before & static_cast<std::uint8_t>(~bit)) != 0;
    return (before != 0) != (on || others);
  }

  /// Tells the listener, if any, that watched() changed.
  static void notify() noexcept {
    if (const listener call = listener_.load(std::memory_order_acquire)) call();
  }

  /// Installs `call` (or none, with nullptr) as the one listener.
  static void listen(listener call) noexcept { listener_.store(call, std::memory_order_release); }

 private:
  static inline std::atomic<listener> listener_{nullptr};
};

/// Tells the listener when it goes out of scope, if `changed`: declared before the locks a writer
/// takes, so it runs after they are released.
struct watch_change_notice {
  bool changed = false;
  watch_change_notice() = default;
  watch_change_notice(const watch_change_notice&) = delete;
  watch_change_notice& operator=(const watch_change_notice&) = delete;
  ~watch_change_notice() {
    if (changed) launch_watch_writer::notify();
  }
};

}  // namespace launchwatch::detail
