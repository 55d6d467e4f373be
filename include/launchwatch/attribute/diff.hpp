// Comparing two summaries of the same program, scope by scope and kernel by kernel: what a team's
// CI needs to catch a change that launches more kernels or spends more device time.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <launchwatch/attribute/summary.hpp>
#include <launchwatch/kernel_name.hpp>

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

/// Whether `row` grew by more than `percent` percent of its base value, in launches or in device
/// time (time only when both sides were timed). A new row grew past any threshold (from nothing);
/// a vanished row never grew. Precondition: percent >= 0.
bool grew_past(const diff_row& row, double percent);

/// How a comparison is written.
struct diff_options {
  /// How much of each kernel's name is shown.
  name_format kernel_names = name_format::balanced;
  /// When set, rows that grew past this percentage are marked, and a last line counts them.
  std::optional<double> fail_above;
};

/// Writes the comparison as a table: per row, launches in the base and the new summary and their
/// change, device time likewise, and the time's change in percent (`new` and `gone` for rows in
/// one summary only). Times in one unit, by the rules of the tree table. Thread safety: reads only
/// its arguments.
void write_diff(std::ostream& out, const summary_diff& diff, const diff_options& options = {});

}  // namespace launchwatch
