// The process-long attribution of a program run under `launchwatch run`: started by whichever of
// the injection's entry points the program reaches first, written out when the program ends.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/render.hpp>
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/observe.hpp>

namespace launchwatch::detail {

/// What `launchwatch run` asks of the injection, through the program's environment.
struct run_settings {
  /// LAUNCHWATCH_RUN_OUT: the folder for trace.json, flame.folded and summary.json
  /// (default `launchwatch-run`).
  std::filesystem::path out = "launchwatch-run";
  /// LAUNCHWATCH_RUN_TIMING: deferred (default), resolved, none, or windows:ON_MS/OFF_MS (deferred,
  /// in timing windows: `timing_windows` is then set).
  timing_request timing = timing_request::deferred;
  std::optional<cuda_timing_windows> timing_windows;
  /// LAUNCHWATCH_RUN_CAPTURE_RANGE: none (default) or cuda-profiler-api.
  bool profiler_api_range = false;
  /// LAUNCHWATCH_RUN_UNSCOPED: sole-scoped-thread (default) or outside.
  unscoped_launches unscoped = unscoped_launches::sole_scoped_thread;
  /// LAUNCHWATCH_RUN_PARENT: the pid of the `launchwatch run` that started the program; 0 when unset.
  /// Anything but a positive number is a configuration_error.
  long parent = 0;
  /// LAUNCHWATCH_RUN_TRACE_EVENTS: trace.json holds at most this many events, the pass's
  /// beginning (`run --trace-events`, default 1,000,000); 0 = no cap. A whole number of events.
  std::size_t trace_events = 1'000'000;
  /// LAUNCHWATCH_RUN_SNAPSHOT_EVERY: rewrite summary.json with the summary so far this often while
  /// the program runs (`run --snapshot-every`); 0 (the default) = only at exit. Whole seconds.
  std::chrono::seconds snapshot_every{0};
};

/// The attribution a session runs: aggregate-only (memory bounded by the distinct (scope, kernel,
/// stream) triples, docs/design.md section 11), keeping the pass's beginning for trace.json up to
/// `settings.trace_events` (all of it for 0), with the settings' timing and unscoped rule.
/// Thread safety: a pure function.
inline attribution_options session_attribution_options(const run_settings& settings) {
  attribution_options options;
  options.timing = settings.timing;
  options.unscoped = settings.unscoped;
  options.aggregate_only = true;
  options.trace_prefix_events = settings.trace_events == 0 ? unlimited_trace_prefix : settings.trace_events;
  return options;
}

/// How a session writes trace.json: capped at `settings.trace_events` (0: no cap), saying what the
/// prefix left out (`left_out`, from attribution::collect_bounded). Thread safety: a pure function.
inline trace_options session_trace_options(const run_settings& settings, const prefix_left_out& left_out) {
  trace_options options;
  options.max_events = settings.trace_events;
  options.beyond_prefix = left_out;
  return options;
}

/// Reads run_settings from the environment; throws configuration_error naming a variable whose
/// value is not one of those listed.
run_settings read_run_settings();

/// Where a process writes its report: `settings.out` for the program `launchwatch run` started (its
/// parent is `settings.parent`, or no parent is known); for any other process that inherited the
/// injection (a program the program ran: torchrun's ranks, a subprocess using CUDA)
/// `settings.out/processes/<folder>` ("rank-0-pid-1234", "pid-1234": the label with every character
/// but letters, digits, `.`, `_` and `-` made a `-`), so it never overwrites another's,
/// with `label` its label in a merged report ("rank 0, pid 1234": the job's label from
/// process_label_from_environment, if any, and always the pid, since a rank's own subprocesses
/// inherit its RANK).
struct report_place {
  std::filesystem::path folder;
  std::string label;  // empty for the program itself
};
report_place report_place_for(const run_settings& settings, long pid, long parent_pid, const std::string& job_label);

/// Starts the session once per process: an attribution installed as the process's observer until
/// exit (a child forked from it without exec writes nothing: its copy of the session's locks may be
/// held by threads it does not have), signal handlers for SIGINT, SIGTERM and SIGHUP where the
/// program kept the default (so a program stopped by one still leaves its report; the signal then
/// ends it as it would have, and a second one ends it at once), and the report written at exit. In
/// the program `launchwatch run` started, what became of the report is also told to it through the
/// pipe LAUNCHWATCH_RUN_STATUS_FD names (`watching`, then `written` or `failed WHY`). A bad setting
/// is said once on stderr and nothing is watched. With `snapshot_every`, a thread rewrites
/// summary.json (report_files::write_summary: a temporary name, then renamed over it) with the
/// summary so far, so a program killed by its job scheduler still leaves one.
/// Thread safety: any thread, any number of times. Never throws.
void start_run_session() noexcept;

/// Starts the session and the CUDA bridge (InitializeInjection, on the thread in cuInit, where the
/// CUDA runtime may be mid-initialisation: the bridge is made without calling it). When the bridge
/// cannot start, says once on stderr what is not watched and why; the program runs on.
void watch_cuda_in_run_session() noexcept;

/// Writes the report now (once per process; later calls do nothing): stops the snapshot thread,
/// flushes the bridge, ends the observation, collects (attribution::collect_bounded), writes the
/// three files into run_settings::out (trace.json the pass's beginning, capped as
/// session_trace_options says), and says on stderr what was not watched, if anything. Called at
/// exit and from the signal path.
void finish_run_session() noexcept;

}  // namespace launchwatch::detail
