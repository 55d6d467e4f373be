// What an attribution keeps while a pass runs: per-thread logs of launches and scope intervals in
// chunked storage that is reused from pass to pass, so the steady state allocates nothing.
#pragma once

#include <launchwatch/attribute/attribution.hpp>

#include <array>
#include <map>
#include <tuple>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>
#include <deque>
#include <limits>
#include <unordered_map>

#include "fold_thread.hpp"
#include "scope_paths.hpp"
// The aggregation summarize() uses too: an aggregate-only pass folds into the same rows.
#include "report/summary_builder.hpp"

namespace launchwatch::detail {

/// A block of records. Its vector is reserved to `capacity` once and never grows past it, so a
/// record's address is stable while the chunk lives and clearing keeps the memory for reuse.
template <class T>
struct chunk {
  static constexpr std::size_t capacity = 256;

  /// `touch` fills the chunk once and empties it again, so every page of it has been written and
  /// the first launches recorded into it take no page fault: what reserving up front is for. A
  /// chunk added while a pass runs is not touched, since touching it then only moves the faults.
  explicit chunk(bool touch = false) {
    items.reserve(capacity);
    if (touch) {
      items.resize(capacity);
      items.clear();
    }
  }

  std::vector<T> items;
  chunk* next = nullptr;
};

template <class T>
void delete_chunks(chunk<T>* list) noexcept {
  while (list != nullptr) {
    delete std::exchange(list, list->next);
  }
}

/// Chunks no thread is filling, shared by one attribution's threads: a thread whose chunk is full
/// takes one here before allocating, and `collect` gives the chunks it emptied back.
template <class T>
class chunk_pool {
 public:
  chunk_pool() = default;
  chunk_pool(const chunk_pool&) = delete;
  chunk_pool& operator=(const chunk_pool&) = delete;
  ~chunk_pool() { delete_chunks(free_); }

  /// An empty chunk: a spare one if there is one, else a new one (may throw std::bad_alloc).
  chunk<T>* take() {
    {
      std::lock_guard lock{mutex_};
      if (free_ != nullptr) {
        auto* taken = std::exchange(free_, free_->next);
        taken->next = nullptr;
        return taken;
      }
    }
    return new chunk<T>;
  }

  /// Empties the chunks of `list` (outside the lock: destroying a record may release device
  /// resources) and keeps them for reuse.
  void give_back(chunk<T>* list) noexcept {
    if (list == nullptr) return;
    chunk<T>* tail = list;
    for (auto* c = list; c != nullptr; c = c->next) {
      c->items.clear();
      tail = c;
    }
    std::lock_guard lock{mutex_};
    tail->next = free_;
    free_ = list;
  }

  /// Makes spare chunks for at least `items` records, their memory written once so that filling
  /// them takes no page fault (see chunk's constructor).
  void reserve(std::size_t items) {
    const std::size_t chunks = (items + chunk<T>::capacity - 1) / chunk<T>::capacity;
    for (std::size_t i = 0; i < chunks; ++i) give_back(new chunk<T>{true});
  }

  /// The pool's lock, for the fork handlers that take it across fork() (fork_locks.hpp).
  std::mutex& lock_for_fork() noexcept { return mutex_; }

  /// Frees the spare chunks: the attribution they served has ended.
  void clear() noexcept {
    chunk<T>* spare = nullptr;
    {
      std::lock_guard lock{mutex_};
      spare = std::exchange(free_, nullptr);
    }
    delete_chunks(spare);
  }

 private:
  std::mutex mutex_;
  chunk<T>* free_ = nullptr;
};

/// An append-only list of chunks, filled by one thread under its log's lock.
template <class T>
class chunk_list {
 public:
  chunk_list() = default;
  chunk_list(const chunk_list&) = delete;
  chunk_list& operator=(const chunk_list&) = delete;
  ~chunk_list() { delete_chunks(head_); }

  /// Appends a record, taking a chunk from `pool` when the last one is full.
  template <class... Args>
  T& emplace(chunk_pool<T>& pool, Args&&... args) {
    if (last_is_full()) append_chunk(pool.take());
    return tail_->items.emplace_back(std::forward<Args>(args)...);
  }

  /// Appends a record, making a new chunk when the last one is full: for storage that is freed
  /// after use rather than kept in a pool (the trace prefix).
  template <class... Args>
  T& emplace_unpooled(Args&&... args) {
    if (last_is_full()) append_chunk(new chunk<T>);
    return tail_->items.emplace_back(std::forward<Args>(args)...);
  }

  /// The last record appended; null when the list is empty.
  T* last() noexcept { return tail_ != nullptr && !tail_->items.empty() ? &tail_->items.back() : nullptr; }

  /// Moves the last record out and removes it. Precondition: last() is not null.
  T take_last() noexcept(std::is_nothrow_move_constructible_v<T>) {
    T taken = std::move(tail_->items.back());
    tail_->items.pop_back();
    return taken;
  }

  /// Hands over every chunk and starts empty.
  chunk<T>* release() noexcept {
    tail_ = nullptr;
    return std::exchange(head_, nullptr);
  }

  /// Appends the chunks of `list` (another list's release()) after its own. Cost: a walk over the
  /// appended chunks to find their last.
  void append(chunk<T>* list) noexcept {
    if (list == nullptr) return;
    if (tail_ != nullptr) {
      tail_->next = list;
    } else {
      head_ = list;
    }
    tail_ = list;
    while (tail_->next != nullptr) tail_ = tail_->next;
  }

 private:
  bool last_is_full() const noexcept {
    return tail_ == nullptr || tail_->items.size() == chunk<T>::capacity;
  }

  /// Appends one empty chunk and makes it the last.
  void append_chunk(chunk<T>* fresh) noexcept {
    if (tail_ != nullptr) {
      tail_->next = fresh;
    } else {
      head_ = fresh;
    }
    tail_ = fresh;
  }

  chunk<T>* head_ = nullptr;
  chunk<T>* tail_ = nullptr;
};

/// What became of a launch's measurement so far.
enum class measurement_state : std::uint8_t {
  none,     ///< Nothing arrived (not timed, or not yet).
  pending,  ///< Kept unread, to be read by collect.
  length,   ///< The launch path read it and told the length.
};

/// A launch as recorded on the launch path: views over static storage, nothing formatted.
struct launch_entry {
  std::string_view kernel;
  std::string_view backend;
  std::uint64_t stream = 0;
  int device = 0;
  path_id path = no_path;
  std::array<std::uint32_t, 3> cube_count{1, 1, 1};
  std::array<std::uint32_t, 3> cube_dim{1, 1, 1};
  instant issued;
  /// When the launch returned: stamped as its measurement arrives only if a trace may read it
  /// (stamp_returned in attribution.cpp); `issued` otherwise.
  instant returned;
  std::optional<profile_duration> pending;
  std::chrono::nanoseconds length{0};
  timing_method method = timing_method::device;
  measurement_state state = measurement_state::none;
  bool dry_run = false;
  bool capturing = false;
  bool replayed = false;
  /// Aggregate-only: it took room in the trace prefix, so the fold keeps its record.
  bool in_prefix = false;
};

/// A launch of the trace prefix, folded: its record with the tables' indices still to be given
/// (by collect_bounded), and what those indices are made from.
struct prefix_launch {
  std::string_view kernel;
  std::string_view backend;
  std::uint64_t stream = 0;
  int device = 0;
  path_id path = no_path;
  launch_record record;
};

/// An aggregate-only attribution's trace prefix (attribution_options::trace_prefix_events): the
/// room left in it, shared by every thread, and where it ended once full.
class prefix_room {
 public:
  /// Trace events a launch takes, and a replayed node (a kernel slice only), and a scope interval.
  static constexpr std::size_t launch_events = 4;
  static constexpr std::size_t replayed_events = 1;
  static constexpr std::size_t interval_events = 1;

  /// Empties the prefix, with room for `events` (0: none, the prefix is full from the start).
  void reset(std::size_t events) noexcept {
    ends_.store(not_ended, std::memory_order_relaxed);
    left_.store(events, std::memory_order_relaxed);
    full_.store(events == 0, std::memory_order_release);
  }

  /// Takes room for `events`, or finds the prefix full; the first to find it full at `now` ends it
  /// there. Cost once full: a relaxed load.
  bool take(std::size_t events, instant now) noexcept {
    if (full_.load(std::memory_order_acquire)) return false;
    auto left = left_.load(std::memory_order_relaxed);
    while (left >= events) {
      if (left_.compare_exchange_weak(left, left - events, std::memory_order_relaxed)) return true;
    }
    auto expected = not_ended;
    (void)ends_.compare_exchange_strong(expected, now.time_since_epoch().count(), std::memory_order_relaxed);
    full_.store(true, std::memory_order_release);
    return false;
  }

  /// Whether the prefix is full: a scope entered now will not go into it (keeps_interval), so its
  /// start need not be read. Cost: an acquire load.
  bool full() const noexcept { return full_.load(std::memory_order_acquire); }

  /// Whether a scope that started at `start` and ended at `end` goes into the prefix: when it has
  /// room, or when the scope was open as the prefix filled (started no later than it ended).
  bool keeps_interval(instant start, instant end) noexcept {
    if (take(interval_events, end)) return true;
    // No later than: under a coarse clock a scope and the launch that filled the prefix can share
    // an instant, and the scope was entered first.
    const auto ended = ends_.load(std::memory_order_relaxed);
    return ended != not_ended && start.time_since_epoch().count() <= ended;
  }

  /// Where the prefix ended; none while it has room (or was never asked for and nothing came).
  std::optional<instant> ended() const noexcept {
    const auto ended = ends_.load(std::memory_order_relaxed);
    if (ended == not_ended) return std::nullopt;
    return instant{instant::duration{ended}};
  }

 private:
  static constexpr instant::rep not_ended = std::numeric_limits<instant::rep>::max();
  std::atomic<std::size_t> left_{0};
  std::atomic<bool> full_{true};
  std::atomic<instant::rep> ends_{not_ended};
};

/// A scope that ended.
struct interval_entry {
  path_id path = no_path;
  instant start;
  instant end;
};

struct recorder_pools {
  chunk_pool<launch_entry> launches;
  chunk_pool<interval_entry> intervals;
  /// The attribution keeps only the aggregate (attribution_options::aggregate_only): scopes record
  /// no intervals. Set before any thread has a log.
  bool aggregate_only = false;
  /// Aggregate-only: the size of the trace prefix (0: none) and its room. Set before any thread
  /// has a log.
  std::size_t prefix_events = 0;
  prefix_room prefix;

  /// When the pass being recorded began: its record's origin, and the start of a scope whose
  /// start was never read (scope.cpp, frame::unkept) and whose interval is kept after all, since
  /// that scope began before the pass.
  instant origin() const noexcept {
    return instant{instant::duration{origin_.load(std::memory_order_relaxed)}};
  }
  /// Starts the next pass at `at`. Called by the recorder, under its collect_mutex once made.
  void begin_pass(instant at) noexcept {
    origin_.store(at.time_since_epoch().count(), std::memory_order_relaxed);
  }

 private:
  std::atomic<instant::rep> origin_{0};
};

/// An aggregate-only attribution's launches fold into totals this often, per thread.
inline constexpr std::size_t fold_every = 4096;

/// An aggregate-only thread hands its launches to the fold thread (fold_thread.hpp) every
/// `fold_every`; once this many folds' worth wait for it, the thread folds them itself, so a fold
/// thread that falls behind (a measurement whose kernel has not finished) holds the launching
/// thread back instead of letting its unfolded launches grow without bound.
inline constexpr std::size_t fold_backlog = 2 * fold_every;

/// What an aggregate-only attribution totals launches by: scope path, kernel and stream. The views
/// are over the static storage a launch_entry's are.
using aggregate_key = std::tuple<path_id, std::string_view, std::string_view, int, std::uint64_t>;

/// An aggregate_key by the identity of its views (their addresses and lengths) rather than their
/// text: a launch source's names live as long as the process (launch_info::kernel), so one address
/// names one kernel for good, and a key is hashed from a few words instead of compared by name.
/// Several identities may stand for one aggregate_key (the same name at two addresses).
struct aggregate_identity {
  path_id path = no_path;
  const char* kernel = nullptr;
  std::size_t kernel_size = 0;
  const char* backend = nullptr;
  std::size_t backend_size = 0;
  int device = 0;
  std::uint64_t stream = 0;

  static aggregate_identity of(path_id path, std::string_view kernel, std::string_view backend,
                               int device, std::uint64_t stream) noexcept {
    return {path, kernel.data(), kernel.size(), backend.data(), backend.size(), device, stream};
  }
  friend bool operator==(const aggregate_identity&, const aggregate_identity&) = default;
};

/// Hashes an aggregate_identity. Cost: a few multiplies.
struct aggregate_identity_hash {
  std::size_t operator()(const aggregate_identity& key) const noexcept {
    // Each word folded in with a multiply by an odd constant (splitmix64's), so addresses that
    // differ only in their low bits still spread over the buckets.
    std::uint64_t h = key.path;
    const auto mix = [&h](std::uint64_t word) {
      h = (h ^ word) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    };
    mix(reinterpret_cast<std::uintptr_t>(key.kernel));
    mix(key.kernel_size);
    mix(reinterpret_cast<std::uintptr_t>(key.backend) ^ (key.backend_size << 48));
    mix(static_cast<std::uint32_t>(key.device));
    mix(key.stream);
    return static_cast<std::size_t>(h);
  }
};

/// One thread's records for one attribution.
///
/// Written by its thread only, under `mutex`; `collect` takes the lock just long enough to take the
/// chunks, so the lock is uncontended on the launch path. An aggregate-only log's totals are under
/// `fold_mutex`, held by whoever folds (the fold thread, or a launching thread or a collect that
/// folds itself), never by a launch that only hands its launches over; it is taken before `mutex`
/// when both are held (fork_locks.hpp: thread_folds, then thread_logs). Shared between the thread
/// (through its cache) and the recorder, so it outlives either: a thread that exits before
/// `collect` loses nothing, and a thread still holding it after its attribution ended finds it
/// closed (its storage freed, see close()) and records nothing, rather than writing into freed
/// memory.
struct thread_log {
  thread_log(std::uint64_t owner, std::uint32_t index, attribution_clock clock,
             std::shared_ptr<recorder_pools> pools)
      : owner{owner}, index{index}, clock{clock}, pools{std::move(pools)} {}

  /// The thread_token() of the thread it records for.
  const std::uint64_t owner;
  /// The thread's number within its attribution, from 1, in the order threads were first seen.
  const std::uint32_t index;
  /// Never null.
  const attribution_clock clock;
  const std::shared_ptr<recorder_pools> pools;

  // What the launching thread writes at every launch comes first, under `mutex`; what the fold
  // thread writes at every launch it folds starts on a cache line of its own (`fold_mutex`), so
  // neither writes into a line the other is writing at the same time (the prefix's left-out count,
  // written at every launch once the prefix is full, used to share one with the fold's scratch
  // list).
  std::mutex mutex;
  chunk_list<launch_entry> launches;
  chunk_list<interval_entry> intervals;
  /// The last launch this thread reported whose measurement has not arrived.
  launch_entry* awaiting = nullptr;
  /// Measurements that arrived with no launch awaiting them.
  std::size_t unpaired = 0;
  /// Set once its attribution has ended: nothing more is recorded, and its storage is freed.
  bool closed = false;
  /// The log of replayed graph nodes (recorder::replay_log), not a thread's. Set before it is shared.
  bool replays = false;

  /// Aggregate-only, under `mutex`: how many launches `launches` holds since the last hand-over,
  /// the launches handed over to be folded (oldest first) and how many, and whether the fold
  /// thread has been asked to fold them.
  std::size_t unfolded = 0;
  chunk_list<launch_entry> handed;
  std::size_t handed_launches = 0;
  bool fold_queued = false;
  /// Aggregate-only: what this thread left out of the trace prefix this pass; its launches under
  /// `mutex`, its scope intervals without it (a scope that began once the prefix was full takes
  /// no lock to be counted, scope.cpp).
  std::size_t left_out_launches = 0;
  std::atomic<std::size_t> left_out_intervals{0};

  alignas(64) std::mutex fold_mutex;
  /// Aggregate-only, under `fold_mutex`: the totals of the launches folded so far this pass, what
  /// was lost reading their measurements, and the folds' scratch list of kernels on the timeline
  /// (kept to be reused).
  std::map<aggregate_key, launch_group> aggregate;
  /// Aggregate-only: `aggregate`'s groups by identity (nodes' addresses hold while the map lives),
  /// so the fold finds a launch's group without comparing kernel names down the map; and the last
  /// group found, for runs of one kernel. Emptied whenever `aggregate` is handed over
  /// (forget_aggregate_index), and kept to a few times its size.
  std::unordered_map<aggregate_identity, launch_group*, aggregate_identity_hash> aggregate_index;
  std::optional<std::pair<aggregate_identity, launch_group*>> last_group;
  lost_measurements aggregate_lost;
  std::vector<std::tuple<std::string_view, int, std::uint64_t, instant, instant>> placed_scratch;
  /// Aggregate-only: the folded launches of the trace prefix, under `fold_mutex` (their scope
  /// intervals are in `intervals`). Chunks, not one vector: a vector that doubles to the prefix's
  /// size copies it and faults in about twice its memory (fresh pages past glibc's 32 MiB mmap
  /// threshold), which on a virtual machine cost a launch 450 ns in a job's first 250,000
  /// (docs/benchmarks.md, "The trace prefix in chunks"). Not pooled: a collect frees them, since
  /// a prefix fills once a pass and should not be held while the report is written.
  chunk_list<prefix_launch> prefix;

  /// Takes every launch handed over to be folded, oldest first, and resets what counts and
  /// queues them. The caller holds `mutex`.
  chunk<launch_entry>* take_handed() noexcept {
    handed_launches = 0;
    fold_queued = false;
    return handed.release();
  }

  /// Forgets where `aggregate`'s groups are: called before it is handed over or emptied.
  void forget_aggregate_index() noexcept {
    aggregate_index.clear();
    last_group.reset();
  }

  /// Frees what the log holds and records nothing from now on. Called when its attribution ends,
  /// because the thread's cache may keep the log alive long after that (until newer attributions
  /// push it out, or the thread exits), and with it a pass's worth of storage.
  void close() noexcept {
    chunk<launch_entry>* dropped_launches = nullptr;
    chunk<launch_entry>* dropped_handed = nullptr;
    chunk<interval_entry>* dropped_intervals = nullptr;
    chunk<prefix_launch>* dropped_prefix = nullptr;
    {
      std::lock_guard folding{fold_mutex};
      std::lock_guard lock{mutex};
      closed = true;
      dropped_prefix = prefix.release();
      awaiting = nullptr;
      dropped_launches = launches.release();
      dropped_handed = take_handed();
      dropped_intervals = intervals.release();
    }
    // Outside the lock: dropping an unread measurement may release device resources.
    delete_chunks(dropped_launches);
    delete_chunks(dropped_handed);
    delete_chunks(dropped_intervals);
    delete_chunks(dropped_prefix);
  }
};

/// An attribution's state.
struct recorder {
  explicit recorder(const attribution_options& options);
  /// Closes every thread's log and frees the spare chunks, so nothing of the attribution's storage
  /// outlives it, whichever threads still hold its logs.
  ~recorder();

  const std::uint64_t generation;
  const timing_request timing;
  const unscoped_launches unscoped;
  const attribution_clock clock;
  const std::shared_ptr<recorder_pools> pools;

  std::mutex logs_mutex;
  std::vector<std::shared_ptr<thread_log>> logs;
  /// The log replayed graph nodes go to (attribution::replayed), once one came; also in `logs`.
  std::shared_ptr<thread_log> replays;

  /// The scope path of each captured launch seen, by launch_info::launch_id, for the replays of
  /// its graph: the newest `captures_kept`, oldest forgotten first.
  static constexpr std::size_t captures_kept = 65536;
  std::mutex captures_mutex;
  std::unordered_map<std::uint64_t, path_id> capture_paths;
  std::deque<std::uint64_t> capture_order;

  /// Held while a pass is taken (the next one begins then: recorder_pools::begin_pass).
  std::mutex collect_mutex;

  /// Aggregate-only: the places of folded kernels on the timeline, from every thread.
  std::mutex timeline_mutex;
  timeline placed{fold_every};

  /// Aggregate-only: the thread the logs' launches are folded on. Declared last, so it is
  /// destroyed (its thread stopped) before anything its folds touch; ~recorder stops it first.
  fold_thread folds;

  /// The calling thread's log, made on its first use. May throw std::bad_alloc.
  std::shared_ptr<thread_log> log_of_this_thread();
  /// The log of replayed graph nodes, made on first use.
  thread_log& replay_log();
};

/// A number naming the calling thread, never given to another thread of the process: unlike
/// std::thread::id, which a thread started after another exited may be given again, so a log keyed
/// by it would pass to the new thread with the old one's launches and host track.
std::uint64_t thread_token() noexcept;

/// std::chrono::steady_clock::now(), as an attribution_clock.
instant steady_now() noexcept;

/// Makes `r` the attribution that receives scope intervals, and turns scope recording on.
void register_recorder(recorder& r);
/// Forgets `r`; the newest remaining attribution receives scope intervals, or scopes stop recording.
void unregister_recorder(recorder& r) noexcept;

/// The calling thread's log for `r`, through a small thread-local cache. May throw std::bad_alloc.
thread_log& log_for(recorder& r);

/// The calling thread's log for the attribution receiving scope intervals, or null when none lives
/// (or the log could not be made).
thread_log* scope_log() noexcept;

}  // namespace launchwatch::detail
