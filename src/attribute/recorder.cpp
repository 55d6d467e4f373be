// The live attributions, and each thread's cache of its logs.

#include "recorder.hpp"

#include <algorithm>

#include "aggregate_fold.hpp"
#include "core/interface/fork_locks.hpp"
#include "scope_nvtx.hpp"
#include "scope_paths.hpp"

namespace launchwatch::detail {
namespace {

/// The attributions alive, in creation order; the newest receives scope intervals.
struct recorder_registry {
  std::mutex mutex;
  std::vector<recorder*> live;
  /// The newest live attribution's generation, or 0: read without the lock by every scope.
  std::atomic<std::uint64_t> newest{0};

  static recorder_registry& get() {
    // Never destroyed: scopes may be left on other threads while static destructors run.
    static auto* const registry = new recorder_registry;
    return *registry;
  }
};

std::atomic<std::uint64_t> next_generation{1};

// --- fork(): the attribute library's ranks in fork_locks.hpp ---
//
// The registry's lock is taken first and held until the parent or the child handlers have released
// everything below it, so the live list, and the recorders and logs it leads to, stay as they are
// meanwhile (an attribution unregisters before its recorder goes). A thread log is reached through
// the list of its attribution: one lock per thread that recorded for it.

template <class Each>
void for_each_live(Each each) noexcept {
  for (recorder* r : recorder_registry::get().live) each(*r);
}

/// The handlers of a rank that is one lock in each live recorder: `lock_of(r)` returns r's.
template <auto lock_of>
constexpr fork_locks::handlers in_each_recorder{
    []() noexcept { for_each_live([](recorder& r) { lock_of(r).lock(); }); },
    []() noexcept { for_each_live([](recorder& r) { lock_of(r).unlock(); }); },
    []() noexcept { for_each_live([](recorder& r) { lock_of(r).unlock(); }); },
};

/// The handlers of a rank that is one lock in each thread log of each live recorder:
/// `lock_of(log)` returns the log's.
template <auto lock_of>
constexpr fork_locks::handlers in_each_log{
    []() noexcept {
      for_each_live([](recorder& r) {
        for (const auto& log : r.logs) lock_of(*log).lock();
      });
    },
    []() noexcept {
      for_each_live([](recorder& r) {
        for (const auto& log : r.logs) lock_of(*log).unlock();
      });
    },
    []() noexcept {
      for_each_live([](recorder& r) {
        for (const auto& log : r.logs) lock_of(*log).unlock();
      });
    },
};

void lock_pools() noexcept {
  for_each_live([](recorder& r) {
    r.pools->launches.lock_for_fork().lock();
    r.pools->intervals.lock_for_fork().lock();
  });
}
void unlock_pools() noexcept {
  for_each_live([](recorder& r) {
    r.pools->intervals.lock_for_fork().unlock();
    r.pools->launches.lock_for_fork().unlock();
  });
}

constexpr fork_locks::handlers pools_across_fork{&lock_pools, &unlock_pools, &unlock_pools};

[[maybe_unused]] const bool recorders_enrolled =
    fork_locks::enroll(
        fork_locks::rank::recorder_registry,
        fork_locks::one_lock<[]() -> auto& { return recorder_registry::get().mutex; }>) &&
    fork_locks::enroll(fork_locks::rank::recorder_collect,
                       in_each_recorder<[](recorder& r) -> auto& { return r.collect_mutex; }>) &&
    fork_locks::enroll(fork_locks::rank::recorder_logs,
                       in_each_recorder<[](recorder& r) -> auto& { return r.logs_mutex; }>) &&
    fork_locks::enroll(fork_locks::rank::thread_folds,
                       in_each_log<[](thread_log& log) -> auto& { return log.fold_mutex; }>) &&
    fork_locks::enroll(fork_locks::rank::thread_logs,
                       in_each_log<[](thread_log& log) -> auto& { return log.mutex; }>) &&
    fork_locks::enroll(fork_locks::rank::recorder_captures,
                       in_each_recorder<[](recorder& r) -> auto& { return r.captures_mutex; }>) &&
    fork_locks::enroll(fork_locks::rank::recorder_timeline,
                       in_each_recorder<[](recorder& r) -> auto& { return r.timeline_mutex; }>) &&
    fork_locks::enroll(fork_locks::rank::chunk_pools, pools_across_fork);

/// Set when the calling thread's cache below has been destroyed (the thread is exiting): trivially
/// destructible, so it can still be read while the thread's other thread_locals are torn down.
thread_local bool cache_gone = false;

/// A thread's logs for the last few attributions it worked for. Keyed by generation, never by
/// address: a new attribution can be allocated where an ended one was. An ended attribution's log
/// may stay here until pushed out, but closed, with its storage freed (see thread_log::close).
struct cached_log {
  std::uint64_t generation = 0;
  std::shared_ptr<thread_log> log;
};
constexpr std::size_t cache_size = 4;
struct log_cache_slots {
  std::array<cached_log, cache_size> slots;
  std::size_t next_victim = 0;
  log_cache_slots() = default;
  log_cache_slots(const log_cache_slots&) = delete;
  log_cache_slots& operator=(const log_cache_slots&) = delete;
  ~log_cache_slots() { cache_gone = true; }
};
thread_local log_cache_slots log_cache;

thread_log* cached(std::uint64_t generation) noexcept {
  for (auto& entry : log_cache.slots) {
    if (entry.generation == generation) return entry.log.get();
  }
  return nullptr;
}

thread_log& cache(std::uint64_t generation, std::shared_ptr<thread_log> log) {
  auto& slot = log_cache.slots[log_cache.next_victim];
  log_cache.next_victim = (log_cache.next_victim + 1) % cache_size;
  slot.generation = generation;
  slot.log = std::move(log);
  return *slot.log;
}

/// Drops the calling thread's cached log for `generation`, if it has one.
void forget_cached(std::uint64_t generation) noexcept {
  if (cache_gone) return;
  for (auto& entry : log_cache.slots) {
    if (entry.generation == generation) entry = cached_log{};
  }
}

}  // namespace

std::uint64_t thread_token() noexcept {
  static std::atomic<std::uint64_t> next{1};
  thread_local const std::uint64_t token = next.fetch_add(1, std::memory_order_relaxed);
  return token;
}

instant steady_now() noexcept { return std::chrono::steady_clock::now(); }

recorder::recorder(const attribution_options& options)
    : generation{next_generation.fetch_add(1, std::memory_order_relaxed)},
      timing{options.timing},
      unscoped{options.unscoped},
      clock{options.clock != nullptr ? options.clock : &steady_now},
      pools{std::make_shared<recorder_pools>()},
      folds{[this](thread_log& log) { fold_handed(*this, log); }} {
  pools->aggregate_only = options.aggregate_only;
  pools->prefix_events = options.aggregate_only ? options.trace_prefix_events : 0;
  pools->prefix.reset(pools->prefix_events);
  pools->begin_pass(clock());
  if (unscoped == unscoped_launches::sole_scoped_thread) sole_scoped_wanted.fetch_add(1, std::memory_order_relaxed);
  pools->launches.reserve(options.reserve_launches);
  pools->intervals.reserve(options.reserve_scopes);
}

recorder::~recorder() {
  // First: its folds read the logs and the timeline.
  folds.stop();
  if (unscoped == unscoped_launches::sole_scoped_thread) sole_scoped_wanted.fetch_sub(1, std::memory_order_relaxed);
  // The destroying thread's own cache entry goes entirely; other threads' caches cannot be
  // touched from here, so their entries are closed instead and only the small log object stays
  // until pushed out.
  forget_cached(generation);
  std::vector<std::shared_ptr<thread_log>> ended;
  {
    std::lock_guard lock{logs_mutex};
    ended.swap(logs);
  }
  for (const auto& log : ended) log->close();
  // Last: once every log is closed, no thread takes a chunk from the pools any more.
  pools->launches.clear();
  pools->intervals.clear();
}

std::shared_ptr<thread_log> recorder::log_of_this_thread() {
  const auto me = thread_token();
  std::lock_guard lock{logs_mutex};
  for (const auto& log : logs) {
    if (log->owner == me) return log;
  }
  auto log = std::make_shared<thread_log>(me, static_cast<std::uint32_t>(logs.size() + 1), clock,
                                          pools);
  logs.push_back(log);
  return log;
}

thread_log& recorder::replay_log() {
  std::lock_guard lock{logs_mutex};
  if (!replays) {
    // Owner 0 is no thread's token (they start at 1), so no thread ever finds this log as its own.
    auto log = std::make_shared<thread_log>(0, static_cast<std::uint32_t>(logs.size() + 1), clock, pools);
    log->replays = true;
    logs.push_back(log);
    replays = std::move(log);
  }
  return *replays;
}

void register_recorder(recorder& r) {
  auto& registry = recorder_registry::get();
  std::lock_guard lock{registry.mutex};
  registry.live.push_back(&r);
  registry.newest.store(r.generation, std::memory_order_release);
  recording_scopes.store(true, std::memory_order_relaxed);
  attributing.store(true, std::memory_order_relaxed);
}

void unregister_recorder(recorder& r) noexcept {
  auto& registry = recorder_registry::get();
  std::lock_guard lock{registry.mutex};
  std::erase(registry.live, &r);
  registry.newest.store(registry.live.empty() ? 0 : registry.live.back()->generation,
                        std::memory_order_release);
  recording_scopes.store(!registry.live.empty(), std::memory_order_relaxed);
  // Scopes keep reaching enter_scope while an NVTX tool hears them.
  attributing.store(!registry.live.empty() || scopes_go_to_nvtx(), std::memory_order_relaxed);
}

thread_log& log_for(recorder& r) {
  if (auto* log = cached(r.generation)) return *log;
  return cache(r.generation, r.log_of_this_thread());
}

thread_log* scope_log() noexcept {
  auto& registry = recorder_registry::get();
  const auto generation = registry.newest.load(std::memory_order_acquire);
  if (generation == 0 || cache_gone) return nullptr;
  if (auto* log = cached(generation)) return log;
  try {
    std::shared_ptr<thread_log> log;
    {
      // Held while the log is made so the recorder cannot be destroyed meanwhile.
      std::lock_guard lock{registry.mutex};
      const auto found = std::find_if(registry.live.begin(), registry.live.end(),
                                      [&](recorder* r) { return r->generation == generation; });
      if (found == registry.live.end()) return nullptr;
      log = (*found)->log_of_this_thread();
    }
    return &cache(generation, std::move(log));
  } catch (...) {
    return nullptr;
  }
}

}  // namespace launchwatch::detail
