// The output folder of `demo` and `run` (output_folder.hpp).

#include "output_folder.hpp"

#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include <launchwatch/report/report_files.hpp>

namespace launchwatch::cli {
namespace {

namespace fs = std::filesystem;

bool is_report_file(std::string_view name) {
  return std::find(report_files::names.begin(), report_files::names.end(), name) != report_files::names.end() ||
         is_partial_report_file(name);
}

bool older_than_claim(const output_folder& folder, const fs::path& file) {
  std::error_code error;
  const auto written = fs::last_write_time(file, error);
  return !error && written < folder.claimed;
}

/// Removes an earlier run's `processes/<label>/` folder: only when everything in it is a report
/// file of launchwatch's, none written by this run.
void remove_earlier_process_folder(const output_folder& folder, const fs::path& process) {
  if (!older_than_claim(folder, process)) return;  // a process of this run, killed before its report
  std::error_code error;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator{process, error}) {
    if (!entry.is_regular_file(error) || entry.is_symlink(error) || !is_report_file(entry.path().filename().string()) ||
        !older_than_claim(folder, entry.path())) {
      return;
    }
    files.push_back(entry.path());
  }
  if (error) return;
  for (const auto& file : files) fs::remove(file, error);
  fs::remove(process, error);  // only if it is empty now
}

}  // namespace

output_folder claim_output_folder(const fs::path& path, bool force) {
  // report_files creates the folder and checks that it can be written: the same check the
  // injection's report writer makes, before the program starts.
  const report_files writable{path};
  std::error_code error;
  const bool stamped = fs::exists(path / output_stamp_name, error);
  const bool empty = fs::is_empty(path, error);
  if (!stamped && !empty && !force) {
    throw std::runtime_error{fmt::format(
        "{} holds files that launchwatch did not write (it has no {} stamp), so no report is written "
        "there and none of them is replaced or removed. Choose a new or empty folder with --out, or "
        "pass --force to write into this one (its trace.json, flame.folded and summary.json are then "
        "replaced; nothing else is touched).",
        path.string(), output_stamp_name)};
  }
  const auto stamp = path / output_stamp_name;
  const auto failed = write_file_replacing(stamp, [](std::ostream& out) {
    out << "This folder holds launchwatch's report files (launchwatch run, launchwatch demo).\n"
           "A later run replaces summary.json, flame.folded and trace.json here, and removes the\n"
           "processes/ report folders an earlier run left; nothing else is touched. Remove this\n"
           "file and launchwatch will not write here again without --force.\n";
  });
  if (!failed.empty()) {
    throw std::runtime_error{fmt::format("cannot write {}: {}. Choose another folder with --out.", stamp.string(), failed)};
  }
  const auto claimed = fs::last_write_time(stamp, error);
  if (error) {
    throw std::runtime_error{fmt::format("cannot read the time of {}: {}", stamp.string(), error.message())};
  }
  return {path, claimed};
}

bool written_since_claimed(const output_folder& folder, const fs::path& file) {
  std::error_code error;
  const auto written = fs::last_write_time(file, error);
  return !error && written >= folder.claimed;
}

void remove_earlier_reports(const output_folder& folder) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator{folder.path, error}) {
    const auto name = entry.path().filename().string();
    if (is_report_file(name) && !entry.is_directory(error) && older_than_claim(folder, entry.path())) {
      fs::remove(entry.path(), error);
    }
  }
  const auto processes = folder.path / "processes";
  if (fs::is_symlink(processes, error) || !fs::is_directory(processes, error)) return;
  for (const auto& entry : fs::directory_iterator{processes, error}) {
    if (entry.is_directory(error) && !entry.is_symlink(error)) remove_earlier_process_folder(folder, entry.path());
  }
  fs::remove(processes, error);  // only if it is empty now
}

}  // namespace launchwatch::cli
