// The tree report: where a pass's device time went, by scope and kernel, adding up to 100% of its
// window; as a table for people (tree_table_writer), CSV (tree_csv_writer) or JSON
// (tree_json_writer).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <launchwatch/kernel_name.hpp>
#include <launchwatch/report/report_writer.hpp>
#include <launchwatch/report/summary.hpp>

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
  /// How many levels of rows are shown, top-level rows being level 1; 0 shows them all. A row at
  /// the last level shown keeps its whole total (its hidden rows are folded into it).
  std::size_t depth = 0;
  /// A table for people, CSV or JSON: which writer write_tree and make_tree_writer pick. The
  /// writer classes ignore it (the class is the format).
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

/// The tree as a table for people (`tree`, file `tree.txt`).
///
/// One row per scope, with its kernels and child scopes indented under it (launches, with dry runs
/// and launches without time counted apart; self time, total time, share of the pass), in the
/// order `tree_options::order` says; then a row for launches outside any scope, a row for idle
/// time, a row subtracting overlap when kernels ran at once, and a total row. The rows' totals add
/// up to the window of the accounting `tree_options::accounting` names, so the table accounts for
/// 100% of it; the header says how the time was measured (by method, and whether kernels have
/// their start and end or only a length), what the 100% is made of, and what was lost, and when
/// measurement methods were mixed each row says which it holds. Under the table, a second one
/// gives each device's window, kernel time, idle time and overlap with its streams' under it, so
/// the per-device and per-stream views stand side by side.
///
/// Each time is written in the unit that shows it with three significant figures (`412 us`,
/// `1.23 ms`: a small row of a long pass stays readable), and shares add up: the top-level rows'
/// shares to the total's 100.0%, and each row's children's shares to its own (by largest
/// remainder, so a nested share can differ from its exact value by up to a tenth of a percent per
/// level). The profiling logger's summary follows the same rules.
class tree_table_writer final : public report_writer<pass_summary> {
 public:
  static constexpr std::string_view default_file_name = "tree.txt";

  explicit tree_table_writer(const tree_options& options = {});

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;

 private:
  tree_options options_;
};

/// The tree as CSV (`tree-csv`, file `tree.csv`): the header line
/// `path,kind,launches,self_ns,total_ns,share`, then a line per build_tree_rows row: its path
/// joined with `/`, its kind (`scope`, `kernel`, `idle`, `overlap`), and its share of the window as
/// a fraction. No header lines and no devices, as in the JSON.
class tree_csv_writer final : public report_writer<pass_summary> {
 public:
  static constexpr std::string_view default_file_name = "tree.csv";

  explicit tree_csv_writer(const tree_options& options = {});

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;

 private:
  tree_options options_;
};

/// The tree as JSON (`tree-json`, file `tree.json`): an object with `"format": "launchwatch-tree"`,
/// the window (`window_ns`, `accounting`), `launches`, `timed_launches` and `rows`, each with
/// `path` as a list of names, `kind`, `launches`, `timed_launches`, `dry_run_launches`, `self_ns`,
/// `total_ns` and `share` (`folded` when rows under it were left out).
class tree_json_writer final : public report_writer<pass_summary> {
 public:
  static constexpr std::string_view default_file_name = "tree.json";

  explicit tree_json_writer(const tree_options& options = {});

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;

 private:
  tree_options options_;
};

/// The tree's writer for `options.format`: tree_table_writer, tree_csv_writer or tree_json_writer.
std::unique_ptr<report_writer<pass_summary>> make_tree_writer(const tree_options& options = {});

/// Writes the tree in `options.format` (make_tree_writer(options)); see the writer classes for
/// each format. Thread safety: reads only its arguments.
void write_tree(std::ostream& out, const pass_summary& summary, const tree_options& options = {});

/// The same report as a string.
std::string render_tree(const pass_summary& summary, const tree_options& options = {});

}  // namespace launchwatch
