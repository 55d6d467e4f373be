// The launch path: for code that issues kernels (a backend, the CUDA bridge, a runtime built on
// launchwatch), not for observers.
//
// Every launch source calls one function, issue(), with what only it can do (submit the launch, or
// submit it between profile markers) and the launch's description; issue() reports the launch,
// decides whether to time it, and routes the measurement to the observer and the profiling logger
// as DESIGN.md §3 says. The rule is written there once, so no source and no observer re-derives it.
// A source checks watched() first, and when nothing watches submits directly and builds nothing.
//
// The finer hooks below issue() (notify_launch, timing_wanted, notify_profiled,
// read_and_notify_timed) are the specification's: kept for runtimes written against them, which
// then follow this order: decide the launch mode, call notify_launch(name); if the profiling logger
// is past execution_only, bracket the launch, call warn_logger_takes_deferred_measurements(), and
// hand the measurement to read_and_notify_timed(), passing its result to the logger; else if
// timing_wanted(), bracket the launch and hand the measurement to notify_profiled(); else just
// submit.
#pragma once

#include <optional>
#include <string_view>

#include <launchwatch/detail/launch_watch.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch {
namespace detail {

void notify_launch_observed(std::string_view kernel);
void notify_launch_info_observed(const launch_info& info);
bool timing_wanted_observed();

}  // namespace detail

namespace launch_path {

/// Whether anything watches launches right now: an installed observer, or the profiling logger
/// past `disabled`. When not, a launch source submits its launch directly and calls nothing else.
///
/// Cost: one relaxed load and one branch at the call site. The answer can be stale by the time the
/// caller acts on it; issue() rechecks what it needs under the locks it takes.
[[nodiscard]] inline bool watched() noexcept { return detail::launch_watch::bits() != 0; }

/// Whether an observer is installed right now.
///
/// Cost: one relaxed atomic load. The answer can be stale by the time the caller acts on it; every
/// hook below rechecks under the slot's lock.
[[nodiscard]] inline bool is_observing() noexcept {
  return (detail::launch_watch::bits() & detail::launch_watch::observing) != 0;
}

/// When the launch path will read a launch's measurement: `later` (kept unread, as `deferred`
/// observers keep it, or read by the logger's writer in turn) or `at_once` (right after the launch,
/// on the issuing thread: `resolved`, or the logger and a timing observer both wanting it). A
/// backend may measure the two differently: one to be read back in bulk, the other fast to read
/// alone.
enum class read_when { later, at_once };

/// What a launch submitted between profile markers gave back: its measurement, unread, or, when the
/// source could not measure it (a graph capture window records launches that run only at replay),
/// nothing and why.
struct measured_submission {
  std::optional<profile_duration> profile;
  /// Why no measurement was taken, when `profile` is empty: static storage, for the warning.
  std::string_view refusal;
};

/// What only the source of a launch can do for it, handed to issue().
///
/// A source implements it per launch (on the stack: issue() keeps no reference past its return).
/// Whatever a source must track once the launch is queued (which buffers it used) it tracks inside
/// these calls, right after the queue took the launch, so an exception later in the routing never
/// leaves a queued kernel untracked.
class submitter {
 public:
  /// Submits the launch untimed (under a dry run: prepares it, or records it into a capture).
  virtual void submit() = 0;
  /// Submits the launch between profile markers and returns its measurement unread; or submits it
  /// untimed and says why it could not be measured. Under a dry run the measurement is the host time
  /// of the preparation (method `system`), since no kernel runs. `when` says when it will be read.
  virtual measured_submission submit_profiled(read_when when) = 0;

 protected:
  submitter() = default;
  ~submitter() = default;
  submitter(const submitter&) = default;
  submitter& operator=(const submitter&) = default;
};

/// Issues one launch: steps 4 and 5 of DESIGN.md §3, the part every launch source shares.
///
/// Reports `info` to the installed observer (`launched_with`), asks its timing() once, then either
/// submits the launch untimed, or submits it profiled and routes the measurement: unread to
/// `profiled` under `deferred`; read (slot unlocked) and told to `timed` under `resolved`; past the
/// logger's `execution_only`, read once, told to a timing observer's `timed` and handed to the
/// logger, or handed to the logger unread when the observer asked for no timing (so a names-only
/// observer never makes launches wait for their kernels). A duration goes only to the observation
/// the launch was reported to, and only while it is still installed. A measurement without ticks is
/// skipped with a warning, a refused profile is warned about (the launch is still submitted), and an
/// observer that throws is contained.
///
/// Call on the issuing thread, after the launch was validated, with `info` built once (its views
/// outliving every launch, as kernel names do). Exceptions from `source` propagate, and so does a
/// failure of a blocking read (a sticky device fault); the launch was submitted by then.
/// Must not be called from inside an observer method (aborts, with LAUNCHWATCH_CHECK_REENTRY).
/// Cost: one shared lock of the observer slot when an observer is installed, held from
/// `launched_with` through the submission to `profiled` for a names-only or deferred observer (so an
/// install or drop on another thread waits for one submission, never for a kernel); under
/// `resolved` it is released before the read and taken again to deliver. The logger's queue push
/// when it is on; a blocking read only under `resolved`, or when the logger and a timing observer
/// both want the reading.
void issue(const launch_info& info, submitter& source);

/// Tells the installed observer, if any, that `kernel` is being issued. Call on the issuing thread,
/// before the launch is submitted.
///
/// `kernel` must refer to storage that outlives every launch (a literal, type_name<K>()).
/// Exceptions thrown by the observer are caught and logged once per process.
/// Cost: one relaxed load and one branch when nothing is installed; nothing is built before it.
inline void notify_launch(std::string_view kernel) {
  if (!is_observing()) [[likely]] {
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
  if (!is_observing()) [[likely]] {
    return;
  }
  detail::notify_launch_info_observed(info);
}

/// Whether the installed observer asked for launches to be timed.
///
/// Cost: one relaxed load when nothing is installed; otherwise a shared lock and a virtual call.
[[nodiscard]] inline bool timing_wanted() {
  if (!is_observing()) [[likely]] {
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
