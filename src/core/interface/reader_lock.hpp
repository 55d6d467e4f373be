// Core's interface: a reader-writer lock whose readers never share a cache line, the observer
// slot's lock, for any table read on every launch and written rarely (the runtime's live buffers).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <new>
#include <thread>

namespace launchwatch::detail {

/// A shared mutex for data read on every observed launch and written only when an observation is
/// installed or dropped.
///
/// std::shared_mutex keeps one reader count, so every reader writes the same cache line: measured on
/// a 16-core host, a names-only observer cost 39 ns a launch from one thread and 562 ns from four.
/// Here each reader thread counts itself on a line of its own, and a writer (rare) raises a flag and
/// waits for every line to drain. Readers that see the flag step back until it falls, so a stream
/// of launches can never starve an install, which a reader-preferring rwlock allows.
///
/// Satisfies SharedMutex for std::shared_lock and std::unique_lock. Not recursive: a reader must
/// not take it again (the observer slot aborts on that before it gets here).
class distributed_shared_mutex {
 public:
  void lock_shared() noexcept {
    auto& mine = lines_[line_of_this_thread()].readers;
    for (;;) {
      // Sequentially consistent on both sides (Dekker): either this reader sees the writer's flag,
      // or the writer sees this reader's count.
      mine.fetch_add(1, std::memory_order_seq_cst);
      if (!writer_.load(std::memory_order_seq_cst)) return;
      mine.fetch_sub(1, std::memory_order_release);
      while (writer_.load(std::memory_order_acquire)) std::this_thread::yield();
    }
  }

  void unlock_shared() noexcept {
    lines_[line_of_this_thread()].readers.fetch_sub(1, std::memory_order_release);
  }

  void lock() {
    writers_.lock();
    writer_.store(true, std::memory_order_seq_cst);
    for (auto& line : lines_) {
      while (line.readers.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
    }
  }

  void unlock() noexcept {
    writer_.store(false, std::memory_order_release);
    writers_.unlock();
  }

 private:
  static constexpr std::size_t line_count = 64;
  static constexpr std::size_t line_size = 64;

  struct alignas(line_size) line {
    std::atomic<long> readers{0};
  };

  /// Threads take lines in the order they first read, so the first 64 never share one.
  static std::size_t line_of_this_thread() noexcept {
    static std::atomic<std::size_t> next{0};
    thread_local const std::size_t index = next.fetch_add(1, std::memory_order_relaxed) % line_count;
    return index;
  }

  std::array<line, line_count> lines_{};
  alignas(line_size) std::atomic<bool> writer_{false};
  std::mutex writers_;
};

}  // namespace launchwatch::detail
