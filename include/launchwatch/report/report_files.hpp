// The report files a pass leaves in a folder: what `launchwatch demo` and `launchwatch run` write.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string_view>

#include <launchwatch/report/chrome_trace.hpp>
#include <launchwatch/report/folded.hpp>
#include <launchwatch/report/pass_record.hpp>
#include <launchwatch/report/report_writer.hpp>
#include <launchwatch/report/summary.hpp>
#include <launchwatch/report/summary_json.hpp>

namespace launchwatch {

/// `summary.json`, `flame.folded` (folded stacks) and `trace.json` (Chrome trace) in one folder.
///
/// Nothing of an earlier report is touched until its replacement is whole: each file is written to
/// a temporary name in the folder (`.NAME.PID.launchwatch-partial`) and only then renamed over the
/// old one (summary.json and flame.folded flushed to the disk first; the trace, up to hundreds of
/// megabytes, is not waited for: durability::cached), so a run that is interrupted, killed or out of disk space leaves
/// every file either as it was or new, never empty or cut short. `summary.json`, the one file
/// `launchwatch report`, `--diff` and `--merge` read, goes first, so it is the last to lose the space
/// a full disk has left. A name that is a symbolic link is replaced as a link (the file it pointed
/// to is left alone), never written through.
///
/// The folder is created and checked for writing (a probe file made, written and removed) before the
/// work the files report on, so a folder that cannot be written fails in a second with its path and
/// the reason, not after the pass with its results lost. Not thread-safe.
class report_files {
 public:
  /// The files' names, in the order `write` writes them.
  static constexpr std::array<std::string_view, 3> names{summary_json_writer::default_file_name,
                                                          folded_writer::default_file_name,
                                                          chrome_trace_writer::default_file_name};

  /// Creates `folder` (and its parents) and checks that a file can be created, written and removed
  /// in it; no file already there is touched. Throws std::runtime_error naming the path and the
  /// reason when it cannot.
  explicit report_files(std::filesystem::path folder);

  /// Writes the pass into the three files, in the order of `names`, each through its format's
  /// writer (summary_json_writer, folded_writer, chrome_trace_writer); what the trace writer left
  /// out when `trace.max_events` capped it is returned. A file whose write fails (a full disk)
  /// keeps its previous version and does not stop the others; then it throws std::runtime_error
  /// naming each such file and why.
  trace_stats write(const pass_record& pass, const pass_summary& summary, const trace_options& trace = {});

  /// Writes `summary.json` alone, the same way: for a summary rewritten while a pass runs (a
  /// snapshot), so a job killed later keeps what it had. Throws std::runtime_error naming the file
  /// and why when it cannot, the previous version kept.
  void write_summary(const pass_summary& summary);

  /// The folder the files are in.
  const std::filesystem::path& folder() const noexcept { return folder_; }

 private:
  std::filesystem::path folder_;
};

/// Whether write_file_replacing waits for the file to reach the disk before it is renamed.
enum class durability {
  /// fsync first: the file survives a machine that crashes or loses power just after.
  synced,
  /// Renamed once written to the page cache: as whole against a killed process or a full disk, but
  /// not against a power loss, and no wait for the disk. For files too large to wait for.
  cached,
};

/// Writes `path` through `fill` without ever leaving it partly written: `fill` writes into a
/// temporary file beside `path`, which is renamed over `path` only when everything was written
/// (and, `synced`, has reached the disk). Returns an empty string when it was, else what went
/// wrong ("No space left on device"), with the temporary file removed and `path` as it was.
/// Thread safety: distinct paths from distinct threads.
std::string write_file_replacing(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill,
                                 durability wanted = durability::synced);

/// Whether `name` is one of the temporary files write_file_replacing leaves behind when its process
/// is killed while writing (`.NAME.PID.launchwatch-partial`): launchwatch's own, safe to remove.
bool is_partial_report_file(std::string_view name) noexcept;

}  // namespace launchwatch
