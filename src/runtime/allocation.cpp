#include "runtime/allocation.hpp"

#include <algorithm>
#include <atomic>
#include <shared_mutex>
#include <unordered_map>

namespace launchwatch::detail {
namespace {

struct registry {
  std::shared_mutex mutex;
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

// Uses kept per allocation before the finished ones are pruned: a long-lived buffer read by many
// short-lived threads would otherwise keep every one of their streams alive.
constexpr std::size_t uses_before_pruning = 8;

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
  after.reserve(uses_.size());
  for (const auto& u : uses_) after.push_back(stream_point{u.on.get(), u.point});
  owner->deallocate(memory, bytes, after);
}

void allocation::add_use(const std::shared_ptr<stream>& on, std::uint64_t point) {
  std::lock_guard lock{mutex_};
  for (auto& u : uses_) {
    if (u.on == on) {
      u.point = std::max(u.point, point);
      return;
    }
  }
  if (uses_.size() >= uses_before_pruning) {
    std::erase_if(uses_, [](const use& u) { return u.on->passed(u.point); });
  }
  uses_.push_back(use{on, point});
}

std::vector<allocation::use> allocation::uses() const {
  std::lock_guard lock{mutex_};
  return uses_;
}

std::shared_ptr<allocation> allocation::find(std::uint64_t id) {
  auto& r = registry::get();
  std::shared_lock lock{r.mutex};
  const auto it = r.entries.find(id);
  // An allocation whose last owner is being destroyed is still listed until its destructor takes
  // the lock: weak_from_this() then gives null, the same answer as after it is gone.
  return it == r.entries.end() ? nullptr : it->second->weak_from_this().lock();
}

}  // namespace launchwatch::detail
