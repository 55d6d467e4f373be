// Reports drawn from what an attribution collected: a tree table for people, a Chrome trace for
// Perfetto, folded stacks for flame graphs. Each reads plain data (a pass_summary or a
// pass_record) and writes text; none of them observes anything.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

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

/// How a report is written: for people, or for a program to read.
enum class report_format {
  /// Aligned columns, times with their units (`412 us`), shares in percent.
  table,
  /// RFC 4180 CSV: a header line naming the columns, then a line per row; times as integer
  /// nanoseconds, shares as fractions (0.25 for a quarter), an empty cell where the table shows
  /// `-`; a field holding a comma, a quote or a line break is quoted, its quotes doubled.
  csv,
  /// One JSON object holding the same rows, with the same numbers as the CSV (`null` for `-`).
  json,
};

/// How the tree table is drawn.
struct tree_options {
  /// How much of each kernel's name is shown (`balanced` keeps template arguments apart).
  name_format kernel_names = name_format::balanced;
  /// The order of rows among their siblings.
  tree_order order = tree_order::issue;
  /// What 100% is: per device (the default) or per stream.
  idle_accounting accounting = idle_accounting::device;
  /// How many levels of rows are shown, top-level rows being level 1; 0 shows them all. A row at
  /// the last level shown keeps its whole total (its hidden rows are folded into it).
  std::size_t depth = 0;
  /// A table for people, CSV or JSON.
  report_format format = report_format::table;
};

/// One row of the tree, as plain data: what write_tree writes, in every format.
struct tree_row {
  /// What a row stands for.
  enum class row_kind {
    scope,    ///< a scope, or `[outside any scope]` (the launches outside every scope)
    kernel,   ///< a kernel within the scope above it
    idle,     ///< the accounting's idle time (`[device idle]` or `[stream idle]`)
    overlap,  ///< time kernels ran at once, counted twice above: a negative total
  };
  row_kind kind = row_kind::scope;
  /// The names from the top-level row down to this one: scope names, then a kernel's full name.
  /// `[outside any scope]`, `[device idle]` (`[device idle: unknown, lengths only]` when no kernel
  /// has a place on the timeline), `[stream idle]` and `[overlap, counted twice above]` name the
  /// rows that are not scopes.
  std::vector<std::string> path;
  /// Launches under the row, and of those the timed ones and the dry runs (as summary_node).
  std::size_t launches = 0;
  std::size_t timed_launches = 0;
  std::size_t dry_run_launches = 0;
  /// Time of kernels launched directly in the row's scope (a kernel's own time), and of everything
  /// under it, hidden rows included.
  std::chrono::nanoseconds self{0};
  std::chrono::nanoseconds total{0};
  /// Whether the row has a time: a timed launch under it, or, for idle, kernels on a timeline.
  bool timed = false;
  /// The row's share of the window in tenths of a percent, as the table shows it (by largest
  /// remainder, adding up to its parent's); none when the window is empty or the row has no time.
  std::optional<std::int64_t> share_tenths;
  /// How the row's time was measured.
  timing_methods methods;
  /// Whether rows under it were left out (tree_options::depth).
  bool folded = false;
};

/// The tree's rows in the order write_tree shows them (tree_options::order and ::depth; ::format
/// and ::kernel_names play no part: paths hold full names): every scope and kernel row, the
/// launches outside any scope, idle time and overlap, whose totals add up to the window of
/// tree_options::accounting. The total row is not one of them. Thread safety: a pure function.
std::vector<tree_row> build_tree_rows(const pass_summary& summary, const tree_options& options = {});

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
/// Each time is written in the unit that shows it with three significant figures (`412 us`,
/// `1.23 ms`: a small row of a long pass stays readable), and shares add up: the
/// top-level rows' shares to the total's 100.0%, and each row's children's shares to its own (by
/// largest remainder, so a nested share can differ from its exact value by up to a tenth of a
/// percent per level). The profiling logger's summary follows the same rules.
///
/// As CSV (`options.format`), the header line is `path,kind,launches,self_ns,total_ns,share`, then a
/// line per build_tree_rows row: its path joined with `/`, its kind (`scope`, `kernel`, `idle`,
/// `overlap`), and its share of the window as a fraction; as JSON, an object with `"format":
/// "launchwatch-tree"`, the window (`window_ns`, `accounting`), `launches`, and `rows` each with
/// `path` as a list of names, `kind`, `launches`, `timed_launches`, `dry_run_launches`, `self_ns`,
/// `total_ns` and `share`. Neither has the header lines or the devices. Thread safety: reads only
/// its arguments.
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
  /// What the pass being written left out before it reached the writer: a trace prefix's launches
  /// and scope intervals that are only in the summary (attribution::collect_bounded). Said in the
  /// trace's metadata and host process name beside what `max_events` dropped; all zero (the
  /// default) for a whole pass.
  prefix_left_out beyond_prefix;
};

/// What write_chrome_trace wrote, so a program can say when a capped trace left events out.
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
/// With `options.beyond_prefix` not empty, the host process's name says how many later launches
/// and scope intervals are only in the summary, and the same metadata event carries them
/// (`launches_beyond_prefix`, `scope_intervals_beyond_prefix`, `prefix_ends_us`). That event,
/// when written, is on a line of its own among the first metadata lines (after each process's
/// name and sort index), so a reader can find it without parsing the whole trace; its arguments
/// always include `events` (written) and `dropped_events` (0 when the cap dropped nothing).
trace_stats write_chrome_trace(std::ostream& out, const pass_record& pass,
                               const trace_options& options = {});

}  // namespace launchwatch
