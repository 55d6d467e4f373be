// Whether a foreign launch may await its kernel record while records are turned on and off (timing
// windows, the profiler API range), and the handshake that lets records go off without losing the
// record of a launch that saw them on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>

namespace launchwatch::detail::cuda_bridge {

/// A launch may await its kernel record only if CUPTI's kernel records were on when it was
/// submitted. Where the bridge turns records off while launches go on (between timing windows,
/// outside the profiler API range), the span in which they are on is this gate's "window". A launch
/// enters the gate at its ENTER (before submission) and leaves it at its EXIT (after); closing the
/// gate stops new entries and then waits for those inside to leave, so the caller turns records off
/// only once every launch that saw the window open was submitted with records on (Dekker's
/// handshake: both sides store, then load, sequentially consistent).
///
/// A launch whose EXIT never comes (its callbacks were turned off between ENTER and EXIT) would
/// hold every later close: forget_inside() drops those, and the tickets they hold no longer count.
///
/// Thread safety: any thread. Cost: between windows, enter() is one relaxed load; inside one,
/// enter() and leave() are one atomic read-modify-write each on a shared word. Paid only while
/// timing windows or the profiler API range are configured.
class kernel_records_gate {
 public:
  /// A launch's ENTER: when the window is open, the ticket its EXIT gives to leave(); nothing
  /// otherwise (the launch goes untimed).
  [[nodiscard]] std::optional<std::uint32_t> enter() noexcept {
    // Between windows (most launches, with short windows) the shared word is not touched. A
    // window opening meanwhile only leaves this launch untimed, which the handshake allows.
    if (!open_.load(std::memory_order_relaxed)) return std::nullopt;
    const std::uint64_t before = state_.fetch_add(1, std::memory_order_seq_cst);
    const auto ticket = static_cast<std::uint32_t>(before >> 32);
    if (open_.load(std::memory_order_seq_cst)) return ticket;
    leave(ticket);
    return std::nullopt;
  }
  /// The EXIT of a launch that enter() gave `ticket`.
  void leave(std::uint32_t ticket) noexcept {
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    // A ticket of before the last forget_inside() no longer counts.
    while (static_cast<std::uint32_t>(state >> 32) == ticket &&
           !state_.compare_exchange_weak(state, state - 1, std::memory_order_release,
                                         std::memory_order_relaxed)) {
    }
  }
  /// The launches inside will never leave (their callbacks were turned off): stops waiting for
  /// them.
  void forget_inside() noexcept {
    std::uint64_t state = state_.load(std::memory_order_relaxed);
    while (!state_.compare_exchange_weak(state, ((state >> 32) + 1) << 32,
                                         std::memory_order_acq_rel, std::memory_order_relaxed)) {
    }
  }

  /// Opens the window (after records were turned on).
  void open() noexcept {
    open_.store(true, std::memory_order_seq_cst);
    opened_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Closes the window and waits, up to `patience`, for the launches inside to be submitted.
  /// Returns false when some were still inside then; their records may be missing.
  bool close(std::chrono::nanoseconds patience) noexcept {
    open_.store(false, std::memory_order_seq_cst);
    const auto until = std::chrono::steady_clock::now() + patience;
    while ((state_.load(std::memory_order_seq_cst) & 0xffff'ffffU) != 0) {
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::yield();
    }
    return true;
  }

  [[nodiscard]] bool is_open() const noexcept { return open_.load(std::memory_order_relaxed); }
  /// Windows opened so far.
  [[nodiscard]] std::uint64_t opened() const noexcept {
    return opened_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<bool> open_{false};
  /// The launches inside (low 32 bits) and the tickets' generation (high 32), one word so a leave
  /// of a forgotten generation never takes from the count of the next.
  std::atomic<std::uint64_t> state_{0};
  std::atomic<std::uint64_t> opened_{0};
};

}  // namespace launchwatch::detail::cuda_bridge
