// Scopes: interned paths and each thread's stack of open scopes.

#include <launchwatch/attribute/scope.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/interface/fork_locks.hpp"
#include "core/interface/made_on_first_use.hpp"
#include "recorder.hpp"
#include "scope_nvtx.hpp"
#include "scope_paths.hpp"

namespace launchwatch::detail {
namespace {

std::size_t hash_key(path_id parent, std::string_view name) noexcept {
  return std::hash<std::string_view>{}(name) ^ (static_cast<std::size_t>(parent) * 0x9e3779b97f4a7c15ULL);
}

/// Every path any thread entered: one node per (parent, name), never removed, so ids and the views
/// over names stay valid for the life of the process.
struct path_table {
  struct interned {
    path_id parent;
    std::string name;
  };
  struct key {
    path_id parent;
    std::string_view name;
    friend bool operator==(const key&, const key&) = default;
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept { return hash_key(k.parent, k.name); }
  };

  std::mutex mutex;
  std::deque<interned> nodes;  // id n is nodes[n - 1]; a deque never moves what it holds
  std::unordered_map<key, path_id, key_hash> ids;

  static path_table& get() {
    // Never destroyed: a scope may be left on another thread while static destructors run.
    static auto* const table = new path_table;
    return *table;
  }
};

/// A thread's recent lookups, so entering a scope it has entered before neither hashes the whole
/// name nor takes a lock: keyed by the parent, the name's length and its first and last eight
/// bytes (a tag), confirmed by comparing the whole text. Not by where the caller's name lives: a
/// name built at run time in a loop (`"layer " + std::to_string(i)`, short enough for a string's
/// own buffer) has the same address every time. Entries point at interned names, which this
/// thread read under the table's lock when it cached them.
///
/// Why 8 ways of 128 sets (24 KiB, made on a thread's first scope, so threads that enter none
/// carry none of it): a real model enters a few hundred paths a step, in turn (ResNet-18's forward
/// and backward about 240, a transformer's more), and the 64 direct-mapped entries this replaced
/// held too few of them: most lookups went to the table's lock and two hashes of the text
/// (docs/benchmarks.md, "Thread caches that hold a model's kernels and scopes"). Eight ways keep a
/// set from overflowing where a few hundred paths fall unevenly on the sets; the newest goes
/// first, the oldest out.
struct intern_cache_entry {
  path_id parent = no_path;
  path_id id = no_path;
  const std::string* name = nullptr;  // the interned name
};
constexpr std::size_t intern_cache_ways = 8;
constexpr std::size_t intern_cache_set_count = 128;
struct intern_cache_set {
  /// The entries' tags (intern_cache_tag), together (one cache line) for the scan; 0 is empty.
  std::array<std::uint64_t, intern_cache_ways> tags{};
  std::array<intern_cache_entry, intern_cache_ways> ways;
};
using intern_cache_sets = std::array<intern_cache_set, intern_cache_set_count>;
/// This thread's cache, made on its first scope; without one (out of memory, or the thread's end
/// freed it), interning goes to the table every time.
constinit thread_local made_on_first_use<intern_cache_sets> intern_cache;
constinit thread_local std::size_t intern_cache_misses_here = 0;

/// A (parent, name)'s tag: its parent, length and first and last eight bytes mixed, never 0. Reads
/// at most 16 bytes of the text, which its caller has just written or read.
std::uint64_t intern_cache_tag(path_id parent, std::string_view name) noexcept {
  std::uint64_t head = 0;
  std::uint64_t tail = 0;
  const std::size_t size = name.size();
  if (size > 0) std::memcpy(&head, name.data(), std::min<std::size_t>(size, 8));
  if (size > 8) std::memcpy(&tail, name.data() + size - 8, 8);  // overlaps the head below 16
  std::uint64_t key = (head * 0x9e3779b97f4a7c15ULL) ^ (tail * 0xc2b2ae3d27d4eb4fULL) ^
                      (static_cast<std::uint64_t>(parent) << 20) ^ size;
  key ^= key >> 29;
  key *= 0xbf58476d1ce4e5b9ULL;
  key ^= key >> 32;
  return key | 1;
}

/// The set a tag is cached in: its top 7 bits (128 sets).
intern_cache_set& intern_cache_set_of(intern_cache_sets& sets, std::uint64_t tag) noexcept {
  return sets[tag >> 57];
}
static_assert(intern_cache_set_count == std::size_t{1} << 7);

/// An open scope on this thread.
struct frame {
  path_id path;
  std::uint32_t serial;
  instant start;
  /// Entered while nothing could keep its interval: its log's attribution is aggregate-only and
  /// its trace prefix was full, and a prefix full before a scope began never takes that scope
  /// (prefix_room::keeps_interval). Such a scope reads no clock, at either end: in a long job's
  /// steady state (a module's hooks enter two scopes a call) the two reads are most of a scope's
  /// cost on a virtual machine's clock. Were its interval kept after all (a collect emptied the
  /// prefix, or another attribution took over, before it ended), it began before that pass did,
  /// and starts at the pass's origin.
  bool unkept = false;
};

/// A scope entered now, with its start as `log` (null: no attribution records this thread) keeps
/// it.
frame scope_start(thread_log* log) noexcept {
  frame entered{};
  if (log == nullptr) {
    entered.start = steady_now();
  } else if (log->pools->aggregate_only && log->pools->prefix.full()) {
    entered.unkept = true;
  } else {
    entered.start = log->clock();
  }
  return entered;
}

/// The threads that have a scope open, each by its innermost path as it publishes it, for
/// sole_scoped_thread_path. Never destroyed: a thread may leave its last scope while statics go.
struct scoped_threads {
  std::mutex mutex;
  std::vector<const std::atomic<path_id>*> open;
  std::atomic<std::size_t> count{0};

  static scoped_threads& get() {
    static auto* const threads = new scoped_threads;
    return *threads;
  }
  /// A child forked while another thread lists itself would find the lock held forever, and would
  /// keep the entries of threads it does not have: the fork takes the lock (fork_locks.hpp:
  /// scoped_threads, after the slot, under which a launch reads the list), and the child keeps only
  /// its own thread's entry.
  static void in_forked_child() noexcept;
  /// May throw std::bad_alloc, adding nothing.
  void add(const std::atomic<path_id>* path) {
    std::lock_guard lock{mutex};
    open.push_back(path);
    count.store(open.size(), std::memory_order_relaxed);
  }
  void remove(const std::atomic<path_id>* path) noexcept {
    std::lock_guard lock{mutex};
    std::erase(open, path);
    count.store(open.size(), std::memory_order_relaxed);
  }
};

struct scope_stack {
  scope_stack() { frames.reserve(32); }
  // A thread that ends with ranges still open (an NVTX push never popped) leaves the list here.
  ~scope_stack() {
    if (listed) scoped_threads::get().remove(&innermost);
  }
  scope_stack(const scope_stack&) = delete;
  scope_stack& operator=(const scope_stack&) = delete;

  std::vector<frame> frames;
  std::uint32_t next_serial = 1;
  /// frames.back().path, for other threads to read (no_path while frames is empty).
  std::atomic<path_id> innermost{no_path};
  /// Whether `innermost` is in scoped_threads: from a first scope entered while sole_scoped_wanted
  /// to the last one left.
  bool listed = false;
};
thread_local scope_stack open_scopes;

void scoped_threads::in_forked_child() noexcept {
  auto& threads = get();
  threads.open.clear();
  if (open_scopes.listed) threads.open.push_back(&open_scopes.innermost);  // reserved: no allocation fails
  threads.count.store(threads.open.size(), std::memory_order_relaxed);
  threads.mutex.unlock();
}

constexpr fork_locks::handlers scoped_threads_across_fork{
    []() noexcept { scoped_threads::get().mutex.lock(); },
    []() noexcept { scoped_threads::get().mutex.unlock(); },
    &scoped_threads::in_forked_child,
};

// A thread interning a new scope name at the fork would leave the table locked in the child, whose
// first new scope would wait forever (review 2026-12-01b, finding 3).
[[maybe_unused]] const bool scopes_enrolled =
    fork_locks::enroll(fork_locks::rank::scoped_threads, scoped_threads_across_fork) &&
    fork_locks::enroll(fork_locks::rank::path_table,
                       fork_locks::one_lock<[]() -> auto& { return path_table::get().mutex; }>);

/// A token's depth carries, in its top bit, whether the scope is also an NVTX range; a depth of
/// `no_frame` means it is only that (no attribution was recording when it was entered).
constexpr std::uint32_t nvtx_range_bit = std::uint32_t{1} << 31;
constexpr std::uint32_t no_frame = nvtx_range_bit - 1;

}  // namespace

std::atomic<bool> recording_scopes{false};
std::atomic<int> sole_scoped_wanted{0};

path_id intern_path(path_id parent, std::string_view name) {
  std::uint64_t tag = 0;
  intern_cache_set* set = nullptr;
  if (intern_cache_sets* const cache = intern_cache.get(); cache != nullptr) {
    tag = intern_cache_tag(parent, name);
    set = &intern_cache_set_of(*cache, tag);
    for (std::size_t way = 0; way < intern_cache_ways; ++way) {
      if (set->tags[way] != tag) continue;
      const auto& entry = set->ways[way];
      if (entry.parent == parent && *entry.name == name) return entry.id;
    }
  }
  ++intern_cache_misses_here;

  auto& table = path_table::get();
  std::lock_guard lock{table.mutex};
  path_id id = no_path;
  if (const auto found = table.ids.find(path_table::key{parent, name}); found != table.ids.end()) {
    id = found->second;
  } else {
    auto& node = table.nodes.emplace_back(path_table::interned{parent, std::string{name}});
    id = static_cast<path_id>(table.nodes.size());
    try {
      table.ids.emplace(path_table::key{parent, node.name}, id);
    } catch (...) {
      table.nodes.pop_back();
      throw;
    }
  }
  if (set != nullptr) {
    // The newest in the first way, the oldest dropped.
    std::copy_backward(set->tags.begin(), set->tags.end() - 1, set->tags.end());
    std::copy_backward(set->ways.begin(), set->ways.end() - 1, set->ways.end());
    set->tags.front() = tag;
    set->ways.front() = intern_cache_entry{parent, id, &table.nodes[id - 1].name};
  }
  return id;
}

std::size_t intern_cache_misses() noexcept {
  return intern_cache_misses_here;
}

path_node read_path(path_id id) {
  auto& table = path_table::get();
  std::lock_guard lock{table.mutex};
  const auto& node = table.nodes.at(id - 1);
  return path_node{node.parent, node.name};
}

std::atomic<launch_scope_hook> installed_launch_scope_hook{nullptr};

void set_launch_scope_hook(launch_scope_hook hook) noexcept {
  installed_launch_scope_hook.store(hook, std::memory_order_relaxed);
}

path_id current_path() noexcept {
  const auto& frames = open_scopes.frames;
  return frames.empty() ? no_path : frames.back().path;
}

path_id sole_scoped_thread_path() noexcept {
  auto& threads = scoped_threads::get();
  if (threads.count.load(std::memory_order_relaxed) != 1) return no_path;
  std::lock_guard lock{threads.mutex};
  // Under the lock the owner cannot leave the list, so its published path is still there to read.
  return threads.open.size() == 1 ? threads.open.front()->load(std::memory_order_relaxed) : no_path;
}

std::size_t open_scope_depth() noexcept { return open_scopes.frames.size(); }

std::optional<open_scope> find_open_scope(scope_token token) noexcept {
  const std::uint32_t depth = token.depth & ~nvtx_range_bit;
  const auto& frames = open_scopes.frames;
  if (token.serial == 0 || depth == no_frame || depth >= frames.size() ||
      frames[depth].serial != token.serial) {
    return std::nullopt;
  }
  return open_scope{depth, frames[depth].path};
}

namespace {

/// enter_scope and enter_scope_under: `name` under `*parent`, or under the thread's innermost
/// open scope when `parent` is null.
scope_token enter(std::string_view name, const path_id* parent) noexcept {
  const std::uint32_t nvtx = scopes_go_to_nvtx() && push_nvtx_range(name) ? nvtx_range_bit : 0;
  const scope_token only_nvtx = nvtx != 0 ? scope_token{nvtx | no_frame, 1} : scope_token{};
  // An NVTX tool alone keeps the flag set: scopes then go to it, and only an attribution's
  // lifetime puts them on a path.
  if (!recording_scopes.load(std::memory_order_relaxed)) return only_nvtx;
  try {
    auto& stack = open_scopes;
    const path_id innermost = stack.frames.empty() ? no_path : stack.frames.back().path;
    const path_id path = intern_path(parent != nullptr ? *parent : innermost, name);
    frame entered = scope_start(scope_log());
    const std::uint32_t serial = stack.next_serial;
    const bool list = stack.frames.empty() && sole_scoped_wanted.load(std::memory_order_relaxed) > 0;
    if (list) scoped_threads::get().add(&stack.innermost);
    try {
      entered.path = path;
      entered.serial = serial;
      stack.frames.push_back(entered);
    } catch (...) {
      if (list) scoped_threads::get().remove(&stack.innermost);
      throw;
    }
    stack.listed = stack.listed || list;
    stack.next_serial = serial == UINT32_MAX ? 1 : serial + 1;  // 0 means "not entered"
    stack.innermost.store(path, std::memory_order_relaxed);
    return scope_token{static_cast<std::uint32_t>(stack.frames.size() - 1) | nvtx, serial};
  } catch (...) {
    return only_nvtx;
  }
}

}  // namespace

scope_token enter_scope(std::string_view name) noexcept { return enter(name, nullptr); }

scope_token enter_scope_under(path_id parent, std::string_view name) noexcept {
  return enter(name, &parent);
}

void leave_scope(scope_token token) noexcept {
  if ((token.depth & nvtx_range_bit) != 0) pop_nvtx_range();
  token.depth &= ~nvtx_range_bit;
  if (token.depth == no_frame) return;
  auto& frames = open_scopes.frames;
  // A frame already popped (an enclosing scope left first) or reused by a later scope is not ours.
  if (token.depth >= frames.size() || frames[token.depth].serial != token.serial) return;
  thread_log* log = scope_log();
  // The end is read once, and only if a scope ending here may keep its interval (frame::unkept).
  std::optional<instant> end;
  // Scopes entered inside this one and still open end with it, so intervals always nest.
  while (frames.size() > token.depth) {
    const frame ended = frames.back();
    frames.pop_back();
    if (log == nullptr) continue;
    const bool aggregate_only = log->pools->aggregate_only;
    // Counted with no lock: were the log closed meanwhile, nothing reads the count any more.
    if (ended.unkept && aggregate_only && log->pools->prefix.full()) {
      log->left_out_intervals.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    try {
      std::lock_guard lock{log->mutex};
      // Its attribution ended since scope_log() found it: nothing reads this log any more. An
      // aggregate-only attribution keeps intervals only in its trace prefix, while that has room
      // (its memory does not grow with the pass).
      if (log->closed) continue;
      if (!end) end = log->clock();
      const instant start = ended.unkept ? log->pools->origin() : ended.start;
      if (aggregate_only && !log->pools->prefix.keeps_interval(start, *end)) {
        log->left_out_intervals.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      log->intervals.emplace(log->pools->intervals, interval_entry{ended.path, start, *end});
    } catch (...) {
      // Out of memory: the interval is lost, the caller's work is not.
    }
  }
  auto& stack = open_scopes;
  stack.innermost.store(frames.empty() ? no_path : frames.back().path, std::memory_order_relaxed);
  if (frames.empty() && stack.listed) {
    scoped_threads::get().remove(&stack.innermost);
    stack.listed = false;
  }
}

}  // namespace launchwatch::detail
