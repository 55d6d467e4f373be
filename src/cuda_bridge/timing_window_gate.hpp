// Whether a foreign launch is timed under cuda_bridge_options::timing_windows, and the handshake that
// lets a window close without losing the record of a launch that saw it open.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace launchwatch::detail::cuda_bridge {

/// A launch may await its kernel record only if CUPTI's kernel records were on when it was
/// submitted. A launch enters the gate at its ENTER (before submission) and leaves it at its EXIT
/// (after); closing the gate stops new entries and then waits for those inside to leave, so the
/// caller turns records off only once every launch that saw the window open was submitted with
/// records on (Dekker's handshake: both sides store, then load, sequentially consistent).
///
/// Thread safety: any thread. Cost: between windows, enter() is one relaxed load; inside one,
/// enter() and leave() are one atomic read-modify-write each on a shared counter. Paid only while
/// timing windows are configured.
class timing_window_gate {
 public:
  /// A launch's ENTER: true (and counted inside until leave()) when the window is open.
  [[nodiscard]] bool enter() noexcept {
    // Between windows (most launches, with short windows) the shared counter is not touched. A
    // window opening meanwhile only leaves this launch untimed, which the handshake allows.
    if (!open_.load(std::memory_order_relaxed)) return false;
    inside_.fetch_add(1, std::memory_order_seq_cst);
    if (open_.load(std::memory_order_seq_cst)) return true;
    inside_.fetch_sub(1, std::memory_order_release);
    return false;
  }
  /// The EXIT of a launch for which enter() returned true.
  void leave() noexcept { inside_.fetch_sub(1, std::memory_order_release); }

  /// Opens the window (after records were turned on).
  void open() noexcept {
    open_.store(true, std::memory_order_seq_cst);
    opened_.fetch_add(1, std::memory_order_relaxed);
  }
  /// Closes the window and waits, up to `patience`, for the launches inside to be submitted.
  /// Returns false when some were still inside then (a launch whose EXIT never came: its
  /// callbacks were turned off between ENTER and EXIT); their records may then be missing.
  bool close(std::chrono::nanoseconds patience) noexcept {
    open_.store(false, std::memory_order_seq_cst);
    const auto until = std::chrono::steady_clock::now() + patience;
    while (inside_.load(std::memory_order_seq_cst) != 0) {
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
  std::atomic<std::int64_t> inside_{0};
  std::atomic<std::uint64_t> opened_{0};
};

}  // namespace launchwatch::detail::cuda_bridge
