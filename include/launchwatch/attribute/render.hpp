// Reports drawn from what an attribution collected: a tree table for people, a Chrome trace for
// Perfetto, folded stacks for flame graphs. Each reads plain data (a pass_summary or a
// pass_record) and writes text; none of them observes anything.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <string>

#include <launchwatch/attribute/pass_record.hpp>
#include <launchwatch/attribute/summary.hpp>
#include <launchwatch/kernel_name.hpp>

namespace launchwatch {

/// The order of the tree's rows among their siblings.
enum class tree_order {
  /// The order the pass first issued a launch under each row: the order the program ran, so
  /// `layer 0` to `layer 3` read in order. The summary keeps this order.
  issue,
  /// Largest total first (then most launches, scopes before kernels, then by name): the hot-first
  /// view (`launchwatch report --sort time`).
  time,
};

/// Which accounting of device time the tree's 100% is (see pass_summary).
enum class idle_accounting {
  /// Each device's streams united on one timeline: idle is time the device ran nothing, and
  /// kernels running at once on two streams are overlap.
  device,
  /// Each stream on its own, summed: idle is time a stream ran nothing, even while another stream
  /// of its device was busy.
  stream,
};

/// How the tree table is drawn.
struct tree_options {
  /// How much of each kernel's name is shown (`balanced` keeps template arguments apart).
  name_format kernel_names = name_format::balanced;
  /// The order of rows among their siblings.
  tree_order order = tree_order::issue;
  /// What 100% is: per device (the default) or per stream.
  idle_accounting accounting = idle_accounting::device;
};

/// Writes the tree table: one row per scope, with its kernels and child scopes indented under it
/// (launches, with dry runs and launches without time counted apart; self time, total time, share
/// of the pass), in the order `options.order` says; then a row for launches outside any scope, a
/// row for idle time, a row subtracting overlap when kernels ran at once, and a total row. The
/// rows' totals add up to the window of the accounting `options.accounting` names, so the table
/// accounts for 100% of it; the header says how the time was measured (by method, and whether
/// kernels have their start and end or only a length), what the 100% is made of, and what was
/// lost, and when measurement methods were mixed each row says which it holds. Under the table, a
/// second one gives each device's window, kernel time, idle time and overlap with its streams'
/// under it, so the per-device and per-stream views stand side by side.
///
/// Times use one unit for the whole table, chosen from the window's size, and shares add up: the
/// top-level rows' shares to the total's 100.0%, and each row's children's shares to its own (by
/// largest remainder, so a nested share can differ from its exact value by up to a tenth of a
/// percent per level). The profiling logger's summary follows the same rules. Thread safety: reads
/// only its arguments.
void write_tree(std::ostream& out, const pass_summary& summary, const tree_options& options = {});

/// The same table as a string.
std::string render_tree(const pass_summary& summary, const tree_options& options = {});

/// How folded stacks are written.
struct folded_options {
  /// How much of each kernel's name is the leaf frame.
  name_format kernel_names = name_format::balanced;
  /// Whether device idle time (per device, its streams united) is written as a `[device idle]`
  /// frame, so the graph's width is the whole device window like the tree's total.
  bool include_idle = true;
};

/// Writes folded stacks, one line per scope path and kernel: `scope;scope;kernel <ns>`, device
/// nanoseconds as the count, lines sorted. flamegraph.pl and speedscope read it. Kernels launched
/// outside any scope are a single frame; untimed rows are left out (a zero-width frame draws
/// nothing). `;` in a name is written `:`, and a line break as a space, since both end a frame or a
/// line in this format.
void write_folded(std::ostream& out, const pass_summary& summary,
                  const folded_options& options = {});

/// How a Chrome trace is written.
struct trace_options {
  /// How much of each kernel's name a device slice is labelled with (its full name is in the
  /// slice's arguments).
  name_format kernel_names = name_format::balanced;
  /// At most this many events (slices and arrow ends; track metadata aside), or 0 for no limit.
  /// A trace of a long pass can be too large for a viewer to open: with a cap, the trace is the
  /// pass's beginning, whole, up to the instant where the cap is reached, and says what it dropped.
  std::size_t max_events = 0;
};

/// What write_chrome_trace wrote, so a program can say when a capped trace left events out.
struct trace_stats {
  /// Events written (slices and arrow ends; track metadata aside).
  std::size_t events = 0;
  /// Events left out by trace_options::max_events: every event from `dropped_from` on.
  std::size_t dropped = 0;
  /// Where the written trace stops, from the pass's origin; 0 when nothing was dropped.
  std::chrono::nanoseconds dropped_from{0};
};

/// Writes `pass` as Chrome trace JSON that Perfetto and chrome://tracing open.
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
/// `options.max_events`, events from the instant the cap is reached on are dropped (an arrow is
/// written only with both its ends), the host process is named `host (trace cut at N events: M
/// later events dropped)`, and a `launchwatch_dropped_events` metadata event carries the numbers.
trace_stats write_chrome_trace(std::ostream& out, const pass_record& pass,
                               const trace_options& options = {});

}  // namespace launchwatch
