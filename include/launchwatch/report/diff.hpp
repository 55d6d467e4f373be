// Comparing two summaries of the same program, scope by scope and kernel by kernel: what a team's
// CI needs to catch a change that launches more kernels or spends more device time.
#pragma once

#include <chrono>
#include <cstddef>
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

/// What one row held in one of the two summaries.
struct diff_side {
  /// Launches under the row.
  std::size_t launches = 0;
  /// Device time under the row (its total).
  std::chrono::nanoseconds time{0};
  /// Whether any launch under it was timed: without, `time` means nothing and is not compared.
  bool timed = false;

  friend bool operator==(const diff_side&, const diff_side&) = default;
};

/// One row of a comparison: a scope or a kernel at one scope path, in either summary or both.
///
/// Rows are matched by their path (the scope names from the top, then the kernel's full name), so a
/// kernel is compared with the same kernel in the same scope, wherever the rows sit in each tree.
struct diff_row {
  summary_node::node_kind kind = summary_node::node_kind::scope;
  /// The scope's name or the kernel's full name; "[outside any scope]" for the launches outside.
  std::string name;
  /// 0 for a top-level row, one more per level.
  std::size_t depth = 0;
  /// The row in the base summary; none when the row is new.
  std::optional<diff_side> base;
  /// The row in the new summary; none when the row vanished.
  std::optional<diff_side> current;

  friend bool operator==(const diff_row&, const diff_row&) = default;
};

/// Two summaries compared: every scope and kernel row of either, and their totals.
struct summary_diff {
  /// Rows in the new summary's order, each scope followed by its children; rows only in the base
  /// come after the rows they sat among there.
  std::vector<diff_row> rows;
  /// All launches and all kernel time, as a row named "total".
  diff_row total;

  friend bool operator==(const summary_diff&, const summary_diff&) = default;
};

/// Compares `base` (the reference, a saved baseline) with `current`. Thread safety: a pure function.
summary_diff diff_summaries(const pass_summary& base, const pass_summary& current);

/// What a threshold on a comparison looks at (`launchwatch report --diff --fail-on`).
enum class growth_gate {
  /// Launches or device time, either (the default).
  any,
  /// Launch counts only: they are exact from run to run, so any threshold holds on a busy machine.
  count,
  /// Device time only (rows timed on both sides): it varies between runs, so leave room for noise.
  time,
};

/// Whether `row` grew by more than `percent` percent of its base value in what `gate` looks at:
/// launches, device time (only when both sides were timed), or either. A new row grew past any
/// threshold (from nothing), except under growth_gate::time when it has no time; a vanished row
/// never grew. Precondition: percent >= 0 and finite.
bool grew_past(const diff_row& row, double percent, growth_gate gate = growth_gate::any);

/// How a comparison is written.
struct diff_options {
  /// How much of each kernel's name is shown.
  name_format kernel_names = name_format::balanced;
  /// When set, rows that grew past this percentage (in what `fail_on` looks at) are marked, and a
  /// last line counts them.
  std::optional<double> fail_above;
  /// What `fail_above` looks at.
  growth_gate fail_on = growth_gate::any;
  /// A table for people, CSV or JSON: which writer write_diff and make_diff_writer pick (the
  /// writer classes ignore it: the class is the format).
  report_format format = report_format::table;
};

/// Whether any row of `diff`, its total included, grew past `options.fail_above` (false when it
/// is not set): what makes `launchwatch report --diff` exit 4.
bool any_grew_past(const summary_diff& diff, const diff_options& options);

/// A comparison as a table for people (`diff`, file `diff.txt`): per row, launches in the base and
/// the new summary and their change, device time likewise, and the time's change in percent (`new`
/// and `gone` for rows in one summary only). Times by the rules of the tree table (each in the unit
/// that shows three significant figures). With `fail_above`, rows that grew past it are marked and
/// a last line counts them.
class diff_table_writer final : public report_writer<summary_diff> {
 public:
  static constexpr std::string_view default_file_name = "diff.txt";

  explicit diff_table_writer(const diff_options& options = {});

 protected:
  void do_write(std::ostream& out, const summary_diff& diff) override;

 private:
  diff_options options_;
};

/// A comparison as CSV (`diff-csv`, file `diff.csv`): the header
/// `path,kind,base_launches,new_launches,base_ns,new_ns,grew`, then a line per row and the total
/// (path `total`): the path's names joined with `/`, empty cells for a side the row is missing from
/// or that has no time, `grew` `1` or `0` (empty without `fail_above`).
class diff_csv_writer final : public report_writer<summary_diff> {
 public:
  static constexpr std::string_view default_file_name = "diff.csv";

  explicit diff_csv_writer(const diff_options& options = {});

 protected:
  void do_write(std::ostream& out, const summary_diff& diff) override;

 private:
  diff_options options_;
};

/// A comparison as JSON (`diff-json`, file `diff.json`): an object with `"format":
/// "launchwatch-diff"` (and `fail_above` when set) and `rows` (the total last), each with `path`
/// (a list), `kind`, `base` and `new` (`null`, or `launches` and `total_ns`, `null` when untimed)
/// and, with `fail_above`, `grew`.
class diff_json_writer final : public report_writer<summary_diff> {
 public:
  static constexpr std::string_view default_file_name = "diff.json";

  explicit diff_json_writer(const diff_options& options = {});

 protected:
  void do_write(std::ostream& out, const summary_diff& diff) override;

 private:
  diff_options options_;
};

/// The comparison's writer for `options.format`: diff_table_writer, diff_csv_writer or
/// diff_json_writer.
std::unique_ptr<report_writer<summary_diff>> make_diff_writer(const diff_options& options = {});

/// Writes the comparison in `options.format` (make_diff_writer(options)); see the writer classes
/// for each format. Thread safety: reads only its arguments.
void write_diff(std::ostream& out, const summary_diff& diff, const diff_options& options = {});

}  // namespace launchwatch
