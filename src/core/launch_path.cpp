// The launch path every launch source calls (issue), and the specification's finer hooks.

#include <launchwatch/launch_path.hpp>

#include <launchwatch/logger.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "core/interface/diagnostics.hpp"
#include "core/observation_slot.hpp"

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
  reader_lock lock{stack.mutex};
  return stack.installed;
}

/// Tells `observer` the duration if it is still the installed one: a measurement belongs to the
/// observer its launch was reported to, and one whose observation ended during the read is done
/// receiving, while the observer that replaced it never saw the launch. Identity, not equality.
void deliver_timed(const launch_observer* observer, std::string_view kernel,
                   std::chrono::nanoseconds length, timing_method method) {
  auto& stack = observation_stack::get();
  reader_lock lock{stack.mutex};
  if (stack.installed.get() == observer) {
    call_observer("timed", kernel, [&] { stack.installed->timed(kernel, length, method); });
  }
}

profile_duration no_measurement() {
  return profile_duration{[]() noexcept -> std::optional<profile_ticks> { return std::nullopt; },
                          timing_method::system};
}

/// Why a collective's measurement is not read at once (docs/design.md §10).
constexpr std::string_view collective_refusal =
    "it is a collective (it completes only once its peers launch, so reading it at once could wait "
    "forever); ask for deferred timing to measure collectives";

/// Says, once per process at warning level and at debug level after, that a collective's
/// measurement was refused rather than read at once.
void warn_collective_refused(std::string_view kernel) {
  const auto level = first_time(once_warning::collective_read_refused) ? spdlog::level::warn
                                                                      : spdlog::level::debug;
  diagnostics().log(level,
                    "Skipped timing a launch of `{}` for its observer: {}. The kernel is still "
                    "launched and reported; only its measurement is missing.",
                    kernel, collective_refusal);
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
  reader_lock lock{stack.mutex};
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
  reader_lock lock{stack.mutex};
  if (stack.installed && stack.installed_serial == reported.observation) {
    call_observer("timed", kernel,
                  [&] { stack.installed->timed(kernel, ticks->length(), method); });
  }
  return ticks;
}

/// Hands a deferred measurement, unread, to the observation its launch was reported to, if that
/// one is still installed; otherwise it is lost (behaviour 9), which is said once. For launches
/// reported and measured under separate locks (begin_issue, finish_issue).
void deliver_unread(const reported_launch& reported, std::string_view kernel,
                    profile_duration profile) {
  {
    auto& stack = observation_stack::get();
    reader_lock lock{stack.mutex};
    if (stack.installed && stack.installed_serial == reported.observation) {
      call_observer("profiled", kernel,
                    [&] { stack.installed->profiled(kernel, std::move(profile)); });
      return;
    }
  }
  if (first_time(once_warning::timing_dropped_by_observer_asking_none)) {
    diagnostics().warn(
        "Dropped a timing of `{}`: the observation its launch was reported to had ended (or been "
        "replaced) by the time the measurement arrived, and no other observer saw that launch.",
        kernel);
  }
}

/// How a launch's measurement is taken: whether at all, when it is read, or why the launch path
/// refuses it. The one place these rules live, for issue() and begin_issue() alike.
struct measurement_plan {
  bool measure = false;
  launch_path::read_when when = launch_path::read_when::later;
  /// Why a measurement that would be taken is refused (static storage: only collective_refusal so
  /// far); empty otherwise.
  std::string_view refusal;
};

/// Read at once under `resolved`, and when the logger and a timing observer both want it (one
/// reading for both, behaviour 7); handed over unread when only one of them wants it, deferred; not
/// taken when neither does. A collective is never read at once: it completes only when its peers
/// launch, and this thread may be the one to issue them next, so waiting here would never end.
measurement_plan plan_measurement(const launch_info& info, timing_request request, bool logger_reads) {
  if (!logger_reads && request == timing_request::none) return {};
  const bool read_now = request == timing_request::resolved ||
                        (logger_reads && request != timing_request::none);
  if (read_now && info.collective) return {false, launch_path::read_when::later, collective_refusal};
  return {true, read_now ? launch_path::read_when::at_once : launch_path::read_when::later, {}};
}

/// Says why the source refused a measurement; the logger still lists the launch, as untimed (the
/// log lists every launch, and a zero would lie).
void refused(const launch_info& info, std::string_view refusal, profiling_logger* reading_logger) {
  launch_path::warn_profile_refused(info.kernel, refusal);
  if (reading_logger != nullptr) reading_logger->record(info, no_measurement());
}

/// The same for a measurement the launch path refused itself (plan_measurement: a collective that
/// would be read at once), said once per process.
void refused_collective(const launch_info& info, profiling_logger* reading_logger) {
  warn_collective_refused(info.kernel);
  if (reading_logger != nullptr) reading_logger->record(info, no_measurement());
}

/// Routes a submitted measurement the logger does not read: unread to a deferred observer, read and
/// told to a resolved one.
void route_unlogged(const launch_info& info, const reported_launch& reported,
                    launch_path::measured_submission submitted) {
  if (!submitted.profile) {
    refused(info, submitted.refusal, nullptr);
    return;
  }
  if (reported.request == timing_request::deferred) {
    deliver_unread(reported, info.kernel, std::move(*submitted.profile));
  } else {
    (void)read_for(reported, info.kernel, std::move(*submitted.profile));
  }
}

/// Routes a submitted measurement the logger reads: to the logger unread when only it wants it (its
/// writer reads it off the launch path, so kernels keep running back to back); otherwise read once,
/// told to the observer, and the same reading handed to the logger (behaviour 7).
void route_logged(const launch_info& info, const reported_launch& reported,
                  launch_path::measured_submission submitted, profiling_logger& logger) {
  if (!submitted.profile) {
    refused(info, submitted.refusal, &logger);
    return;
  }
  profile_duration& profile = *submitted.profile;
  if (reported.request == timing_request::none) {
    logger.record(info, std::move(profile));
    return;
  }
  if (reported.request == timing_request::deferred) warn_logger_takes_deferred_once();
  const auto method = profile.method();
  const auto ticks = read_for(reported, info.kernel, std::move(profile));
  logger.record(info, profile_duration{[ticks]() noexcept { return ticks; }, method});
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
    reader_lock lock{stack.mutex};
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
        refused(info, submitted.refusal, nullptr);
        return;
      }
    }
  }
  // Untimed, or `resolved`: read with the slot unlocked (holding it for the length of the kernel
  // would stall every install), told to the observation it was reported to if still installed.
  const measurement_plan plan = plan_measurement(info, reported.request, false);
  if (!plan.measure) {
    source.submit();
    if (!plan.refusal.empty()) refused_collective(info, nullptr);
    return;
  }
  route_unlogged(info, reported, source.submit_profiled(plan.when));
}

/// Issues a launch the logger reads (past execution_only): read once, at once when an observer
/// wants it too, else handed to the logger unread so a names-only observer never makes launches wait.
void issue_logged(const launch_info& info, launch_path::submitter& source,
                  profiling_logger& logger) {
  const reported_launch reported =
      launch_path::is_observing() ? report(info) : reported_launch{};
  const measurement_plan plan = plan_measurement(info, reported.request, true);
  if (!plan.measure) {
    source.submit();
    refused_collective(info, &logger);
    return;
  }
  route_logged(info, reported, source.submit_profiled(plan.when), logger);
}

}  // namespace

void notify_launch_observed(std::string_view kernel) {
  check_not_in_callback("launch a kernel");
  auto& stack = observation_stack::get();
  reader_lock lock{stack.mutex};
  if (stack.installed) {
    call_observer("launched", kernel, [&] { stack.installed->launched(kernel); });
  }
}

void notify_launch_info_observed(const launch_info& info) {
  check_not_in_callback("launch a kernel");
  auto& stack = observation_stack::get();
  reader_lock lock{stack.mutex};
  if (stack.installed) {
    call_observer("launched", info.kernel, [&] { stack.installed->launched_with(info); });
  }
}

bool timing_wanted_observed() {
  check_not_in_callback("ask whether launches are timed");
  auto& stack = observation_stack::get();
  reader_lock lock{stack.mutex};
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

issue_decision begin_issue(const launch_info& info) {
  detail::check_not_in_callback("launch a kernel");
  const profile_level level = profiling_logger::instance().level();
  issue_decision decision;
  decision.logger_reads_ = level > profile_level::execution_only;
  decision.logger_lists_ = level == profile_level::execution_only;
  if (is_observing()) {
    const detail::reported_launch reported = detail::report(info);
    decision.request_ = reported.request;
    decision.observation_ = reported.observation;
  }
  const detail::measurement_plan plan =
      detail::plan_measurement(info, decision.request_, decision.logger_reads_);
  decision.measure_ = plan.measure;
  decision.when_ = plan.when;
  decision.refusal_ = plan.refusal;
  return decision;
}

void finish_issue(const launch_info& info, const issue_decision& decision) {
  auto& logger = profiling_logger::instance();
  // The log lists every launch, whatever the observer asked for.
  if (decision.logger_lists_) logger.record_execution(info);
  if (decision.refusal_.empty()) return;
  detail::refused_collective(info, decision.logger_reads_ ? &logger : nullptr);
}

void finish_issue(const launch_info& info, const issue_decision& decision,
                  measured_submission submitted) {
  auto& logger = profiling_logger::instance();
  const detail::reported_launch reported{decision.request_, decision.observation_};
  if (decision.logger_lists_) logger.record_execution(info);
  if (decision.logger_reads_) {
    detail::route_logged(info, reported, std::move(submitted), logger);
  } else {
    detail::route_unlogged(info, reported, std::move(submitted));
  }
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
    detail::reader_lock lock{stack.mutex};
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
