#include "runtime/allocation.hpp"

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "core/interface/fork_locks.hpp"
#include "core/interface/reader_lock.hpp"

namespace launchwatch::detail {
namespace {

struct registry {
  // Read on every launch, for every span, from every launching thread; written only when a buffer
  // is created or destroyed. std::shared_mutex would make every reader write one shared count.
  distributed_shared_mutex mutex;
  std::unordered_map<std::uint64_t, allocation*> entries;

  static registry& get() {
    // Never destroyed: buffers may be released by threads still running while statics are torn down.
    static auto* const instance = new registry;
    return *instance;
  }
};

std::uint64_t next_allocation_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// Streams kept per allocation before the finished ones are pruned: a long-lived buffer read by many
// short-lived threads would otherwise keep every one of their streams alive.
constexpr std::size_t streams_before_pruning = 8;

}  // namespace

allocation::allocation(std::shared_ptr<device> owner_device, void* memory_, std::size_t bytes_)
    : owner{std::move(owner_device)}, memory{memory_}, bytes{bytes_}, id{next_allocation_id()} {
  auto& r = registry::get();
  std::unique_lock lock{r.mutex};
  r.entries.emplace(id, this);
}

allocation::~allocation() {
  {
    auto& r = registry::get();
    std::unique_lock lock{r.mutex};
    r.entries.erase(id);
  }
  std::vector<stream_point> after;
  after.reserve(streams_.size());
  for (const auto& s : streams_) {
    std::lock_guard lock{s->uses.mutex};
    const auto it = s->uses.last_point.find(id);
    if (it == s->uses.last_point.end()) continue;
    after.push_back(stream_point{s.get(), it->second});
    s->uses.last_point.erase(it);
  }
  owner->deallocate(memory, bytes, after);
}

void allocation::add_use(const std::shared_ptr<stream>& on, std::uint64_t point) {
  {
    std::lock_guard lock{on->uses.mutex};
    const auto it = on->uses.last_point.find(id);
    if (it != on->uses.last_point.end()) {
      it->second = std::max(it->second, point);
      return;
    }
  }
  // The first use by this stream (or the first since its last one was pruned): listed here first,
  // then given its point, so that whoever finds the point also finds the stream listed.
  std::lock_guard lock{mutex_};
  if (streams_.size() >= streams_before_pruning) {
    std::erase_if(streams_, [&](const std::shared_ptr<stream>& s) {
      std::lock_guard stream_lock{s->uses.mutex};
      const auto it = s->uses.last_point.find(id);
      // Checked under the stream's lock, so a point raised just now by a launch keeps its stream.
      if (it != s->uses.last_point.end() && !s->passed(it->second)) return false;
      if (it != s->uses.last_point.end()) s->uses.last_point.erase(it);
      return true;
    });
  }
  if (std::find(streams_.begin(), streams_.end(), on) == streams_.end()) streams_.push_back(on);
  std::lock_guard stream_lock{on->uses.mutex};
  auto& last = on->uses.last_point[id];
  last = std::max(last, point);
}

std::vector<allocation::use> allocation::uses() const {
  std::lock_guard lock{mutex_};
  std::vector<use> found;
  found.reserve(streams_.size());
  for (const auto& s : streams_) {
    std::lock_guard stream_lock{s->uses.mutex};
    const auto it = s->uses.last_point.find(id);
    if (it != s->uses.last_point.end()) found.push_back(use{s, it->second});
  }
  return found;
}

allocation* allocation::find(std::uint64_t id) {
  auto& r = registry::get();
  reader_lock lock{r.mutex};
  const auto it = r.entries.find(id);
  return it == r.entries.end() ? nullptr : it->second;
}

namespace {

// A thread caught looking a span up at the fork would leave its reader count in the child, where
// the first buffer created would wait for it forever (fork_locks.hpp: allocation_registry).
[[maybe_unused]] const bool registry_enrolled =
    fork_locks::enroll(fork_locks::rank::allocation_registry,
                       fork_locks::one_lock<[]() -> auto& { return registry::get().mutex; }>);

}  // namespace

}  // namespace launchwatch::detail
