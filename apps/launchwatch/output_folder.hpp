// The folder `launchwatch demo` and `launchwatch run` write their report into (`--out`): claimed
// before any work, so a user's own files there are never replaced or deleted, and an earlier run's
// report is replaced only once the new one exists.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace launchwatch::cli {

/// The stamp a report folder carries: `DIR/.launchwatch-run`. Only a folder with it (or an empty
/// one) is written into without `--force`, and only in one with it is an earlier run's report
/// removed.
inline constexpr const char* output_stamp_name = ".launchwatch-run";

/// An output folder claimed for one run.
struct output_folder {
  std::filesystem::path path;
  /// When this run claimed it, on the folder's file system's clock (the stamp's modification time):
  /// a report file older than this is an earlier run's.
  std::filesystem::file_time_type claimed;
};

/// Claims `path` for a run's report: creates it, checks that a file can be created, written and
/// removed there, refuses it when it holds anything without the stamp (unless `force`), and writes
/// the stamp. Nothing already there is changed but the stamp. Throws std::runtime_error saying
/// which path, what was wrong and what to do (another folder with --out, or --force) when it cannot.
output_folder claim_output_folder(const std::filesystem::path& path, bool force);

/// Whether `file` was written after the folder was claimed (by this run, not an earlier one).
bool written_since_claimed(const output_folder& folder, const std::filesystem::path& file);

/// Removes what an earlier run left in the folder that this run did not replace: the report files
/// (summary.json, flame.folded, trace.json) older than the claim, the `processes/<label>/` report
/// folders of an earlier run (only those holding nothing but launchwatch's files), and the
/// temporary files of a write that was cut short. Call once this run's report exists. Anything
/// else is left as it is.
void remove_earlier_reports(const output_folder& folder);

}  // namespace launchwatch::cli
