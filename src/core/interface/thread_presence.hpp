// Core's interface: per-thread counts of the threads inside a section that every launch enters and
// a rare thread waits out (the observer slot's readers, the CUDA bridge's callbacks in flight),
// with no locked instruction on the frequent side where the kernel offers membarrier(2).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace launchwatch::detail {

/// Makes a store by a frequent thread visible before its next load, with the rare thread's help
/// (Dekker's pattern with asymmetric costs, as Linux's membarrier(2) and folly's asymmetric
/// barriers provide it): the frequent thread stores, calls light(), then loads; the rare thread
/// stores, calls heavy(), then loads; at least one of the two then sees the other's store.
///
/// Where the process can use membarrier's private expedited command (registered once, before the
/// first launch), light() is a compiler barrier and heavy() interrupts every running thread of the
/// process (about 1 µs). Elsewhere (old kernels, seccomp, valgrind), frequent threads take the
/// locked instruction themselves: `fast()` says which, and thread_presence picks its path by it.
namespace asymmetric_fence {

/// Whether light() alone orders a frequent thread (membarrier registered). Set once, never cleared.
inline std::atomic<bool> membarrier_ready{false};

/// Whether the frequent side may order its store and load with a compiler barrier alone. Cost: one
/// relaxed load of a word written once.
inline bool fast() noexcept {
  return membarrier_ready.load(std::memory_order_relaxed);
}

/// The frequent side, when fast(): orders nothing in the processor, only in the compiler; heavy()
/// supplies the processor's fence on this thread's behalf. Cost: none at run time.
inline void light() noexcept {
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

/// The rare side: every thread of the process passes a full memory barrier, or is descheduled,
/// between the caller's stores before the call and its loads after it. Registers the process for
/// membarrier first if that was not done (once); falls back to the global command where the private
/// one is refused. Thread safety: any thread. Cost: a system call (about 1 µs, more with many cores
/// running threads of the process).
void heavy() noexcept;

/// Registers the process for membarrier's private expedited command, once; afterwards fast() is
/// true if the kernel allowed it. Called by core's static initialisation; harmless to call again.
void prepare() noexcept;

}  // namespace asymmetric_fence

/// Which line of a per-thread table (thread_presence) this thread writes. The first
/// 64 threads alive at once each own one, written by no other thread, so without a locked
/// instruction; more threads share the next 64, with one. A thread's owned line is returned when it
/// exits, for the next thread to start.
namespace thread_line {

/// How many threads alive at once own a line; the others share as many more.
inline constexpr std::size_t owned = 64;
/// How many lines a per-thread table has.
inline constexpr std::size_t count = 2 * owned;
/// The size of a line, so that no two threads' lines share a cache line.
inline constexpr std::size_t size = 64;

/// This thread's line plus one; 0 before its first use. A shared one once the thread returned its
/// owned line (at its exit).
inline thread_local std::uint32_t index_plus_one = 0;

/// The first use on a thread: takes a free owned line (returned at the thread's exit), or a shared
/// one while 64 threads own theirs.
std::size_t claim() noexcept;

/// This thread's line. Cost: a thread-local read (a lock and a registration at the thread's exit
/// the first time).
inline std::size_t of_this_thread() noexcept {
  const std::uint32_t held = index_plus_one;
  if (held != 0) [[likely]]
    return held - 1;
  return claim();
}

/// Whether `line` is written by one thread alone.
inline bool is_owned(std::size_t line) noexcept {
  return line < owned;
}

}  // namespace thread_line

/// The threads inside a section now, each counted on a line of its own (thread_line): what a
/// section entered on every launch needs so that a thread that must wait for the section to drain
/// (installing an observer, tearing a bridge down) can, while the threads that enter it write only
/// their own line, without a locked instruction (asymmetric_fence), never the same line as another
/// thread. Entering is reentrant (a count, not a flag).
///
/// Thread safety: enter() and leave() from any thread, in pairs on that thread; wait_until_empty()
/// from any thread. Not copyable or movable (its address is what threads count themselves into).
class thread_presence {
 public:
  thread_presence() = default;
  thread_presence(const thread_presence&) = delete;
  thread_presence& operator=(const thread_presence&) = delete;

  /// Where a thread counted itself in: enter() returns it, leave() takes it, so the two ends of a
  /// section read the thread-local line index once (a call into the dynamic linker per read in a
  /// shared library).
  class ticket {
   public:
    /// A ticket of no section, to be assigned from enter().
    ticket() noexcept = default;
    ticket(std::atomic<long>& count, bool owned) noexcept : count_{&count}, owned_{owned} {}

   private:
    friend class thread_presence;
    std::atomic<long>* count_ = nullptr;
    bool owned_ = false;
  };

  /// Counts this thread in, ordered before the caller's next load: either that load sees what a
  /// rare thread stored before its wait_until_empty(), or that wait sees this thread counted.
  /// Cost: a thread-local read, a load and a store to this thread's own line (a locked increment
  /// without membarrier, or for a thread beyond the 64th).
  [[nodiscard]] ticket enter() noexcept {
    const std::size_t index = thread_line::of_this_thread();
    auto& count = lines_[index].count;
    const bool owned = thread_line::is_owned(index);
    if (owned && asymmetric_fence::fast()) [[likely]] {
      count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      asymmetric_fence::light();
    } else {
      count.fetch_add(1, std::memory_order_seq_cst);
    }
    return ticket{count, owned};
  }

  /// Counts the thread of `entered` out; what it did inside happens before a waiter that sees it
  /// out. On the thread that entered. Cost: a load and a release store (a locked decrement where
  /// enter() took one).
  static void leave(ticket entered) noexcept {
    auto& count = *entered.count_;
    if (entered.owned_) {
      // Only this thread writes an owned line, whichever way enter() counted it in.
      count.store(count.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    } else {
      count.fetch_sub(1, std::memory_order_release);
    }
  }

  /// The same, reading the thread's line again. Cost: a thread-local read more.
  void leave() noexcept {
    const std::size_t index = thread_line::of_this_thread();
    leave(ticket{lines_[index].count, thread_line::is_owned(index)});
  }

  /// Waits until no thread is counted in: fences for every thread (asymmetric_fence::heavy), then
  /// waits for each line to drain. Call after the store that turns newcomers away. Never from
  /// inside the section (it would wait for itself). Cost: a system call (about 1 µs), a load of
  /// each of 128 lines, and yields while any thread is inside.
  void wait_until_empty() const noexcept;

 private:
  struct alignas(thread_line::size) line {
    std::atomic<long> count{0};
  };
  std::array<line, thread_line::count> lines_{};
};

}  // namespace launchwatch::detail
