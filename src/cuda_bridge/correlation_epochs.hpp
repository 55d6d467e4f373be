// CUPTI's correlation ids widened to 64 bits. CUPTI numbers every CUDA API call of the process with
// a 32-bit id, which wraps after 2^32 calls: 1 to 12 hours at 0.1 to 1 M calls a second. Inside
// launchwatch an id is 64-bit, its upper half an epoch counted at each wrap seen at a launch's
// ENTER, so a record, a launch and a replay of one 32-bit id in two epochs are never taken for each
// other (review 2026-12-01b, finding 6). CUPTI-free.
#pragma once

#include <atomic>
#include <cstdint>

namespace launchwatch::detail::cuda_bridge {

/// The newest widened id seen at ENTER, and the widening of a 32-bit id against it: an id is put
/// in the epoch that brings it nearest to the newest (within 2^31 either way), so an id just past
/// the wrap opens the next epoch and a straggler of the last epoch, issued before the wrap, stays
/// in it. That holds while fewer than 2^31 CUDA calls separate an id's ENTER from the newest ENTER
/// seen, and its record from the newest ENTER.
///
/// Thread safety: every member is safe from any thread. Cost: a relaxed load, and a
/// compare-and-swap when the id is the newest.
class correlation_epochs {
 public:
  /// `id` (seen at a launch's or graph launch's ENTER) widened; the newest id moves up to it.
  std::uint64_t widen_at_enter(std::uint32_t id) noexcept {
    std::uint64_t newest = newest_.load(std::memory_order_relaxed);
    const std::uint64_t wide = nearest(newest, id);
    while (wide > newest &&
           !newest_.compare_exchange_weak(newest, wide, std::memory_order_relaxed)) {
    }
    return wide;
  }
  /// The newest widened id seen at ENTER so far.
  [[nodiscard]] std::uint64_t newest() const noexcept {
    return newest_.load(std::memory_order_relaxed);
  }
  /// `id` (of a record, which comes after its launch's ENTER) widened; moves nothing.
  [[nodiscard]] std::uint64_t widen(std::uint32_t id) const noexcept {
    return nearest(newest_.load(std::memory_order_relaxed), id);
  }

 private:
  static constexpr std::uint64_t epoch = std::uint64_t{1} << 32;
  static constexpr std::uint64_t half = epoch / 2;

  static std::uint64_t nearest(std::uint64_t newest, std::uint32_t id) noexcept {
    std::uint64_t wide = (newest & ~(epoch - 1)) | id;
    if (wide + half < newest) {
      wide += epoch;  // past the wrap: the next epoch
    } else if (wide > newest + half && wide >= epoch) {
      wide -= epoch;  // issued before the wrap: the last epoch
    }
    return wide;
  }

  std::atomic<std::uint64_t> newest_{0};
};

}  // namespace launchwatch::detail::cuda_bridge
