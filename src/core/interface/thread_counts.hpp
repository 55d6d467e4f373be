// Core's interface: counters that every launch adds to and a rare reader sums, each thread adding
// on a line of its own, so a launch pays no locked instruction and no cache line another thread
// writes.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/interface/thread_presence.hpp"

namespace launchwatch::detail {

/// `Counters` monotonic counts, each the sum of what every thread added: a thread adds on its own
/// line (thread_line), so an add is a load and a store where a shared counter's is a locked
/// read-modify-write on a line all launching threads take turns to own; reading one sums 128 lines.
/// For counts that each launch changes and only a collector, a teardown or statistics read.
///
/// Ordering: an add is a release store (a release increment on a shared line), and sum() acquires
/// each line, so a reader that saw anything a thread did after an add, through any chain of
/// release and acquire, sees the add. A line handed from an exited thread to a new one passes under
/// thread_line's lock, so the new owner continues from the old one's count.
///
/// Thread safety: add() and sum() from any thread. Not copyable or movable. Size: 8 KiB.
template <std::size_t Counters>
class thread_counts {
 public:
  thread_counts() = default;
  thread_counts(const thread_counts&) = delete;
  thread_counts& operator=(const thread_counts&) = delete;

  /// Adds `n` to counter `which` on this thread's line. Cost: a thread-local read, a load and a
  /// release store to a line only this thread writes (a locked add for a thread beyond the 64th).
  void add(std::size_t which, std::uint64_t n = 1) noexcept {
    const std::size_t index = thread_line::of_this_thread();
    auto& count = lines_[index].counts[which];
    if (thread_line::is_owned(index)) [[likely]] {
      count.store(count.load(std::memory_order_relaxed) + n, std::memory_order_release);
    } else {
      count.fetch_add(n, std::memory_order_release);
    }
  }

  /// Counter `which`: what every thread added so far (each line as of its load). Cost: 128 loads,
  /// each likely a cache miss.
  [[nodiscard]] std::uint64_t sum(std::size_t which) const noexcept {
    std::uint64_t total = 0;
    for (const auto& line : lines_) total += line.counts[which].load(std::memory_order_acquire);
    return total;
  }

 private:
  struct alignas(thread_line::size) line {
    std::array<std::atomic<std::uint64_t>, Counters> counts{};
  };
  static_assert(sizeof(line) == thread_line::size, "a thread's counts fill one line");
  std::array<line, thread_line::count> lines_{};
};

}  // namespace launchwatch::detail
