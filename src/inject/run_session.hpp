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
};

/// Reads run_settings from the environment; throws configuration_error naming a variable whose
/// value is not one of those listed.
run_settings read_run_settings();

/// Starts the session once per process: an attribution installed as the process's observer until
/// exit, signal handlers for SIGINT and SIGTERM where the program kept the default (so a program
/// stopped by one still leaves its report; the signal then ends it as it would have), and the
/// report written at exit. A bad setting is said once on stderr and nothing is watched.
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
