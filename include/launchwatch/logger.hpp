// The profiling logger: a report of every launch, written by a background thread, for a program run
// with LAUNCHWATCH_PROFILE set and no code changed.
//
// An observer is for code that wants to attribute launches; the logger is for a person who wants to
// see them. Formatting and writing happen on one background thread, so the launch path only queues
// what it knows: it never formats a name, never waits for a measurement and never touches a file.
//
// What each level writes (name forms are those of format_kernel_name):
// - `disabled`: nothing.
// - `execution_only`: a line per launch naming it and where it ran, with no timing:
//   `launch matmul | float | 16 on cpu:0 stream 3` (balanced name). No summary: nothing is timed.
// - `basic`: only the summary table, at each sync (balanced names).
// - `medium`: the summary, plus a line per launch with its balanced name and duration:
//   `launch matmul | float | 16 took 1.500 ms (device)`.
// - `full`: the summary in full names, plus a line per launch with everything known about it:
//   `launch demo::ops::matmul<float, 16> on cpu:0 stream 3 grid 4x1x1 cube 256x1x1
//   start +1.000000 ms end +2.500000 ms took 1.500 ms (device)` (one line).
// Start and end are offsets from the moment the logger started, on the one steady timeline every
// measurement is mapped onto. A launch under a dry run or inside a graph capture window ends in
// ` [dry run]` or ` [captured]`. A launch whose measurement carried no ticks reads
// `untimed (no measurement)` in place of its duration and is counted apart from the timed ones,
// never as a zero. Every duration says how it was measured, `(device)` or `(system)`.
//
// The summary table (one per timing method, since a device window and a host wall time around a
// blocking submit are different measurements and must not be added up):
//
//   profile summary (device timing): 3 launches, 4.000 ms
//   kernel                  total  count    share
//   matmul | float | 16  3.000 ms      2   75.00%
//   softmax              1.000 ms      1   25.00%
//   total                4.000 ms      3  100.00%
//
// Rows are sorted by total time, longest first (ties by name); shares are rounded so that the rows
// add up to exactly the total row's 100.00%. Launches that carried no measurement follow in their own
// `untimed launches` table of counts.
#pragma once

#include <atomic>
#include <filesystem>
#include <iosfwd>
#include <string_view>
#include <utility>

#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/errors.hpp>

namespace launchwatch {

class profiling_logger;

namespace detail {
void reset_profiling_logger_for_testing();
}  // namespace detail

/// How much the profiling logger writes; each level includes the cost of the one below it.
///
/// Ordered so the launch path can compare: past `execution_only` every launch is timed (bracketed
/// with profile markers) because the logger reads each measurement.
enum class profile_level {
  /// Nothing is written and nothing is timed. The default.
  disabled,
  /// A line per launch naming the kernel and where it ran; nothing is timed.
  /// `LAUNCHWATCH_PROFILE=minimal`.
  execution_only,
  /// Every launch is timed; only a summary table is written, at each `client.sync()`.
  basic,
  /// The summary, plus a line per launch with its duration and balanced name.
  medium,
  /// The summary in full names, plus a line per launch with its full name, device, stream, grid,
  /// start, end and duration.
  full,
};

/// Where the profiling logger's lines go: standard error (the default), standard output, a file, or
/// a stream the program owns.
///
/// A value type rather than a string, so that a file named `stdout` is still a file; the environment
/// variable LAUNCHWATCH_LOG spells the same choices as `stderr`, `stdout` or a path.
///
/// Thread safety: a value type. Cost: not on any launch path.
class log_output {
 public:
  /// Which of the destinations this is.
  enum class kind { standard_error, standard_output, file, stream };

  /// Standard error, flushed line by line: the default, since a report should not be mixed into
  /// what the program prints on standard output.
  static log_output standard_error() noexcept { return log_output{kind::standard_error}; }
  /// Standard output.
  static log_output standard_output() noexcept { return log_output{kind::standard_output}; }
  /// The file at `path`, appended to so a run never erases an earlier run's log. Its directory must
  /// exist: a typo in a directory name is reported rather than silently created.
  static log_output file(std::filesystem::path path) {
    log_output output{kind::file};
    output.path_ = std::move(path);
    return output;
  }
  /// A stream the program owns, to collect the report in memory or hand it to its own logging.
  ///
  /// Precondition: `out` outlives the logger's use of it, that is until another output is set (and
  /// the lines queued before that are written: call flush()). The logger's background thread is the
  /// only writer; read the stream after flush() or write_summary() returned.
  static log_output stream(std::ostream& out) noexcept {
    log_output output{kind::stream};
    output.stream_ = &out;
    return output;
  }

  /// Which destination this is.
  kind where() const noexcept { return kind_; }
  /// The file's path; empty unless `where()` is `kind::file`.
  const std::filesystem::path& path() const noexcept { return path_; }
  /// The stream; null unless `where()` is `kind::stream`.
  std::ostream* stream() const noexcept { return stream_; }

 private:
  explicit log_output(kind where) noexcept : kind_{where} {}

  kind kind_;
  std::filesystem::path path_;
  std::ostream* stream_ = nullptr;
};

/// The process's profiling logger (CubeCL's ServerLogger): writes a line per launch and, on each
/// `client.sync()`, a summary table of the launches since the previous one.
///
/// One per process, like the observer slot, because a person reading the log wants every client's
/// launches in one place, and the environment that configures it is the process's. A runtime calls
/// start() when a device's runtime starts, then on every launch asks level() and, accordingly,
/// calls record_execution() (at `execution_only`) or record() with the launch's measurement (past
/// it), and calls write_summary() on sync. Everything past queuing happens on one background
/// thread: resolving each measurement (which waits for the kernel), formatting names and writing.
///
/// The writer is shut down at exit: what was queued is written, with a last summary of the launches
/// no sync summarised, waiting a bounded time for measurements still pending (so a device torn down
/// first cannot hang the exit), and saying on the `launchwatch` diagnostics logger what it gave up.
/// Its state is never destroyed, so a thread still launching while static destructors run finds it
/// intact.
///
/// Thread safety: every member may be called from any thread at once.
class profiling_logger {
 public:
  /// The process's logger.
  ///
  /// Cost: none beyond an address; the logger is constant-initialised, so there is no guard to
  /// check, and a runtime may also keep the reference.
  static profiling_logger& instance() noexcept {
    static constinit profiling_logger logger;
    return logger;
  }

  /// The level in force. The launch path asks this for every launch, before building anything.
  ///
  /// Cost: one relaxed atomic load. A change made by set_level() on another thread may be seen a
  /// few launches late; a launch caught by the change is logged under either level, or not at all
  /// when the change was to `disabled`.
  [[nodiscard]] profile_level level() const noexcept {
    return level_.load(std::memory_order_relaxed);
  }

  /// Sets the level, from now on. Code that sets it before start() wins over LAUNCHWATCH_PROFILE,
  /// so a program that decides for itself is not overridden by a stray environment.
  ///
  /// If the logger has started and `level` is past `disabled`, the output is opened now, so an
  /// unwritable file is reported here and not lost later. Throws configuration_error for a value
  /// outside the enumeration, or for an output that cannot be opened (the level is then unchanged).
  void set_level(profile_level level);

  /// Sends the lines from now on to `output`; lines already queued go where they were meant to.
  /// Code that sets it before start() wins over LAUNCHWATCH_LOG.
  ///
  /// A file is opened now, so a path that cannot be written is reported to the caller that chose it:
  /// throws configuration_error naming the path and the reason, and the output is then unchanged.
  void set_output(log_output output);

  /// Configures the logger from the environment, once: called by a runtime each time a device's
  /// runtime starts (each client creation); later calls do nothing.
  ///
  /// Reads LAUNCHWATCH_PROFILE (`disabled`, `minimal` for execution_only, `basic`, `medium`, `full`)
  /// unless code called set_level() first, and LAUNCHWATCH_LOG (`stderr`, `stdout`, or a file path)
  /// unless code called set_output() first; an unset or empty variable keeps the default. When the
  /// level is past `disabled`, opens the output and starts the background writer; otherwise a log
  /// file is checked but neither created nor opened.
  ///
  /// Throws configuration_error naming the variable, its value and the accepted values for a value
  /// that is not one of them, or a file that cannot be opened for appending; the logger is then not
  /// started and nothing is changed, so the next client creation throws the same error rather than
  /// running unlogged.
  void start();

  /// Queues a launch and its measurement for the background writer, which resolves the measurement
  /// (waiting for the kernel there, not here), writes the launch's line if the level asks for one,
  /// and adds it to the summary. Does nothing at `execution_only` and below.
  ///
  /// `info`'s views must refer to storage that outlives the process's launches, as kernel names do.
  /// A measurement with no ticks, or whose read throws, is written and counted as untimed.
  /// Cost: a lock held for a queue push, and a wake-up of the writer when it was idle; never I/O,
  /// never a wait for the measurement. The first call may start the writer thread.
  void record(const launch_info& info, profile_duration reading);

  /// Queues a line naming a launch, without timing. Does nothing unless the level is
  /// `execution_only`: past it, record() writes the launch instead.
  ///
  /// Cost: as record().
  void record_execution(const launch_info& info);

  /// Waits until everything queued so far is written, then writes the summary tables of the
  /// launches recorded since the previous summary (nothing when there were none). Called on
  /// `client.sync()`.
  ///
  /// Process-wide: it summarises every client's launches. Blocks until the measurements queued
  /// before it have been read, which on a device means until those kernels have run.
  void write_summary();

  /// Waits until everything queued so far is written and the output flushed.
  void flush();

  profiling_logger(const profiling_logger&) = delete;
  profiling_logger& operator=(const profiling_logger&) = delete;
  profiling_logger(profiling_logger&&) = delete;
  profiling_logger& operator=(profiling_logger&&) = delete;

 private:
  // Constant-initialised and trivially destructible, so the hot level() is a load from a fixed
  // address and nothing about the logger is torn down while other threads may still launch. The
  // queue, the thread and the output live in src/core/logger/logger.cpp.
  constexpr profiling_logger() noexcept = default;
  ~profiling_logger() = default;

  friend void detail::reset_profiling_logger_for_testing();

  std::atomic<profile_level> level_{profile_level::disabled};
};

namespace detail {

/// Puts the logger back as a fresh process has it, so a test can read the environment again: waits
/// for the writer to finish what is queued (written to the current output), stops it, forgets
/// whether code set the level or the output and whether it started, drops unsummarised launches,
/// and sends output to standard error. Tests only; not while other threads use the logger.
void reset_profiling_logger_for_testing();

/// The clock the logger reads when it starts, to place `full` lines' start and end; null puts back
/// std::chrono::steady_clock. For tests that compare lines against exact text. Takes effect at the
/// next start().
void set_profiling_clock_for_testing(instant (*now)() noexcept);

}  // namespace detail
}  // namespace launchwatch
