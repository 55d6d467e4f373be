// The report files of a pass (report_files.hpp).

#include <launchwatch/attribute/report_files.hpp>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include <fmt/format.h>

namespace launchwatch {
namespace {

namespace fs = std::filesystem;

std::ofstream open_output(const fs::path& path) {
  std::ofstream file{path, std::ios::out | std::ios::trunc};
  if (!file) {
    throw std::runtime_error{fmt::format("cannot write {}: {}. Choose another folder with --out.",
                                         path.string(), std::strerror(errno))};
  }
  return file;
}

fs::path created(fs::path folder) {
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) {
    throw std::runtime_error{fmt::format("cannot create the output folder {}: {}. Choose another with --out.",
                                         folder.string(), error.message())};
  }
  return folder;
}

}  // namespace

report_files::report_files(fs::path folder)
    : folder_{created(std::move(folder))},
      trace_{open_output(folder_ / "trace.json")},
      folded_{open_output(folder_ / "flame.folded")},
      summary_{open_output(folder_ / "summary.json")} {}

trace_stats report_files::write(const pass_record& pass, const pass_summary& summary, const trace_options& trace) {
  // Each file is checked right after it is written, while errno still says why it failed, and a
  // failure stops none of the others.
  std::string failed;
  const auto finish = [&](std::ofstream& file, const char* name) {
    file.flush();
    if (file) return;
    failed += fmt::format("{}{} ({})", failed.empty() ? "" : ", ", (folder_ / name).string(),
                          errno != 0 ? std::strerror(errno) : "a write failed: is the disk full?");
  };
  errno = 0;
  const auto written = write_chrome_trace(trace_, pass, trace);
  finish(trace_, "trace.json");
  errno = 0;
  write_folded(folded_, summary);
  finish(folded_, "flame.folded");
  errno = 0;
  write_summary_json(summary_, summary);
  finish(summary_, "summary.json");
  if (!failed.empty()) throw std::runtime_error{fmt::format("could not finish writing {}", failed)};
  return written;
}

}  // namespace launchwatch
