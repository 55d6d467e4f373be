// Core's interface, the fork model: every lock a launch, a scope or an attribution can hold is
// taken across fork(), in one order, by one pthread_atfork prepare handler. A layer (or a backend
// to come) that owns such a lock enrolls it here under its rank (docs/design.md §13).
//
// A forked child has only the thread that called fork(). A lock that any other thread held at that
// moment stays held in the child for good, and the data it guards may be half-written. So the
// prepare step takes every such lock (which also waits until no thread is inside one of their
// critical sections), the parent releases them, and the child releases them or re-initialises
// what only the lost threads could have used (one thread: nothing else can touch them meanwhile).
//
// The order is fixed here, by rank, and never by which lock was first used. The prepare step takes
// the ranks from first to last; the parent and the child release them from last to first. Each rank
// is enrolled once (during static initialisation of the file that owns the lock), by a part of the
// library that may sit above core: core knows the ranks, not the locks of the attribute library.
//
// The order, outermost first. A rank may be taken while holding an earlier one, never a later one:
// code that nests two of these locks must take them in this order.
//
//  1. observation_slot    the observer slot (observation_slot.cpp). Outermost: a launch holds it
//                         shared while it calls observer methods, and those take the attribute
//                         locks below. Nothing below is ever held while the slot is taken
//                         (collect asks whether its attribution is installed before it takes any
//                         lock).
//  2. recorder_registry   the live attributions (attribute/recorder.cpp). Held by the prepare step
//                         from here to the end of the attribute ranks, so the live list, and the
//                         recorders it names, do not change while their locks are taken.
//  3. recorder_collect    each live attribution's collect_mutex: held by collect() only while it
//                         takes the threads' records, never while it reads a measurement.
//  4. recorder_logs       each live attribution's logs_mutex (the list of its thread logs).
//  5. thread_folds        each thread_log::fold_mutex, through its attribution's list (rank 4).
//                         Held while an aggregate-only log's launches are folded (by the fold
//                         thread, by a launching thread whose backlog is full, by a collect),
//                         reading the measurements of up to fold_backlog launches: a fork then
//                         waits for those kernels (see docs/guide.md, "fork()").
//  6. thread_logs         each thread_log::mutex, likewise. Held while a launch or a scope is
//                         recorded, and by collect or a fold while it takes a log's chunks.
//  7. recorder_captures   each live attribution's captures_mutex (taken under a thread log).
//  8. recorder_timeline   each live attribution's timeline_mutex (taken under a thread log or a
//                         fold).
//  9. chunk_pools         each live attribution's two chunk pools (taken under a thread log).
// 10. scoped_threads      the threads with a scope open (attribute/scope.cpp). Taken under the
//                         slot by a launch that is outside every scope
//                         (unscoped_launches::sole_scoped_thread).
// 11. path_table          the interned scope paths (attribute/scope.cpp). A leaf.
// 12. nvtx_registry       the injection's registered NVTX strings and domains (inject). A leaf.
// 13. cpu_devices         client::cpu()'s table of devices (backend/cpu). A leaf.
// 14. allocation_registry the buffers alive (runtime/allocation.cpp), a distributed reader lock.
// 15. logger_config       the profiling logger's configuration lock (held while a file opens).
// 16. logger_queue        the profiling logger's queue; the writer holds it only to take a batch,
//                         never while it resolves a measurement or writes a line.
// 17. symbol_table        the demangled device symbols (kernel_symbols.cpp). A leaf.
// 18. cpu_pool            which CPU pool is the process's (backend/cpu/cpu_pool.cpp), held while a
//                         pool starts: by a stream's worker at its first launch, and by
//                         cpu_device::name(), which an observer may call under the slot. A leaf,
//                         taken under any lock above.
// 19. thread_lines        which threads own a per-thread line (thread_presence.cpp), taken at a
//                         thread's first launch or count, under any lock above. A leaf, last; the
//                         child frees the lines of the threads it does not have.
//
// Locks that are not here, and why: a stream's and a CPU timing pool's locks (a child never uses a
// stream made before the fork: each stream records its fork generation), the CPU pool's own queue
// (the child starts a pool of its own), an attribution's fold thread's queue (the child never
// touches it: it folds on its own threads, fold_thread.hpp), each buffer's list of streams (see
// docs/guide.md, "fork()").
#pragma once

#include <cstddef>
#include <cstdint>

namespace launchwatch::detail::fork_locks {

/// A lock's place in the fork order (see above). Lower ranks are taken first.
enum class rank : std::uint8_t {
  observation_slot,
  recorder_registry,
  recorder_collect,
  recorder_logs,
  thread_folds,
  thread_logs,
  recorder_captures,
  recorder_timeline,
  chunk_pools,
  scoped_threads,
  path_table,
  nvtx_registry,
  cpu_devices,
  allocation_registry,
  logger_config,
  logger_queue,
  symbol_table,
  cpu_pool,
  thread_lines,
};
inline constexpr std::size_t rank_count = static_cast<std::size_t>(rank::thread_lines) + 1;

/// What the fork does with one rank's locks. `prepare` takes them (waiting for their holders);
/// `parent` releases them in the parent; `child` releases or re-initialises them in the child,
/// where it is the only thread. None may take a lock of an earlier rank, nor fork.
struct handlers {
  void (*prepare)() noexcept;
  void (*parent)() noexcept;
  void (*child)() noexcept;
};

/// The handlers of a rank that is one lock, taken before the fork and released in both processes.
/// `lock_of` (a captureless lambda or a function) returns it: anything with lock() and unlock().
template <auto lock_of>
inline constexpr handlers one_lock{
    []() noexcept { lock_of().lock(); },
    []() noexcept { lock_of().unlock(); },
    []() noexcept { lock_of().unlock(); },
};

/// Makes `taken` the handlers of `which`. Enroll once per rank, during static initialisation of
/// the file that owns the lock (so it is in place before any fork, and before any thread can hold
/// the lock); `taken` must outlive the process. Takes no lock: safe from anywhere.
/// Returns true, so it can initialise a namespace-scope constant.
bool enroll(rank which, const handlers& taken) noexcept;
bool enroll(rank which, const handlers&& temporary) = delete;  // it would dangle

}  // namespace launchwatch::detail::fork_locks
