#include "backend/cpu/cpu_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>

#include "core/interface/fork_generation.hpp"
#include "core/interface/fork_locks.hpp"
#include "core/interface/thread_name.hpp"

namespace launchwatch::detail {
namespace {

/// Which pool is this process's: the pool, and the fork generation it was started in. Never
/// destroyed: streams may run at exit.
struct current_pool {
  std::atomic<cpu_pool*> pool{nullptr};
  std::atomic<std::uint64_t> generation{0};
  /// Held while a pool is started (the first launch of a process, or of a forked child).
  std::mutex mutex;

  static current_pool& get() {
    static auto* const state = new current_pool;
    return *state;
  }
};

// A thread starting the pool at the fork (its first launch, say) would leave this lock held in the
// child, whose first launch would wait for it forever (fork_locks.hpp: cpu_pool).
[[maybe_unused]] const bool pool_enrolled =
    fork_locks::enroll(fork_locks::rank::cpu_pool,
                       fork_locks::one_lock<[]() -> auto& { return current_pool::get().mutex; }>);

}  // namespace

/// One launch offered to the pool. Shared, because a pool thread may still hold it (finding no chunk
/// left) after the stream that offered it has moved on.
struct cpu_pool::job {
  std::uint64_t total = 0;
  std::uint64_t chunk = 1;
  std::uint64_t chunks = 0;
  body run_cubes = nullptr;
  void* context = nullptr;

  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> failed{false};

  std::mutex mutex;
  std::condition_variable finished_all;
  std::uint64_t finished = 0;  // guarded by mutex
  std::exception_ptr error;    // guarded by mutex

  /// Takes chunks until none is left.
  void work() {
    for (;;) {
      const std::uint64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      std::exception_ptr thrown;
      if (!failed.load(std::memory_order_relaxed)) {
        try {
          run_cubes(context, c * chunk, std::min(total, (c + 1) * chunk));
        } catch (...) {
          thrown = std::current_exception();
          failed.store(true, std::memory_order_relaxed);
        }
      }
      std::lock_guard lock{mutex};
      if (thrown && !error) error = std::move(thrown);
      if (++finished == chunks) finished_all.notify_all();
    }
  }
};

cpu_pool& cpu_pool::instance() {
  // A forked child has none of the pool's threads, so it starts a pool of its own and leaves the
  // inherited one (its queue and lock included) untouched.
  auto* const state = &current_pool::get();
  cpu_pool* pool = state->pool.load(std::memory_order_acquire);
  const std::uint64_t now = fork_generation();
  if (pool != nullptr && state->generation.load(std::memory_order_relaxed) == now) [[likely]] {
    return *pool;
  }
  std::lock_guard lock{state->mutex};
  pool = state->pool.load(std::memory_order_relaxed);
  if (pool == nullptr || state->generation.load(std::memory_order_relaxed) != now) {
    state->generation.store(now, std::memory_order_relaxed);
    pool = new cpu_pool{std::max(1u, std::thread::hardware_concurrency())};
    state->pool.store(pool, std::memory_order_release);
  }
  return *pool;
}

std::mutex& cpu_pool::starting_lock() noexcept { return current_pool::get().mutex; }

cpu_pool::cpu_pool(std::size_t threads) {
  workers_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    workers_.emplace_back([this] {
      name_this_thread("lw-cpu-pool");
      work();
    });
    // Never joined: the pool lives as long as the process, and its threads end with it.
    workers_.back().detach();
  }
}

void cpu_pool::work() {
  for (;;) {
    std::shared_ptr<job> taken;
    {
      std::unique_lock lock{mutex_};
      ready_.wait(lock, [&] { return !jobs_.empty(); });
      taken = jobs_.front();
    }
    taken->work();
    // Every chunk is taken: nobody else needs to find this job.
    std::lock_guard lock{mutex_};
    if (const auto it = std::find(jobs_.begin(), jobs_.end(), taken); it != jobs_.end()) {
      jobs_.erase(it);
    }
  }
}

void cpu_pool::run(std::uint64_t total, body run_cubes, void* context) {
  if (total == 0) return;
  // A few chunks per thread, so a thread that got slow chunks does not hold the launch back.
  const std::uint64_t wanted = std::min<std::uint64_t>(total, size() * 4);
  auto offered = std::make_shared<job>();
  offered->total = total;
  offered->chunk = (total + wanted - 1) / wanted;
  offered->chunks = (total + offered->chunk - 1) / offered->chunk;
  offered->run_cubes = run_cubes;
  offered->context = context;
  if (offered->chunks > 1) {
    {
      std::lock_guard lock{mutex_};
      jobs_.push_back(offered);
    }
    ready_.notify_all();
  }
  offered->work();
  std::exception_ptr error;
  {
    std::unique_lock lock{offered->mutex};
    offered->finished_all.wait(lock, [&] { return offered->finished == offered->chunks; });
    // Taken, not copied: the job may be freed by a worker, and the exception must then be the
    // caller's alone (freed where it is read; ThreadSanitizer cannot see the exception's reference
    // count, which lives in the uninstrumented C++ runtime, and reported the worker's free of a
    // message the caller had read).
    error = std::move(offered->error);
  }
  if (offered->chunks > 1) {
    std::lock_guard lock{mutex_};
    if (const auto it = std::find(jobs_.begin(), jobs_.end(), offered); it != jobs_.end()) {
      jobs_.erase(it);
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace launchwatch::detail
