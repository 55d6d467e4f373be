// What watches launches right now, in one byte: the flag every launch source's idle path reads.
//
// Internal, but included by every launch source (a backend, the CUDA bridge, a runtime built on
// launchwatch) because the idle check must be inlined at the call site to cost one load.
#pragma once

#include <atomic>
#include <cstdint>

namespace launchwatch::detail {

struct launch_watch_writer;

/// One byte that says whether an observer is installed and whether the profiling logger is on.
///
/// One word rather than the two flags it summarises, so a launch that nobody watches (every ordinary
/// run) pays one relaxed load and one branch for both, and a launch source builds nothing before it.
/// The bits are set only after what they announce is in place (the slot filled, the logger started)
/// and cleared only after it is gone, so a launch that reads a set bit and finds nothing behind it
/// does nothing, and one that reads a clear bit was not watched.
///
/// Thread safety: any thread may read; only the observer slot and the logger write (through
/// launch_watch_writer, defined in src/), so no other code can turn observing on over an empty slot.
class launch_watch {
 public:
  /// An observation is installed.
  static constexpr std::uint8_t observing = 1;
  /// The profiling logger is past `disabled`.
  static constexpr std::uint8_t logging = 2;

  /// The bits in force. Cost: one relaxed load.
  [[nodiscard]] static std::uint8_t bits() noexcept {
    return word_.load(std::memory_order_relaxed);
  }

 private:
  friend struct launch_watch_writer;
  static inline std::atomic<std::uint8_t> word_{0};
};

}  // namespace launchwatch::detail
