// The kernel table: one row per kernel over every scope it ran in, hottest first. The flat view
// nsys's `cuda_gpu_kern_sum` and torch's `key_averages()` give, drawn from a pass_summary.
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

/// One kernel, by its full name, over every scope (and every process of a merged summary) it was
/// launched in.
struct kernel_row {
  /// The kernel's full name (shortened only when written).
  std::string name;
  /// Its launches, and of those the timed ones and the dry runs.
  std::size_t launches = 0;
  std::size_t timed_launches = 0;
  std::size_t dry_run_launches = 0;
  /// The timed launches' time together.
  std::chrono::nanoseconds total{0};
  /// The shortest and the longest timed launch; none when no launch was timed, or when a row it
  /// was drawn from has timed launches but no min and max (a summary.json written before they were
  /// recorded), since the true ones are then unknown.
  std::optional<std::chrono::nanoseconds> min_time;
  std::optional<std::chrono::nanoseconds> max_time;
  /// How its time was measured.
  timing_methods methods;

  /// `total` over the timed launches, rounded to the nearest nanosecond; none when none was timed.
  std::optional<std::chrono::nanoseconds> average() const;

  friend bool operator==(const kernel_row&, const kernel_row&) = default;
};

/// A pass's kernels, a row each.
struct kernel_table {
  /// By total time, largest first; then more launches first; then by name.
  std::vector<kernel_row> rows;
  /// The rows' totals added up: the table's 100% (each kernel counted whole where kernels ran at
  /// once, so it is the summary's kernel_time, not its window).
  std::chrono::nanoseconds kernel_time{0};
  /// Every launch, and whether any was timed (else only counts mean anything).
  std::size_t launches = 0;
  bool timed = false;

  friend bool operator==(const kernel_table&, const kernel_table&) = default;
};

/// The kernel table of `summary`: its kernel rows (summary_node of kind kernel, in every scope and
/// outside any) gathered by full name, counts and times added, min and max the extremes of theirs.
/// Thread safety: a pure function.
kernel_table build_kernel_table(const pass_summary& summary);

/// How the kernel table is written.
struct kernel_table_options {
  /// How much of each kernel's name is shown (in every format).
  name_format kernel_names = name_format::balanced;
  /// A table for people, CSV or JSON: which writer write_kernel_table and
  /// make_kernel_table_writer pick (the writer classes ignore it: the class is the format).
  report_format format = report_format::table;
};

/// The kernel table for people (`kernels`, file `kernels.txt`): a header line (kernels, launches,
/// the 100%), a blank line, then a row per kernel with `launches` (dry runs and untimed launches
/// said as in the tree), `total`, `avg`, `min`, `max` (times by the tree's rules; `-` where
/// unknown) and `share` of the kernel time (by largest remainder, adding up to 100.0%), and a
/// total row; a summary without timing shows launches only.
class kernels_table_writer final : public report_writer<pass_summary> {
 public:
  static constexpr std::string_view default_file_name = "kernels.txt";

  explicit kernels_table_writer(const kernel_table_options& options = {});

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;

 private:
  kernel_table_options options_;
};

/// The kernel table as CSV (`kernels-csv`, file `kernels.csv`): the header
/// `kernel,count,total_ns,avg_ns,min_ns,max_ns,share`, then a line per kernel: integer
/// nanoseconds, `share` a fraction of the kernel time (0.25 for a quarter), an empty cell for what
/// is unknown, no total line.
class kernels_csv_writer final : public report_writer<pass_summary> {
 public:
  static constexpr std::string_view default_file_name = "kernels.csv";

  explicit kernels_csv_writer(const kernel_table_options& options = {});

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;

 private:
  kernel_table_options options_;
};

/// The kernel table as JSON (`kernels-json`, file `kernels.json`): an object with `"format":
/// "launchwatch-kernels"`, `kernel_ns`, `launches` and `rows`, each with `kernel`, `count`,
/// `timed_count`, `dry_run_count`, `total_ns`, `avg_ns`, `min_ns`, `max_ns` and `share` (`null`
/// when unknown).
class kernels_json_writer final : public report_writer<pass_summary> {
 public:
  static constexpr std::string_view default_file_name = "kernels.json";

  explicit kernels_json_writer(const kernel_table_options& options = {});

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;

 private:
  kernel_table_options options_;
};

/// The kernel table's writer for `options.format`: kernels_table_writer, kernels_csv_writer or
/// kernels_json_writer.
std::unique_ptr<report_writer<pass_summary>> make_kernel_table_writer(
    const kernel_table_options& options = {});

/// Writes build_kernel_table(summary) in `options.format` (make_kernel_table_writer(options));
/// see the writer classes for each format. Thread safety: reads only its arguments.
void write_kernel_table(std::ostream& out, const pass_summary& summary,
                        const kernel_table_options& options = {});

}  // namespace launchwatch
