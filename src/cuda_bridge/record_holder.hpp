// Who CUPTI's kernel records go to: launchwatch, or another CUPTI client in the same process.
//
// CUPTI has one subscriber per process, but its activity API is process-wide and unguarded: any
// client's cuptiActivityRegisterCallbacks replaces the buffer callbacks (and
// cuptiActivityRegisterTimestampCallback the clock), so from then on every buffer, launchwatch's
// half-filled ones included, is handed to that client, and nothing tells launchwatch. (The
// PyTorch profiler does not: Kineto traces the CPU only once its cuptiSubscribe is refused.) So
// the bridge yields rather than breaks: while another client holds the records, launches are
// still reported and attributed, untimed (names only), rather than each waiting for a record
// that will never come; and it takes the records back when told the other client released them,
// or sees them reach it again. CUPTI-free.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

#include <launchwatch/profile.hpp>

namespace launchwatch::detail::cuda_bridge {

/// Why the records are taken to be elsewhere.
enum class taken_because {
  /// Told so (the program, through the injection's C API, before its own client starts).
  told,
  /// Records of finished launches stopped coming while CUPTI counted none dropped.
  stopped_coming,
};

/// What record_holder has seen so far.
struct holder_counts {
  /// Windows during which another client held the records (the current one included).
  std::uint64_t windows = 0;
  /// Their length so far (the current one up to now).
  std::chrono::nanoseconds held_elsewhere{0};
};

/// Whether CUPTI's kernel records reach launchwatch now.
///
/// Thread safety: every member is safe from any thread. held_elsewhere() is the one launches read.
class record_holder {
 public:
  /// Whether another client holds the records now: a launch then asks for none.
  /// Cost: one relaxed load.
  [[nodiscard]] bool held_elsewhere() const noexcept {
    return elsewhere_.load(std::memory_order_relaxed);
  }

  /// The records stopped reaching launchwatch (`why`), when the newest launch seen had the widened
  /// correlation id `newest_launch`: a record of a later launch proves they reach it again. Says so
  /// once per process (a warning with `lost`, the measurements given up, when not 0); nothing when
  /// they were already taken.
  void taken(taken_because why, std::uint64_t newest_launch, std::size_t lost = 0);
  /// The other client released the records and launchwatch registered its callbacks again.
  void returned() noexcept;
  /// Records up to the widened correlation id `newest` reached launchwatch: if one is of a launch
  /// after they were taken, they come back (a kernel that outran the record timeout, not another
  /// client, held them). Cost: one relaxed load when they are launchwatch's.
  void arrived(std::uint64_t newest) noexcept {
    if (held_elsewhere()) arrived_while_taken(newest);
  }

  [[nodiscard]] holder_counts counts() const noexcept;

 private:
  void arrived_while_taken(std::uint64_t newest) noexcept;
  /// Ends the current window (mutex_ held).
  void end_window_locked() noexcept;

  std::atomic<bool> elsewhere_{false};
  mutable std::mutex mutex_;
  std::uint64_t taken_after_ = 0;  // guarded by mutex_
  instant since_{};                // guarded by mutex_
  holder_counts counts_;           // guarded by mutex_
};

}  // namespace launchwatch::detail::cuda_bridge
