// The report files of a pass (report_files.hpp).

#include <launchwatch/attribute/report_files.hpp>

#include <cerrno>
#include <cstring>
#include <stdexcept>
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
  const auto written = write_chrome_trace(trace_, pass, trace);
  write_folded(folded_, summary);
  write_summary_json(summary_, summary);
  for (auto* file : {&trace_, &folded_, &summary_}) {
    file->flush();
    if (!*file) throw std::runtime_error{"writing the output files failed (disk full?)"};
  }
  return written;
}

}  // namespace launchwatch
