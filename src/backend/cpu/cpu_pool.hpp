// The CPU backend's pool: the threads a launch's cubes run on.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace launchwatch::detail {

/// One thread per hardware thread, shared by every CPU stream of the process.
///
/// A stream's worker runs a launch by splitting its cubes into chunks, offering them to the pool and
/// taking chunks itself until none is left, so a launch never waits for a pool thread to become free
/// and several streams' launches share the machine. One pool for the process, because each stream
/// having its own would oversubscribe the machine as soon as two threads launch.
///
/// Thread safety: `run` may be called from several threads at once.
class cpu_pool {
 public:
  /// A range of cubes to run: `run_cubes(context, first, end)`.
  using body = void (*)(void* context, std::uint64_t first, std::uint64_t end);

  /// The process's pool, started on first use and never destroyed (streams may run at exit); a
  /// forked child starts its own on first use.
  /// Cost: one relaxed load of the fork generation and an acquire load; starting takes a lock.
  static cpu_pool& instance();

  /// The lock `instance()` holds while it starts a pool, which fork() takes (fork_locks.hpp:
  /// cpu_pool). For a test that holds it across a fork, as a thread starting the pool would.
  static std::mutex& starting_lock() noexcept;

  /// Threads the pool has (the hardware's, at least 1).
  std::size_t size() const noexcept { return workers_.size(); }

  /// Runs `[0, total)` in chunks on the pool and the calling thread, returning once every chunk has
  /// run. The first exception a chunk throws stops the chunks not yet started and is rethrown here.
  void run(std::uint64_t total, body run_cubes, void* context);

  cpu_pool(const cpu_pool&) = delete;
  cpu_pool& operator=(const cpu_pool&) = delete;

 private:
  struct job;

  explicit cpu_pool(std::size_t threads);
  void work();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<job>> jobs_;
  std::vector<std::thread> workers_;
};

}  // namespace launchwatch::detail
