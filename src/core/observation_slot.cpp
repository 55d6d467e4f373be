// The process-wide observer slot (observation_slot.hpp): the stack of live observations, its fork
// enrolment, and what the launch path does when an observer misbehaves. The guards that push and
// remove observations are observe.cpp's.

#include "core/observation_slot.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/interface/fork_locks.hpp"
#include "core/launch_watch_writer.hpp"

namespace launchwatch::detail {

observation_stack& observation_stack::get() {
  // Never destroyed: threads may still launch while static destructors run.
  static auto* const stack = new observation_stack;
  return *stack;
}

namespace {

// The distributed lock counts readers per thread: a thread caught reporting a launch at the fork
// would leave its count behind in the child, where no thread will ever drop it, and the child's
// first install would wait forever. Holding the lock exclusively across the fork means no reader
// is inside. It is the outermost of the fork's locks (fork_locks.hpp): a launch holds it while its
// observer takes the attribution's locks. (A fork from inside an observer method would wait for
// itself: observer methods must not fork, as they must not launch.)
[[maybe_unused]] const bool slot_enrolled = fork_locks::enroll(
    fork_locks::rank::observation_slot,
    fork_locks::one_lock<[]() -> auto& { return observation_stack::get().mutex; }>);

}  // namespace

void observation_stack::push(launch_observation& observation) {
  static std::atomic<std::uint64_t> next_serial{1};
  observation.serial_ = next_serial.fetch_add(1, std::memory_order_relaxed);
  watch_change_notice notice;  // after the lock is released
  std::unique_lock lock{mutex};
  observation.below_ = top;
  if (top != nullptr) top->above_ = &observation;
  top = &observation;
  installed = observation.observer_;
  installed_serial = observation.serial_;
  // Last, and under the lock, so the bit is never set over an empty slot nor left set by a drop
  // racing with an install on another thread.
  notice.changed = launch_watch_writer::set(launch_watch::observing, true);
}

void observation_stack::remove(launch_observation& observation) {
  watch_change_notice notice;  // after the lock is released
  std::unique_lock lock{mutex};
  if (observation.above_ != nullptr) {
    observation.above_->below_ = observation.below_;
  } else {
    top = observation.below_;
  }
  if (observation.below_ != nullptr) observation.below_->above_ = observation.above_;
  installed = top != nullptr ? top->observer_ : nullptr;
  installed_serial = top != nullptr ? top->serial_ : 0;
  // Cleared only once the slot is empty: a launch that reads the bit in between finds the slot
  // empty and does nothing, rather than an ended observer.
  notice.changed = launch_watch_writer::set(launch_watch::observing, installed != nullptr);
}

void fail_reentry(const char* what) {
  diagnostics().critical(
      "A launch observer tried to {} from inside one of its own methods. Observer methods run under "
      "the lock that guards the installed observer, so this would deadlock: record what you need in "
      "the callback and act on it after the launch returns.",
      what);
  diagnostics().flush();
  std::fprintf(stderr, "launchwatch: a launch observer tried to %s from inside a callback\n", what);
  std::abort();
}

void report_observer_threw(const char* method, std::string_view kernel, const char* what) {
  if (first_time(once_warning::observer_threw)) {
    diagnostics().error(
        "A launch observer's `{}` threw while `{}` was being launched ({}). The exception was "
        "contained and launches go on; later exceptions from observers are not reported again.",
        method, kernel, what);
  }
}

}  // namespace launchwatch::detail
