// The thread an aggregate-only attribution folds on (fold_thread.hpp).

#include "fold_thread.hpp"

#include <sched.h>

#include <atomic>
#include <exception>
#include <utility>

#include "core/interface/diagnostics.hpp"
#include "core/interface/fork_generation.hpp"
#include "core/interface/thread_name.hpp"

namespace launchwatch::detail {
namespace {

/// decide_for_testing's decision: -1 none, 0 no thread, 1 a thread.
std::atomic<int> decided_for_testing{-1};

/// The cores this process may run on (its affinity mask), or the machine's where that is unknown.
unsigned cores_allowed() noexcept {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    return static_cast<unsigned>(CPU_COUNT(&allowed));
  }
  return std::thread::hardware_concurrency();
}

bool thread_wanted() noexcept {
  if (const int decided = decided_for_testing.load(std::memory_order_relaxed); decided >= 0) {
    return decided == 1;
  }
  // Read once: the mask rarely changes, and a fold thread made before it changed still works.
  static const bool enough = cores_allowed() >= fold_thread::cores_wanted;
  return enough;
}

}  // namespace

fold_thread::fold_thread(std::function<void(thread_log&)> fold)
    : fold_{std::move(fold)},
      used_{thread_wanted()},
      generation_{fork_generation()},
      state_{std::make_unique<state>()} {}

void fold_thread::decide_for_testing(std::optional<bool> use) noexcept {
  decided_for_testing.store(use ? (*use ? 1 : 0) : -1, std::memory_order_relaxed);
}

fold_thread::~fold_thread() {
  stop();
}

bool fold_thread::queue(thread_log& log) noexcept {
  if (!used_) return false;
  if (generation_ != fork_generation()) return false;  // a forked child: the thread is not here
  std::unique_lock lock{state_->mutex};
  if (state_->stopping) return false;
  try {
    if (!state_->thread.joinable()) {
      // Room for a few logs now, so that queueing does not allocate in the steady state.
      state_->queued.reserve(16);
      state_->thread = std::thread{[this] {
        name_this_thread("lw-fold");
        run();
      }};
    }
    state_->queued.push_back(&log);
  } catch (...) {
    return false;  // no thread, or no memory: the caller folds, as without a thread
  }
  const bool was_idle = state_->queued.size() == 1;
  lock.unlock();
  if (was_idle) state_->work.notify_one();
  return true;
}

void fold_thread::stop() noexcept {
  if (state_ == nullptr) return;
  if (generation_ != fork_generation()) {
    // A forked child: the parent's thread is not here, and its lock and condition may be held or
    // waited on by it. Never touched again, never destroyed.
    (void)state_.release();
    return;
  }
  std::thread ending;
  {
    std::lock_guard lock{state_->mutex};
    state_->stopping = true;
    ending = std::move(state_->thread);
  }
  state_->work.notify_one();
  if (ending.joinable()) ending.join();
}

void fold_thread::run() noexcept {
  std::vector<thread_log*> folding;
  folding.reserve(16);
  std::unique_lock lock{state_->mutex};
  for (;;) {
    state_->work.wait(lock, [&] { return state_->stopping || !state_->queued.empty(); });
    if (state_->queued.empty()) return;  // stopping, and everything queued was folded
    folding.swap(state_->queued);
    lock.unlock();
    for (thread_log* log : folding) {
      try {
        fold_(*log);
      } catch (const std::exception& error) {
        // Out of memory while totalling: said, as the launch path says an observer's failure when
        // a launching thread folds; the thread goes on with the next log.
        diagnostics().warn(
            "launchwatch could not fold a thread's launches into the pass's totals ({}); the "
            "launches of that fold are missing from this pass's summary.",
            error.what());
      } catch (...) {
        diagnostics().warn(
            "launchwatch could not fold a thread's launches into the pass's totals; the launches "
            "of that fold are missing from this pass's summary.");
      }
    }
    folding.clear();
    lock.lock();
  }
}

}  // namespace launchwatch::detail
