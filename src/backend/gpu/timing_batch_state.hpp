// When a GPU timing batch may be closed: its open/close protocol, free of CUDA and HIP so that
// every order of a stream's launches and another thread's read is tested on the CPU.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

namespace launchwatch::detail::gpu {

/// The state of one timing batch (timing_slots.hpp): which slots are taken, which of their
/// launches are between their slot and their kernel, whether a reader is waiting for it, and
/// whether it is closed.
///
/// Closing a batch records its beacon on the stream; a beacon recorded while a launch holds a slot
/// of the batch but has not submitted its kernel would land before that kernel, so the batch would
/// be read back without it and its slot given to another batch while the kernel still stamps it
/// (review-2026-12-01b finding 4). So a read on another thread closes a batch only when no launch
/// is in that gap; otherwise it only flags the batch, and the launch in the gap closes it once its
/// kernel is submitted: the stream's next submission, as the issue asks.
///
/// One atomic word, every change one compare-and-swap: a timed launch pays two uncontended atomic
/// operations on it (take, launched) where a lock would cost two lock and unlock pairs, and a
/// read on another thread never makes a launch wait. Each change that closes the batch (close(),
/// and request_close() or launched() when they return true) closes it in the same step as it
/// checks the gap, so exactly one caller is told it closed the batch: that one records the beacon.
///
/// Thread safety: every member may be called from any thread.
class timing_batch_state {
 public:
  /// Takes the next slot for a launch, or nothing when the batch is closed or full.
  std::optional<std::uint32_t> take(std::uint32_t capacity) noexcept {
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    for (;;) {
      if ((word & closed_bit) != 0 || used_of(word) >= capacity) return std::nullopt;
      if (word_.compare_exchange_weak(word, word + one_used + one_launching,
                                      std::memory_order_acq_rel, std::memory_order_relaxed)) {
        return used_of(word);
      }
    }
  }

  /// A launch that took a slot submitted its kernel (or failed to). True when this closed the
  /// batch: a reader asked, and this was the last launch in the gap; the caller records the beacon.
  bool launched() noexcept {
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    for (;;) {
      if (launching_of(word) == 0) return false;
      std::uint64_t next = word - one_launching;
      const bool closes =
          (word & (closed_bit | requested_bit)) == requested_bit && launching_of(next) == 0;
      if (closes) next = (next | closed_bit) & ~requested_bit;
      if (word_.compare_exchange_weak(word, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        return closes;
      }
    }
  }

  /// A reader needs the batch read back. True when this closed it (no launch was in the gap); the
  /// caller records the beacon. Otherwise the batch is flagged, and launched() closes it.
  bool request_close() noexcept {
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    for (;;) {
      if ((word & closed_bit) != 0) return false;
      const bool closes = launching_of(word) == 0;
      const std::uint64_t next =
          closes ? (word | closed_bit) & ~requested_bit : word | requested_bit;
      if (word_.compare_exchange_weak(word, next, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        return closes;
      }
    }
  }

  /// Closes the batch. True when it was open: the caller then records its beacon. For the stream's
  /// own closes (full, a capture, the stream going), made with no launch of it in the gap.
  bool close() noexcept {
    std::uint64_t word = word_.load(std::memory_order_relaxed);
    for (;;) {
      if ((word & closed_bit) != 0) return false;
      if (word_.compare_exchange_weak(word, (word | closed_bit) & ~requested_bit,
                                      std::memory_order_acq_rel, std::memory_order_relaxed)) {
        return true;
      }
    }
  }

  /// Whether launches may still take slots.
  bool open() const noexcept { return (word_.load(std::memory_order_acquire) & closed_bit) == 0; }

  /// Slots taken: fixed once the batch is closed.
  std::uint32_t used() const noexcept { return used_of(word_.load(std::memory_order_acquire)); }

 private:
  // used: bits 0-15; launches in the gap: bits 16-31; a reader's flag; closed.
  static constexpr std::uint64_t one_used = 1;
  static constexpr std::uint64_t one_launching = std::uint64_t{1} << 16;
  static constexpr std::uint64_t requested_bit = std::uint64_t{1} << 32;
  static constexpr std::uint64_t closed_bit = std::uint64_t{1} << 33;

  static std::uint32_t used_of(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>(word & 0xffff);
  }
  static std::uint32_t launching_of(std::uint64_t word) noexcept {
    return static_cast<std::uint32_t>((word >> 16) & 0xffff);
  }

  std::atomic<std::uint64_t> word_{0};
};

}  // namespace launchwatch::detail::gpu
