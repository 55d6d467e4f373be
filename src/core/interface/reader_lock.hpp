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
  /// Where a reader counted itself (reader_lock keeps it between the two ends).
  using ticket = thread_presence::ticket;

  /// Cost: a thread-local read, a load and a store to this thread's own line, a load of the writer
  /// flag (thread_presence::enter).
  ticket lock_shared_ticket() noexcept {
    for (;;) {
      // Dekker's pattern, asymmetric: either this reader sees the writer's flag, or the writer
      // sees this reader's count.
      const ticket entered = readers_.enter();
      if (!writer_.load(std::memory_order_seq_cst)) return entered;
      thread_presence::leave(entered);
      while (writer_.load(std::memory_order_acquire)) std::this_thread::yield();
    }
  }
  static void unlock_shared(ticket entered) noexcept { thread_presence::leave(entered); }

  /// For std::shared_lock; reader_lock reads the thread's line once for both ends.
  void lock_shared() noexcept { (void)lock_shared_ticket(); }
  void unlock_shared() noexcept { readers_.leave(); }

  void lock() {
    writers_.lock();
    writer_.store(true, std::memory_order_seq_cst);
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

/// Holds a distributed_shared_mutex shared for its scope, as std::shared_lock does, with the
/// thread's line read once for both ends: the launch path's lock of the observer slot.
/// Not copyable or movable.
class [[nodiscard]] reader_lock {
 public:
  explicit reader_lock(distributed_shared_mutex& mutex) noexcept
      : entered_{mutex.lock_shared_ticket()} {}
  ~reader_lock() {
    if (held_) distributed_shared_mutex::unlock_shared(entered_);
  }
  reader_lock(const reader_lock&) = delete;
  reader_lock& operator=(const reader_lock&) = delete;

  /// Releases the lock before the scope ends (once).
  void unlock() noexcept {
    distributed_shared_mutex::unlock_shared(entered_);
    held_ = false;
  }

 private:
  distributed_shared_mutex::ticket entered_;
  bool held_ = true;
};

}  // namespace launchwatch::detail
