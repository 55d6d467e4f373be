// Core's interface: a reader-writer lock whose readers never share a cache line, the observer
// slot's lock, for any table read on every launch and written rarely (the runtime's live buffers).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "core/interface/thread_presence.hpp"

namespace launchwatch::detail {

/// A shared mutex for data read on every observed launch and written only when an observation is
/// installed or dropped.
///
/// std::shared_mutex keeps one reader count, so every reader writes the same cache line: measured
/// on a 16-core host, a names-only observer cost 39 ns a launch from one thread and 562 ns from
/// four. Here each reader thread counts itself on a line of its own (thread_presence), without a
/// locked instruction where membarrier serves, and a writer (rare) raises a flag, fences for every
/// thread (asymmetric_fence::heavy, about 1 µs) and waits for every line to drain. Readers that see
/// the flag step back until it falls, so a stream of launches can never starve an install, which a
/// reader-preferring rwlock allows.
///
/// Satisfies SharedMutex for std::shared_lock and std::unique_lock. Not recursive: a reader must
/// not take it again (the observer slot aborts on that before it gets here).
class distributed_shared_mutex {
 public:
  /// Cost: a thread-local read, a load and a store to this thread's own line, a load of the writer
  /// flag (thread_presence::enter).
  void lock_shared() noexcept {
    for (;;) {
      // Dekker's pattern, asymmetric: either this reader sees the writer's flag, or the writer
      // sees this reader's count.
      readers_.enter();
      if (!writer_.load(std::memory_order_seq_cst)) return;
      readers_.leave();
      while (writer_.load(std::memory_order_acquire)) std::this_thread::yield();
    }
  }

  void unlock_shared() noexcept { readers_.leave(); }

  void lock() {
    writers_.lock();
    writer_.store(true, std::memory_order_seq_cst);
    asymmetric_fence::heavy();
    readers_.wait_until_empty();
  }

  void unlock() noexcept {
    writer_.store(false, std::memory_order_release);
    writers_.unlock();
  }

 private:
  thread_presence readers_;
  alignas(64) std::atomic<bool> writer_{false};
  std::mutex writers_;
};

}  // namespace launchwatch::detail
