// The process-wide observer slot and the hooks the launch path calls.

#include <launchwatch/config.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <shared_mutex>  // std::shared_lock
#include <stdexcept>
#include <utility>

#include "diagnostics.hpp"
#include "reader_lock.hpp"

namespace launchwatch {
namespace detail {

/// The slot: the stack of live observations and, for launches, a copy of the top one's observer.
/// Reporting a launch takes the shared lock; installing or dropping takes the exclusive one.
struct observation_stack {
  distributed_shared_mutex mutex;
  launch_observation* top = nullptr;
  std::shared_ptr<launch_observer> installed;

  static observation_stack& get() {
    // Never destroyed: threads may still launch while static destructors run.
    static auto* const stack = new observation_stack;
    return *stack;
  }

  void push(launch_observation& observation) {
    std::unique_lock lock{mutex};
    observation.below_ = top;
    if (top != nullptr) top->above_ = &observation;
    top = &observation;
    installed = observation.observer_;
    // Last, and under the lock, so the flag is never set over an empty slot nor left set by a drop
    // racing with an install on another thread.
    observing.store(true, std::memory_order_relaxed);
  }

  void remove(launch_observation& observation) {
    std::unique_lock lock{mutex};
    if (observation.above_ != nullptr) {
      observation.above_->below_ = observation.below_;
    } else {
      top = observation.below_;
    }
    if (observation.below_ != nullptr) observation.below_->above_ = observation.above_;
    installed = top != nullptr ? top->observer_ : nullptr;
    // Cleared only once the slot is empty: a launch that reads the flag in between finds the slot
    // empty and does nothing, rather than an ended observer.
    observing.store(installed != nullptr, std::memory_order_relaxed);
  }
};

namespace {

/// How deep this thread is inside observer methods. An observer that launches or installs from
/// inside one would take the slot's lock again (deadlock on install, undefined on a nested read).
thread_local int callback_depth = 0;

[[noreturn]] void fail_reentry(const char* what) {
  diagnostics().critical(
      "A launch observer tried to {} from inside one of its own methods. Observer methods run under "
      "the lock that guards the installed observer, so this would deadlock: record what you need in "
      "the callback and act on it after the launch returns.",
      what);
  diagnostics().flush();
  std::fprintf(stderr, "launchwatch: a launch observer tried to %s from inside a callback\n", what);
  std::abort();
}

void check_not_in_callback([[maybe_unused]] const char* what) {
#if LAUNCHWATCH_CHECK_REENTRY
  if (callback_depth > 0) [[unlikely]] {
    fail_reentry(what);
  }
#endif
}

struct in_callback {
  in_callback() noexcept { ++callback_depth; }
  ~in_callback() { --callback_depth; }
  in_callback(const in_callback&) = delete;
  in_callback& operator=(const in_callback&) = delete;
};

void report_observer_threw(const char* method, std::string_view kernel, const char* what) {
  if (first_time(once_warning::observer_threw)) {
    diagnostics().error(
        "A launch observer's `{}` threw while `{}` was being launched ({}). The exception was "
        "contained and launches go on; later exceptions from observers are not reported again.",
        method, kernel, what);
  }
}

/// Runs an observer method with reentry tracked and exceptions contained: an observer's fault must
/// never fail the launch that it watches.
template <class Call>
void call_observer(const char* method, std::string_view kernel, Call&& call) noexcept {
  in_callback marked;
  try {
    std::forward<Call>(call)();
  } catch (const std::exception& error) {
    report_observer_threw(method, kernel, error.what());
  } catch (...) {
    report_observer_threw(method, kernel, "an exception not derived from std::exception");
  }
}

timing_request ask_timing(const launch_observer& observer) noexcept {
  auto answer = timing_request::none;
  call_observer("timing", "", [&] { answer = observer.timing(); });
  return answer;
}

void warn_no_measurement(std::string_view kernel) {
  diagnostics().warn(
      "Skipped timing a launch of `{}` for its observer: the profiled window carried no "
      "measurement, and a zero would report a launch that was never timed.",
      kernel);
}

std::shared_ptr<launch_observer> installed_observer() {
  check_not_in_callback("read a launch's measurement");
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  return stack.installed;
}

/// Tells `observer` the duration if it is still the installed one: a measurement belongs to the
/// observer its launch was reported to, and one whose observation ended during the read is done
/// receiving, while the observer that replaced it never saw the launch. Identity, not equality.
void deliver_timed(const launch_observer* observer, std::string_view kernel,
                   std::chrono::nanoseconds length, timing_method method) {
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  if (stack.installed.get() == observer) {
    call_observer("timed", kernel, [&] { stack.installed->timed(kernel, length, method); });
  }
}

}  // namespace

void notify_launch_observed(std::string_view kernel) {
  check_not_in_callback("launch a kernel");
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  if (stack.installed) {
    call_observer("launched", kernel, [&] { stack.installed->launched(kernel); });
  }
}

void notify_launch_info_observed(const launch_info& info) {
  check_not_in_callback("launch a kernel");
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  if (stack.installed) {
    call_observer("launched", info.kernel, [&] { stack.installed->launched_with(info); });
  }
}

bool timing_wanted_observed() {
  check_not_in_callback("ask whether launches are timed");
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  return stack.installed && ask_timing(*stack.installed) != timing_request::none;
}

}  // namespace detail

launch_observation::launch_observation(std::shared_ptr<launch_observer> observer)
    : observer_{std::move(observer)} {
  if (!observer_) {
    throw std::invalid_argument{
        "launch_observation needs an observer to install, and was given an empty shared_ptr"};
  }
  detail::check_not_in_callback("install a launch_observation");
  detail::observation_stack::get().push(*this);
}

launch_observation::~launch_observation() {
  detail::check_not_in_callback("drop a launch_observation");
  detail::observation_stack::get().remove(*this);
}

namespace launch_path {

void warn_logger_takes_deferred_measurements() {
  if (!is_observing()) return;
  auto observer = detail::installed_observer();
  if (!observer || detail::ask_timing(*observer) != timing_request::deferred) return;
  if (detail::first_time(detail::once_warning::logger_takes_deferred_measurements)) {
    detail::diagnostics().warn(
        "The profiling logger is reading every launch's measurement, so this run's launch observer "
        "is told durations through `timed` instead of keeping them unread, and its kernels run one "
        "at a time. Set LAUNCHWATCH_PROFILE=disabled (or minimal) to measure the pass as it runs.");
  }
}

profile_duration read_and_notify_timed(std::string_view kernel, profile_duration profile) {
  const auto method = profile.method();
  auto observer = detail::installed_observer();
  const auto ticks = std::move(profile).resolve();
  if (!ticks) {
    detail::warn_no_measurement(kernel);
  } else if (observer) {
    detail::deliver_timed(observer.get(), kernel, ticks->length(), method);
  }
  return profile_duration{[ticks]() noexcept { return ticks; }, method};
}

void notify_profiled(std::string_view kernel, profile_duration profile) {
  if (!is_observing()) return;
  detail::check_not_in_callback("hand over a launch's measurement");
  std::shared_ptr<launch_observer> reader;
  {
    auto& stack = detail::observation_stack::get();
    std::shared_lock lock{stack.mutex};
    if (!stack.installed) return;
    switch (detail::ask_timing(*stack.installed)) {
      case timing_request::deferred:
        // Kept unread: the observer reads it once the work it measures is over.
        detail::call_observer("profiled", kernel, [&] {
          stack.installed->profiled(kernel, std::move(profile));
        });
        return;
      case timing_request::none:
        // The launch was bracketed for an observer that no longer wants the measurement (it ended,
        // or its answer changed, which timing_request forbids). Said because it was paid for, and a
        // gap in a breakdown with nothing in the log cannot be explained.
        if (detail::first_time(detail::once_warning::timing_dropped_by_observer_asking_none)) {
          detail::diagnostics().warn(
              "Dropped a timing of `{}`: its observer asked for no timing by the time the "
              "measurement arrived. An observer's timing() must not change while it is installed.",
              kernel);
        }
        return;
      case timing_request::resolved:
        reader = stack.installed;
        break;
    }
  }
  // Read with the lock released: holding it for the length of the kernel would stall every other
  // launching thread behind this one.
  const auto method = profile.method();
  const auto ticks = std::move(profile).resolve();
  if (!ticks) {
    detail::warn_no_measurement(kernel);
    return;
  }
  detail::deliver_timed(reader.get(), kernel, ticks->length(), method);
}

void warn_profile_refused(std::string_view kernel, std::string_view reason) {
  const auto level = detail::first_time(detail::once_warning::profile_refused)
                         ? spdlog::level::warn
                         : spdlog::level::debug;
  detail::diagnostics().log(level,
                            "Skipped timing a launch of `{}`: {}. The kernel is still launched and "
                            "reported; only its measurement is missing.",
                            kernel, reason);
}

}  // namespace launch_path

std::optional<profile_ticks> profile_duration::resolve() && {
  if (!resolver_) {
    throw std::logic_error{
        "profile_duration::resolve: this measurement was already read (or moved from); a "
        "measurement is read once, so keep the profile_ticks the first read returned"};
  }
  return resolver_.call_once();
}

}  // namespace launchwatch
