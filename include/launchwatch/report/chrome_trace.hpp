// The Chrome trace of a pass, for Perfetto and chrome://tracing: every launch on its host thread,
// every kernel on its device stream, and an arrow from each launch to its kernel.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <string_view>

#include <launchwatch/kernel_name.hpp>
#include <launchwatch/report/pass_record.hpp>
#include <launchwatch/report/report_writer.hpp>

namespace launchwatch {

/// How a Chrome trace is written.
struct trace_options {
  /// How much of each kernel's name a device slice is labelled with (its full name is in the
  /// slice's arguments).
  name_format kernel_names = name_format::balanced;
  /// At most this many events (slices and arrow ends; track metadata aside), or 0 for no limit.
  /// A trace of a long pass can be too large for a viewer to open: with a cap, the trace is the
  /// pass's beginning, whole, up to the instant where the cap is reached, and says what it dropped.
  std::size_t max_events = 0;
  /// What the pass being written left out before it reached the writer: a trace prefix's launches
  /// and scope intervals that are only in the summary (attribution::collect_bounded). Said in the
  /// trace's metadata and host process name beside what `max_events` dropped; all zero (the
  /// default) for a whole pass.
  prefix_left_out beyond_prefix;
};

/// What a Chrome trace writer wrote, so a program can say when a capped trace left events out.
struct trace_stats {
  /// Events written (slices and arrow ends; track metadata aside).
  std::size_t events = 0;
  /// Events left out by trace_options::max_events: every event from `dropped_from` on.
  std::size_t dropped = 0;
  /// Where the written trace stops, from the pass's origin; 0 when nothing was dropped.
  std::chrono::nanoseconds dropped_from{0};
  /// What was left out before the writer (trace_options::beyond_prefix), as it was told.
  prefix_left_out beyond_prefix;
};

/// A pass as Chrome trace JSON that Perfetto and chrome://tracing open (`chrome-trace`, file
/// `trace.json`).
///
/// The object form `{"traceEvents": [...]}` with times in microseconds from the pass's origin:
/// - process "host" with one track per host thread: its scopes as nested complete slices, and each
///   launch as a slice from when it was reported to when its measurement was handed over;
/// - one process per device ("cpu device 0") with one track per stream: each timed kernel as a
///   slice at its device timestamps, labelled with the kernel and carrying its scope path;
/// - a flow arrow from each launch to its kernel (`s` and `f` events with `"bp": "e"`, each placed
///   halfway through its slice so it binds to that slice; a launch or kernel slice of zero length
///   has no inside to bind to, so it gets no arrow);
/// - metadata naming and ordering every process and track.
/// Every track's events are written in time order and its slices nest; a kernel that overlaps an
/// earlier one on its stream goes on an extra "overlap" track of that stream instead of breaking
/// the nesting. Kernels known only by length (resolved timing) have no place on the timeline and get
/// no device slice.
///
/// Each event is formatted and written as it goes, never the whole trace as one string; what is
/// held besides the pass is a few words per event, to put each track in time order. With
/// `max_events`, events from the instant the cap is reached on are dropped (an arrow is written
/// only with both its ends), the host process is named `host (trace cut at N events: M later
/// events dropped)`, and a `launchwatch_dropped_events` metadata event carries the numbers. With
/// `beyond_prefix` not empty, the host process's name says how many later launches and scope
/// intervals are only in the summary, and the same metadata event carries them
/// (`launches_beyond_prefix`, `scope_intervals_beyond_prefix`, `prefix_ends_us`). That event,
/// when written, is on a line of its own among the first metadata lines (after each process's
/// name and sort index), so a reader can find it without parsing the whole trace; its arguments
/// always include `events` (written) and `dropped_events` (0 when the cap dropped nothing).
class chrome_trace_writer final : public report_writer<pass_record> {
 public:
  /// The file a report folder gives the trace (report_files).
  static constexpr std::string_view default_file_name = "trace.json";

  explicit chrome_trace_writer(const trace_options& options = {});

  /// What the last `write` wrote; all zero before the first.
  const trace_stats& stats() const noexcept { return stats_; }

 protected:
  void do_write(std::ostream& out, const pass_record& pass) override;

 private:
  trace_options options_;
  trace_stats stats_;
};

/// Writes `pass` as a Chrome trace (chrome_trace_writer) and returns what it wrote. Thread safety:
/// reads only its arguments.
trace_stats write_chrome_trace(std::ostream& out, const pass_record& pass,
                               const trace_options& options = {});

}  // namespace launchwatch
