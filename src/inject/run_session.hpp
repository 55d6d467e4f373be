// The process-long attribution of a program run under `launchwatch run`: started by whichever of
// the injection's entry points the program reaches first, written out when the program ends.
#pragma once

#include <filesystem>
#include <string>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/observe.hpp>

namespace launchwatch::detail {

/// What `launchwatch run` asks of the injection, through the program's environment.
struct run_settings {
  /// LAUNCHWATCH_RUN_OUT: the folder for trace.json, flame.folded and summary.json
  /// (default `launchwatch-run`).
  std::filesystem::path out = "launchwatch-run";
  /// LAUNCHWATCH_RUN_TIMING: deferred (default), resolved or none.
  timing_request timing = timing_request::deferred;
  /// LAUNCHWATCH_RUN_CAPTURE_RANGE: none (default) or cuda-profiler-api.
  bool profiler_api_range = false;
  /// LAUNCHWATCH_RUN_UNSCOPED: sole-scoped-thread (default) or outside.
  unscoped_launches unscoped = unscoped_launches::sole_scoped_thread;
  /// LAUNCHWATCH_RUN_PARENT: the pid of the `launchwatch run` that started the program; 0 when unset.
  /// Anything but a positive number is a configuration_error.
  long parent = 0;
};

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
/// is said once on stderr and nothing is watched.
/// Thread safety: any thread, any number of times. Never throws.
void start_run_session() noexcept;

/// Starts the session and the CUDA bridge (InitializeInjection, on the thread in cuInit, where the
/// CUDA runtime may be mid-initialisation: the bridge is made without calling it). When the bridge
/// cannot start, says once on stderr what is not watched and why; the program runs on.
void watch_cuda_in_run_session() noexcept;

/// Writes the report now (once per process; later calls do nothing): flushes the bridge, ends the
/// observation, collects, writes the three files into run_settings::out, and says on stderr what
/// was not watched, if anything. Called at exit and from the signal path.
void finish_run_session() noexcept;

}  // namespace launchwatch::detail
