// The report files a pass leaves in a folder: what `launchwatch demo` and `launchwatch run` write.
#pragma once

#include <filesystem>
#include <fstream>

#include <launchwatch/attribute/pass_record.hpp>
#include <launchwatch/attribute/render.hpp>
#include <launchwatch/attribute/summary.hpp>

namespace launchwatch {

/// `trace.json` (Chrome trace), `flame.folded` (folded stacks) and `summary.json` in one folder.
///
/// Opened before the work they report on, so a folder that cannot be written fails in a second
/// with its path and the reason, not after the pass with its results lost. Not thread-safe.
class report_files {
 public:
  /// Creates `folder` (and its parents) and opens the three files, emptied. Throws
  /// std::runtime_error naming the path and the reason when it cannot.
  explicit report_files(std::filesystem::path folder);

  /// Writes the pass into the three files and flushes them; what the trace writer left out when
  /// `trace.max_events` capped it is returned. A file whose write fails (a full disk) does not stop
  /// the others; then it throws std::runtime_error naming each such file and why. Call once.
  trace_stats write(const pass_record& pass, const pass_summary& summary, const trace_options& trace = {});

  /// The folder the files are in.
  const std::filesystem::path& folder() const noexcept { return folder_; }

 private:
  std::filesystem::path folder_;
  std::ofstream trace_;
  std::ofstream folded_;
  std::ofstream summary_;
};

}  // namespace launchwatch
