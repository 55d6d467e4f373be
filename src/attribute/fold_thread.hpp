// The thread an aggregate-only attribution folds its threads' launches on, so that a launching
// thread hands a full log over in a few pointer moves instead of reading 4,096 measurements itself.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace launchwatch::detail {

struct thread_log;

/// Runs `fold` for each log queued to it, on a thread of its own, started at the first queue().
///
/// Why: a fold reads every measurement of the launches it folds (for deferred timing, a lookup
/// of each kernel's record) and totals them; on the launching thread that is most of what
/// attributing a launch costs (docs/benchmarks.md, "The bridge's core on the CPU"). Here the
/// launching thread only queues its log, and folds itself only when the thread cannot take it.
///
/// Only where a core is to spare: the launching thread's records then travel to the fold thread's
/// core and back, which on a machine with fewer cores than busy threads costs the launching thread
/// more than folding itself (docs/benchmarks.md, "The fold on a thread of its own"). So the thread
/// is used when the process may run on at least `cores_wanted` cores (its affinity mask), and
/// otherwise every fold stays on the launching thread, as without one.
///
/// fork(): the thread exists in the process that started it only. A forked child finds queue()
/// refusing (its callers fold themselves), and leaves the parent's thread, lock and condition
/// alone, since the parent's thread may have held or waited on them at the fork; the child's copy
/// of them is leaked, never destroyed (destroying a condition a lost thread waited on blocks).
///
/// Thread safety: queue() from any thread; stop() from one, after which queue() refuses.
class fold_thread {
 public:
  /// The cores a process must be allowed to run on for folds to go to a thread: the launching
  /// thread, the fold thread, and one for the rest (a CUPTI buffer thread, the device's).
  static constexpr unsigned cores_wanted = 4;

  /// A fold thread if this process may run on `cores_wanted` cores (or as decide_for_testing
  /// says); otherwise one whose queue() always refuses.
  explicit fold_thread(std::function<void(thread_log&)> fold);
  fold_thread(const fold_thread&) = delete;
  fold_thread& operator=(const fold_thread&) = delete;
  /// stop().
  ~fold_thread();

  /// Has `log` folded on the thread, starting the thread if it is not running. False when it
  /// cannot be (no thread wanted here, stopped, a forked child, or no thread could be started): the
  /// caller folds itself. `log` must stay alive until stop() returns. A log queued again before its
  /// fold ran is folded once, by the caller's flag (thread_log::fold_queued). Cost: a lock, a push
  /// into a reserved vector and a notify (a system call when the thread sleeps: once a fold, every
  /// 4,096 launches).
  bool queue(thread_log& log) noexcept;

  /// Lets the thread finish the folds queued, then ends it. Idempotent.
  void stop() noexcept;

  /// For tests: makes fold_threads made from now on use their thread (true) or not (false)
  /// whatever the cores, or lets the cores decide again (nullopt).
  static void decide_for_testing(std::optional<bool> use) noexcept;

 private:
  struct state {
    std::mutex mutex;
    std::condition_variable work;
    std::vector<thread_log*> queued;  // guarded by mutex
    bool stopping = false;            // guarded by mutex
    std::thread thread;               // started under mutex
  };
  void run() noexcept;

  const std::function<void(thread_log&)> fold_;
  const bool used_;
  /// The fork generation this object was made in; the state belongs to that process only.
  const std::uint64_t generation_;
  std::unique_ptr<state> state_;
};

}  // namespace launchwatch::detail
