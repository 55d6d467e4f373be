// The hooks a launch path calls: for code that issues kernels (a backend, a runtime built on
// launchwatch), not for observers.
//
// The order a launch path follows: decide the launch mode, call notify_launch(name); if the
// profiling logger is past execution_only, bracket the launch, call
// warn_logger_takes_deferred_measurements(), and hand the measurement to read_and_notify_timed(),
// passing its result to the logger; else if timing_wanted(), bracket the launch and hand the
// measurement to notify_profiled(); else just submit.
#pragma once

#include <atomic>
#include <string_view>

#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch {
namespace detail {

/// Set only after the observer slot is filled, cleared only after it is emptied, so the idle path
/// can skip the slot on one relaxed load. Inline so that load is visible at every call site.
inline std::atomic<bool> observing{false};

void notify_launch_observed(std::string_view kernel);
void notify_launch_info_observed(const launch_info& info);
bool timing_wanted_observed();

}  // namespace detail

namespace launch_path {

/// Whether an observer is installed right now.
///
/// Cost: one relaxed atomic load. The answer can be stale by the time the caller acts on it; every
/// hook below rechecks under the slot's lock.
[[nodiscard]] inline bool is_observing() noexcept {
  return detail::observing.load(std::memory_order_relaxed);
}

/// Tells the installed observer, if any, that `kernel` is being issued. Call on the issuing thread,
/// before the launch is submitted.
///
/// `kernel` must refer to storage that outlives every launch (a literal, type_name<K>()).
/// Exceptions thrown by the observer are caught and logged once per process.
/// Cost: one relaxed load and one branch when nothing is installed; nothing is built before it.
inline void notify_launch(std::string_view kernel) {
  if (!detail::observing.load(std::memory_order_relaxed)) [[likely]] {
    return;
  }
  detail::notify_launch_observed(kernel);
}

/// The same, with everything the launch path knows about the launch: the observer's
/// `launched_with` is called. A runtime calls this one (or the name-only one), never both.
///
/// Cost: one relaxed load and one branch when nothing is installed; build `info` only after
/// is_observing() said yes, so the idle path builds nothing.
inline void notify_launch(const launch_info& info) {
  if (!detail::observing.load(std::memory_order_relaxed)) [[likely]] {
    return;
  }
  detail::notify_launch_info_observed(info);
}

/// Whether the installed observer asked for launches to be timed.
///
/// Cost: one relaxed load when nothing is installed; otherwise a shared lock and a virtual call.
[[nodiscard]] inline bool timing_wanted() {
  if (!detail::observing.load(std::memory_order_relaxed)) [[likely]] {
    return false;
  }
  return detail::timing_wanted_observed();
}

/// Says once per process, when the installed observer asked for deferred timing, that the profiling
/// logger takes its measurements: the observer is told durations instead and the kernels run one at
/// a time, a different pass from the one it asked to measure. Call when the logger is past
/// execution_only and a launch is bracketed.
void warn_logger_takes_deferred_measurements();

/// Reads `profile` once, tells the installed observer (whatever it asked for) the duration through
/// `timed`, and returns the same reading for the profiling logger.
///
/// Blocks for the length of the kernel, with the slot's lock released; the duration reaches only the
/// observer installed when the read began, and only if it is still installed when it ends. A window
/// that carried no measurement is skipped with a warning, never reported as zero. Exceptions from the
/// read propagate.
profile_duration read_and_notify_timed(std::string_view kernel, profile_duration profile);

/// Delivers a launch's measurement the way the installed observer asked: unread to `profiled` under
/// `deferred`; read (lock released, blocking for the kernel) and told to `timed` under `resolved`;
/// dropped with a once-per-process warning if the observer now answers `none`.
void notify_profiled(std::string_view kernel, profile_duration profile);

/// Says that a backend refused to profile a launch of `kernel` (a graph capture window does): the
/// kernel is still launched and reported, and its measurement is skipped, with a warning.
void warn_profile_refused(std::string_view kernel, std::string_view reason);

}  // namespace launch_path
}  // namespace launchwatch
