// The one interface every report format is written through. A writer is one format with its
// options; it writes one input (a pass's summary, its record, a comparison of two summaries) to a
// stream. Modelled on nvbench's printer_base: the public `write` is the one entry, and each format
// is a class of its own that overrides `do_write`, with a golden test of its own.
#pragma once

#include <iosfwd>
#include <string_view>

namespace launchwatch {

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

/// A report format: its name, the file a report folder gives it, and how it writes its input.
///
/// `Input` is what the format reads: a pass_summary (the tree, the kernel table, folded stacks,
/// summary.json), a pass_record (the Chrome trace) or a summary_diff (a comparison). Each format
/// is a final class deriving from report_writer<Input>, constructed with its options
/// (tree_table_writer{tree_options}); the free functions (write_tree, write_chrome_trace, ...)
/// are thin wrappers over them.
///
/// Why an interface: what writes reports (report_files, `launchwatch report`) picks a writer and
/// writes through it without knowing each format, and a new format is one new class.
///
/// Thread safety: one thread at a time per writer (a format may keep what its last write did:
/// chrome_trace_writer::stats()); writers of their own on several threads are independent.
/// Neither copyable nor movable: held by reference or unique_ptr, never sliced.
template <class Input>
class report_writer {
 public:
  using input_type = Input;

  virtual ~report_writer() = default;
  report_writer(const report_writer&) = delete;
  report_writer& operator=(const report_writer&) = delete;

  /// The format's name (`tree`, `tree-csv`, `chrome-trace`, ...): stable, for messages and tests.
  std::string_view name() const noexcept { return name_; }

  /// The file's name when the report is saved in a folder (`summary.json`, `trace.json`).
  std::string_view file_name() const noexcept { return file_name_; }

  /// Writes `input` to `out`, whole: what the format's class documents. A failing stream is the
  /// caller's to check (report_files checks it); a format throws only what it documents.
  void write(std::ostream& out, const Input& input) { do_write(out, input); }

 protected:
  /// `name` and `file_name` must outlive the writer (string literals, in every format).
  constexpr report_writer(std::string_view name, std::string_view file_name) noexcept
      : name_{name}, file_name_{file_name} {}

  /// The format itself: writes `input` to `out`.
  virtual void do_write(std::ostream& out, const Input& input) = 0;

 private:
  std::string_view name_;
  std::string_view file_name_;
};

}  // namespace launchwatch
