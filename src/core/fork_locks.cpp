// The one pthread_atfork registration (fork_locks.hpp), and the fork generation it counts.

#include "core/interface/fork_locks.hpp"

#include <pthread.h>

#include <array>
#include <atomic>
#include <mutex>

#include "core/interface/fork_generation.hpp"

namespace launchwatch::detail {
namespace {

// Constant-initialised, so enrolling during any other file's static initialisation finds them.
std::array<std::atomic<const fork_locks::handlers*>, fork_locks::rank_count> enrolled{};
std::atomic<std::uint64_t> generation{0};

/// Serialises forks from several threads, and guards `taken`: a second fork waits here until the
/// first has released everything.
std::mutex forking;

/// The handlers the current fork's prepare step ran, so the parent and the child release exactly
/// what was taken, even if a rank was enrolled meanwhile.
std::array<const fork_locks::handlers*, fork_locks::rank_count> taken{};

void prepare() noexcept {
  forking.lock();
  for (std::size_t i = 0; i < fork_locks::rank_count; ++i) {
    taken[i] = enrolled[i].load(std::memory_order_acquire);
    if (taken[i] != nullptr) taken[i]->prepare();
  }
}

void in_parent() noexcept {
  for (std::size_t i = fork_locks::rank_count; i-- > 0;) {
    if (taken[i] != nullptr) taken[i]->parent();
  }
  forking.unlock();
}

void in_child() noexcept {
  // First: the child handlers below, and everything after, may ask which process this is.
  generation.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = fork_locks::rank_count; i-- > 0;) {
    if (taken[i] != nullptr) taken[i]->child();
  }
  forking.unlock();
}

// Registered while the library is loaded (this file is linked whenever a lock is enrolled or the
// generation is read), before main and so before any fork the program makes.
[[maybe_unused]] const int registered = ::pthread_atfork(&prepare, &in_parent, &in_child);

}  // namespace

bool fork_locks::enroll(rank which, const handlers& handlers_of_rank) noexcept {
  enrolled[static_cast<std::size_t>(which)].store(&handlers_of_rank, std::memory_order_release);
  return true;
}

std::uint64_t fork_generation() noexcept { return generation.load(std::memory_order_relaxed); }

}  // namespace launchwatch::detail
