// summary.json: a pass_summary written as JSON for programs and regression tests, and read back
// (`launchwatch report`, `--diff`, `--merge` read it).
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string_view>

#include <launchwatch/report/report_writer.hpp>
#include <launchwatch/report/summary.hpp>

namespace launchwatch {

/// The version of the summary JSON format this build writes, and the only one it reads.
///
/// Version 2 added `measurements` and each row's `dry_run_launches`, which the tree's header and
/// launches column need; version 3 the per-device accounting (`device_window_ns`,
/// `device_idle_ns`, `device_overlap_ns`, `devices`, `out_of_order_kernels`) and rows in the order
/// first issued. Older summaries are refused with a message saying to write them again.
inline constexpr int summary_format_version = 3;

/// How deep rows (scopes and kernels) may nest in a summary file that `read_summary_json` reads:
/// 256 levels below a top-level row.
///
/// Reading a scope tree is recursive, so a crafted file nested a million levels deep would overflow
/// the stack of `launchwatch report`; a bound turns it into a clear error instead. Real scope trees
/// are a handful of levels deep (the demo's are three), so the bound is generous. The JSON text
/// as a whole may nest `summary_max_json_depth` levels: two per scope (its object and its
/// `children` array) and a few for the summary around them.
inline constexpr std::size_t summary_max_scope_depth = 256;

/// How deep a summary file's JSON may nest at all, checked while it is parsed, before any of it is
/// read: a scope tree `summary_max_scope_depth` deep, plus the summary's own levels, plus slack.
inline constexpr std::size_t summary_max_json_depth = 2 * summary_max_scope_depth + 8;

/// A pass_summary as JSON (`summary-json`, file `summary.json`), so a program or a regression test
/// can read a pass without parsing a table, and `read_summary_json` gives back an equal summary.
///
/// The format: an object with `"format": "launchwatch-summary"` and `"version"` (this build's
/// summary_format_version), then pass_summary's fields, each under its own name except where said:
/// `timing` as "none"/"resolved"/"deferred"; `methods` (and every row's) as a list of
/// "device"/"system"; `measurements` as an object of its four counts; `launches`,
/// `timed_launches`, `dry_run_launches`, `captured_launches`, `host_threads`; `lost` as an object
/// of its three counts; the times as integer nanoseconds named with a `_ns` suffix, `kernel_time`
/// shortened: `window_ns`, `kernel_ns`, `idle_ns`, `overlap_ns`, `unplaced_ns`; `scopes`; `outside`
/// written as `outside_scopes`; `streams`; `device_window_ns`, `device_idle_ns`,
/// `device_overlap_ns`; `devices`; `out_of_order_kernels`; `process`, and a stream's and a
/// device's `process`, only when not empty (older readers ignore them). A row (a summary_node)
/// has `kind` ("scope"/"kernel"), `name`, `launches`, `timed_launches`, `dry_run_launches`,
/// `self_ns`, `total_ns`, `methods`, and for a scope `children`; a kernel row with a timed launch
/// also has `min_ns` and `max_ns` (its min_time and max_time; optional, so a summary written
/// before them still reads, without them). A stream has `backend`, `device` and `stream` (its
/// stream_info, flat), `launches`, `timed_launches`, `window_ns`, `kernel_ns` (its
/// `kernel_time`), `idle_ns`, `overlap_ns`, `unplaced_ns`. A device has `backend`, `device`, `streams`, `launches`,
/// `timed_launches`, `window_ns`, `kernel_ns`, `idle_ns`, `overlap_ns`, `unplaced_ns`. Kernel names
/// are full names. docs/report_format.md has an example.
/// A pass whose rows nest deeper than `summary_max_scope_depth` is written in full, but
/// `read_summary_json` refuses it.
class summary_json_writer final : public report_writer<pass_summary> {
 public:
  /// The file a report folder gives the summary (report_files): what `launchwatch report` reads.
  static constexpr std::string_view default_file_name = "summary.json";

  summary_json_writer();

 protected:
  void do_write(std::ostream& out, const pass_summary& summary) override;
};

/// Writes `summary` as JSON (summary_json_writer). Thread safety: reads only its arguments.
void write_summary_json(std::ostream& out, const pass_summary& summary);

/// Reads a summary written by `write_summary_json`.
///
/// `source` names the input in error messages (a file name). Throws summary_error naming the
/// source, the JSON location (`/scopes/0/launches`) and what was expected, for text that is not
/// JSON, not a launchwatch summary, of another format version than this build's, or with a field
/// missing or of the wrong type, or nested deeper than `summary_max_json_depth` (JSON) or
/// `summary_max_scope_depth` (scopes). Fields it does not know are ignored. Nesting is bounded
/// while the text is parsed, so no input, however deep, can exhaust the stack.
pass_summary read_summary_json(std::istream& in, std::string_view source = "summary");

/// Reads the summary in file `path`; throws summary_error when it cannot be opened or read.
pass_summary load_summary(const std::filesystem::path& path);

}  // namespace launchwatch
