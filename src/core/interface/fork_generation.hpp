// Core's interface, part of the fork model (fork_locks.hpp): telling a forked child from the
// process that made its threads. A layer that keeps a thread (a stream's worker, a pool) uses it.
#pragma once

#include <cstdint>

namespace launchwatch::detail {

/// How many fork()s separate this process from the one that started it: 0 in the original process,
/// one more in each child (counted by the fork handler of fork_locks.hpp, before any other child
/// handler runs).
///
/// A child inherits every thread's state but only the forking thread: a stream worker, the CPU pool
/// and the logger's writer are gone there. Whatever keeps such a thread records the generation it
/// was started in, and a mismatch says the thread is not there (the child starts its own, or says
/// clearly that an inherited object cannot be used).
/// Cost: one relaxed load.
std::uint64_t fork_generation() noexcept;

}  // namespace launchwatch::detail
