// The launch path: for code that issues kernels (a backend, the CUDA bridge, a runtime built on
// launchwatch), not for observers.
//
// Every launch source calls one function, issue(), with what only it can do (submit the launch, or
// submit it between profile markers) and the launch's description; issue() reports the launch,
// decides whether to time it, and routes the measurement to the observer and the profiling logger
// as docs/design.md §3 says. The rule is written there once, so no source and no observer re-derives it.
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

#include <cstdint>
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

/// Issues one launch: steps 4 and 5 of docs/design.md §3, the part every launch source shares.
///
/// Reports `info` to the installed observer (`launched_with`), asks its timing() once, then either
/// submits the launch untimed, or submits it profiled and routes the measurement: unread to
/// `profiled` under `deferred`; read (slot unlocked) and told to `timed` under `resolved`; past the
/// logger's `execution_only`, read once, told to a timing observer's `timed` and handed to the
/// logger, or handed to the logger unread when the observer asked for no timing (so a names-only
/// observer never makes launches wait for their kernels). A duration goes only to the observation
/// the launch was reported to, and only while it is still installed. A measurement without ticks is
/// skipped with a warning, a refused profile is warned about (the launch is still submitted), a
/// collective launch is never read at once (see begin_issue), and an observer that throws is
/// contained.
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

/// What begin_issue() decided for a launch it reported: whether the source measures it and when the
/// measurement will be read. Handed back, unchanged, to finish_issue().
///
/// A value the source keeps between its two steps (on its stack, or in a thread-local slot between
/// two callbacks); it holds no lock and no reference to the observer, only the serial of the
/// observation the launch was reported to, so an observation may end in between.
class issue_decision {
 public:
  /// Whether the source submits the launch between profile markers (submit_profiled's job).
  [[nodiscard]] bool measure() const noexcept { return measure_; }
  /// When the measurement will be read, if measure().
  [[nodiscard]] read_when when() const noexcept { return when_; }

 private:
  friend issue_decision begin_issue(const launch_info& info);
  friend void finish_issue(const launch_info& info, const issue_decision& decision);
  friend void finish_issue(const launch_info& info, const issue_decision& decision,
                           measured_submission submitted);

  timing_request request_ = timing_request::none;
  std::uint64_t observation_ = 0;
  bool logger_reads_ = false;
  bool logger_lists_ = false;
  bool measure_ = false;
  read_when when_ = read_when::later;
  /// Why the launch path itself refused a measurement it would have taken (a collective read at
  /// once); static storage.
  std::string_view refusal_;
};

/// issue() in two steps, for a launch source that sees a launch before and after its submission but
/// does not submit it itself: the CUDA bridge, whose CUPTI callbacks run on the issuing thread at
/// the launch's entry (before submission) and exit (after). The rules are issue()'s; the difference
/// is the slot's lock: issue() holds it from the report through a names-only or deferred submission,
/// while these take it in each step (a source's exit may never come), so a measurement reaches the
/// observation its launch was reported to only if that one is still installed when it is handed over.
///
/// begin_issue reports `info` (`launched_with`) and asks timing() once, then decides: measure or
/// not, read later or at once. A collective launch (`info.collective`) is never read at once (its
/// peers may be issued by this thread after it, so waiting deadlocks): the measurement is refused,
/// with one warning per process, and the launch goes on; `deferred` stays measured. Call on the
/// issuing thread before submission; must not be called from inside an observer method.
/// Cost: as issue()'s report, one shared lock of the slot when an observer is installed.
[[nodiscard]] issue_decision begin_issue(const launch_info& info);

/// The second step after an untimed submission (`!decision.measure()`): writes the logger's line
/// when it lists launches, and says why a refused measurement is missing.
void finish_issue(const launch_info& info, const issue_decision& decision);

/// The second step after a measured submission: routes `submitted` as issue() does (unread to
/// `profiled`, read and told to `timed`, handed to the logger), or warns that the source refused the
/// profile. `info` must be the one begin_issue was given (its views still valid). On the issuing
/// thread; a read at once blocks for the kernel, with no lock held.
void finish_issue(const launch_info& info, const issue_decision& decision,
                  measured_submission submitted);

// What a launch source needs besides issue() and begin_issue()/finish_issue(), so that it reaches
// the observer slot only through this header: the CUDA bridge (graph replays' nodes arrive on its
// collector thread, after the fact; its CUPTI callbacks cost something while enabled; it also sees
// the launches the CUDA backend reports itself), and any source to come.

}  // namespace launch_path

namespace detail {
/// Makes and reads observation_refs (launch_sources.cpp).
struct observation_refs;
}  // namespace detail

namespace launch_path {

/// Which observation an event that arrives later belongs to: the one installed when the source saw
/// the launch it is about (current_observation()). Behaviour 6 hands such an event only to that
/// observation, and only while it is still installed (deliver_replayed).
///
/// A value (copy it freely) holding neither a lock nor the observer: the observation may end while
/// a reference is kept, and the reference then matches nothing. Empty (the default) when no
/// observation was installed. Two references are equal when they name the same observation; an
/// observation installed again later, even with the same observer, is another one.
class observation_ref {
 public:
  /// Names no observation: delivers nothing.
  observation_ref() noexcept = default;

  /// Whether it names no observation.
  [[nodiscard]] bool empty() const noexcept { return serial_ == 0; }

  friend bool operator==(observation_ref, observation_ref) noexcept = default;

 private:
  friend struct detail::observation_refs;
  // The observation's serial: unique in the process, never reused, 0 for none.
  std::uint64_t serial_ = 0;
};

/// The observation installed now (the top of the slot), or an empty reference when none is.
///
/// For a source that sees a launch now and hears about it later (the bridge at a graph's replay
/// launch, whose nodes' records come afterwards). Safe from any thread; must not be called from
/// inside an observer method (aborts, with LAUNCHWATCH_CHECK_REENTRY).
/// Cost: one relaxed load when nothing is installed; otherwise a shared lock of the slot.
[[nodiscard]] observation_ref current_observation() noexcept;

/// Tells the observation `to` that a kernel node of a graph it saw captured was replayed: calls
/// `replayed(node)` if that very observation is the installed one now and its observer derives
/// from graph_replay_observer. Behaviour 6 for a measurement that arrives after the fact: identity
/// of the observation, not equality of observers. An observation that replaced `to` never saw the
/// replay's launch and is not told (`to` is told again once that one is dropped and `to` is back on
/// top); one `to` replaced and that is put back when `to` ends is not told either, and nothing is
/// once `to` ended. Returns whether it was told.
///
/// Safe from any thread (the bridge's collector, a flush); the observer is called with the slot's
/// shared lock held, and an exception it throws is contained and logged once per process. Must not
/// be called from inside an observer method (aborts, with LAUNCHWATCH_CHECK_REENTRY).
/// Cost: one relaxed load when nothing is installed or `to` is empty; otherwise a shared lock of
/// the slot and a dynamic_cast.
bool deliver_replayed(observation_ref to, const replayed_node& node);

/// Whether this thread is inside an observer method right now (one the launch path called).
///
/// An observer must not launch (behaviour 13): a source that sees a launch made from inside one
/// (the bridge sees every CUDA launch, also a library's called by an observer) leaves it unreported
/// rather than take the slot's lock again; begin_issue() and issue() abort saying so in builds with
/// LAUNCHWATCH_CHECK_REENTRY. Cost: a call and a thread-local read.
[[nodiscard]] bool inside_observer() noexcept;

/// Refuses, loudly, `what` (a launch, a flush) attempted from inside an observer method: aborts
/// with a message naming it when this build checks reentry (LAUNCHWATCH_CHECK_REENTRY, on by
/// default) and this thread is inside one; returns otherwise. A source calls it where it would
/// otherwise take the observer slot's lock again (behaviour 13), then leaves the request undone
/// when inside_observer() is true.
/// Cost: a thread-local read.
void check_outside_observer(const char* what);

/// Installs `listener` as the one function told when watched() changes between "nothing watches"
/// and "something does" (an observation installed into an empty slot or the last one dropped, the
/// profiling logger turned on or off); nullptr removes it. Replaces the previous listener.
///
/// For a source whose idle cost is more than watched()'s one load (the bridge: CUPTI dispatches
/// every enabled callback), to switch itself on while something watches and off when nothing does.
/// The listener is called on the thread that made the change, after every launchwatch lock it took
/// is released (so it may call into CUDA's tools interface); two changes may race, so it reads
/// watched() itself rather than being told the new state, and the last call sees the last word. It
/// must not throw, nor install or drop an observation. Safe from any thread.
/// Cost: one atomic store; each change of watched() then costs a call of the listener.
void on_watched_change(void (*listener)() noexcept) noexcept;

/// Marks this thread's launch calls, for its lifetime, as reported already, so that another source
/// that sees the same launch (the CUDA bridge sees every CUDA launch in the process) skips it, and
/// every launch reaches the observer exactly once. The CUDA backend holds one around each launch
/// call it makes: its kernels (reported through issue()), its graph replays (not reported, per
/// behaviour 12) and its own clock probes (never a program's kernel).
///
/// Nests: the flag is restored, not cleared, when the guard ends. One flag per thread for the whole
/// process, even when it holds two copies of launchwatch (a program linking it, run under
/// `launchwatch run`, whose injection library carries a private copy): each copy looks up, once, a
/// flag accessor by one name in the process's global scope, where a program that links
/// launchwatch::core exports it, and uses the first found, else its own. The limit: when the
/// program itself does not link launchwatch, copies inside shared objects opened with RTLD_LOCAL
/// (the injection library, a Python extension module linking launchwatch) find none and keep one
/// flag per copy, so launches of such a module's CUDA backend are reported by the bridge too.
///
/// Neither copyable nor movable; end it on the thread that made it.
/// Cost: a call and a thread-local load and store, at each end; the first use on a thread also an
/// indirect call. (The one dynamic symbol lookup happens when the copy is loaded.)
class [[nodiscard]] reported_here {
 public:
  /// Marks this thread's launch calls as reported until the guard ends.
  reported_here() noexcept;
  /// Puts back the mark as it was before the guard.
  ~reported_here();

  reported_here(const reported_here&) = delete;
  reported_here& operator=(const reported_here&) = delete;
  reported_here(reported_here&&) = delete;
  reported_here& operator=(reported_here&&) = delete;

 private:
  bool was_;
};

/// Whether this thread is inside a reported_here guard (of any copy of launchwatch in the process,
/// within reported_here's limit): the launch call a source sees now is reported already.
/// Cost: as reported_here's construction, without the store.
[[nodiscard]] bool reported_here_now() noexcept;

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

/// Why a launch on a stream that is recording a graph capture carries no measurement: the kernel
/// runs at each replay of the graph, not now. Every launch source gives this one reason as its
/// refusal (to warn_profile_refused, or in a submitter's `measured_submission`), so an observer's
/// log reads the same whichever backend or bridge refused. Static storage.
inline constexpr std::string_view capture_refusal =
    "the stream is recording a graph capture: its launches run at each replay, not now";

}  // namespace launch_path
}  // namespace launchwatch
