// The launch path every launch source calls (issue), and the specification's finer hooks.

#include <launchwatch/launch_path.hpp>

#include <launchwatch/logger.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>  // std::shared_lock
#include <utility>

#include "diagnostics.hpp"
#include "observation_slot.hpp"

namespace launchwatch {
namespace detail {
namespace {

void warn_no_measurement(std::string_view kernel) {
  diagnostics().warn(
      "Skipped timing a launch of `{}` for its observer: the profiled window carried no "
      "measurement, and a zero would report a launch that was never timed.",
      kernel);
}

void warn_logger_takes_deferred_once() {
  if (first_time(once_warning::logger_takes_deferred_measurements)) {
    diagnostics().warn(
        "The profiling logger is reading every launch's measurement, so this run's launch observer "
        "is told durations through `timed` instead of keeping them unread, and its kernels run one "
        "at a time. Set LAUNCHWATCH_PROFILE=disabled (or minimal) to measure the pass as it runs.");
  }
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

profile_duration no_measurement() {
  return profile_duration{[]() noexcept -> std::optional<profile_ticks> { return std::nullopt; },
                          timing_method::system};
}

/// What issue() learnt when it reported a launch: what its observer asked for, and which
/// observation that was.
struct reported_launch {
  timing_request request = timing_request::none;
  /// The serial of the observation the launch was reported to; 0 when none was installed. Enough
  /// to deliver to it later without keeping its observer alive meanwhile: serials are never reused,
  /// and the slot holds the observer while its observation is installed.
  std::uint64_t observation = 0;
};

/// Reports `info` and asks timing() once, under one shared lock.
reported_launch report(const launch_info& info) {
  reported_launch reported;
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  if (!stack.installed) return reported;
  launch_observer& observer = *stack.installed;
  call_observer("launched", info.kernel, [&] { observer.launched_with(info); });
  reported.request = ask_timing(observer);
  reported.observation = stack.installed_serial;
  return reported;
}

/// Reads `profile` once (no lock held: this waits for the kernel) and tells the observation its
/// launch was reported to, if it is still installed. Returns the ticks read, empty when none.
std::optional<profile_ticks> read_for(const reported_launch& reported, std::string_view kernel,
                                      profile_duration profile) {
  const auto method = profile.method();
  const auto ticks = std::move(profile).resolve();
  if (!ticks) {
    warn_no_measurement(kernel);
    return ticks;
  }
  auto& stack = observation_stack::get();
  std::shared_lock lock{stack.mutex};
  if (stack.installed && stack.installed_serial == reported.observation) {
    call_observer("timed", kernel,
                  [&] { stack.installed->timed(kernel, ticks->length(), method); });
  }
  return ticks;
}

/// Issues a launch the logger does not read (off, or at execution_only). The common watched case, a
/// names-only or deferred observer, is reported, submitted and handed its measurement under one
/// shared lock of the slot, so the observation told the measurement is the one the launch was
/// reported to with no second look at the slot: an install or drop on another thread waits for the
/// submission. Nothing under the lock waits for a kernel: a `resolved` read happens after it.
void issue_unlogged(const launch_info& info, launch_path::submitter& source) {
  reported_launch reported;
  {
    auto& stack = observation_stack::get();
    std::shared_lock lock{stack.mutex};
    if (stack.installed) {
      launch_observer& observer = *stack.installed;
      call_observer("launched", info.kernel, [&] { observer.launched_with(info); });
      reported = {ask_timing(observer), stack.installed_serial};
      if (reported.request == timing_request::deferred) {
        launch_path::measured_submission submitted =
            source.submit_profiled(launch_path::read_when::later);
        if (submitted.profile) {
          call_observer("profiled", info.kernel,
                        [&] { observer.profiled(info.kernel, std::move(*submitted.profile)); });
          return;
        }
        lock.unlock();
        launch_path::warn_profile_refused(info.kernel, submitted.refusal);
        return;
      }
    }
  }
  if (reported.request == timing_request::none) {
    source.submit();
    return;
  }
  // `resolved`: read with the slot unlocked (holding it for the length of the kernel would stall
  // every install), told to the observation it was reported to if that is still installed.
  launch_path::measured_submission submitted =
      source.submit_profiled(launch_path::read_when::at_once);
  if (!submitted.profile) {
    launch_path::warn_profile_refused(info.kernel, submitted.refusal);
    return;
  }
  (void)read_for(reported, info.kernel, std::move(*submitted.profile));
}

/// Issues a launch the logger reads (past execution_only): read once, at once when an observer
/// wants it too (told to it, then the same reading to the logger, behaviour 7), else handed to the
/// logger unread so a names-only observer never makes launches wait.
void issue_logged(const launch_info& info, launch_path::submitter& source,
                  profiling_logger& logger) {
  const reported_launch reported =
      launch_path::is_observing() ? report(info) : reported_launch{};
  const bool observer_wants = reported.request != timing_request::none;
  launch_path::measured_submission submitted = source.submit_profiled(
      observer_wants ? launch_path::read_when::at_once : launch_path::read_when::later);
  if (!submitted.profile) {
    launch_path::warn_profile_refused(info.kernel, submitted.refusal);
    // Still written, as untimed: the log lists every launch, and a zero would lie.
    logger.record(info, no_measurement());
    return;
  }
  profile_duration& profile = *submitted.profile;
  if (!observer_wants) {
    // Only the logger wants this measurement: its writer reads it off the launch path, and the
    // kernels keep running back to back.
    logger.record(info, std::move(profile));
    return;
  }
  if (reported.request == timing_request::deferred) warn_logger_takes_deferred_once();
  const auto method = profile.method();
  const auto ticks = read_for(reported, info.kernel, std::move(profile));
  logger.record(info, profile_duration{[ticks]() noexcept { return ticks; }, method});
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

namespace launch_path {

void issue(const launch_info& info, submitter& source) {
  detail::check_not_in_callback("launch a kernel");
  auto& logger = profiling_logger::instance();
  const profile_level level = logger.level();
  if (level > profile_level::execution_only) {
    detail::issue_logged(info, source, logger);
    return;
  }
  detail::issue_unlogged(info, source);
  // The log lists every launch, whatever the observer asked for.
  if (level == profile_level::execution_only) logger.record_execution(info);
}

void warn_logger_takes_deferred_measurements() {
  if (!is_observing()) return;
  auto observer = detail::installed_observer();
  if (!observer || detail::ask_timing(*observer) != timing_request::deferred) return;
  detail::warn_logger_takes_deferred_once();
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
}  // namespace launchwatch
