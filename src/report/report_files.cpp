// The report files of a pass (report_files.hpp).

#include <launchwatch/report/report_files.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>

#include <ext/stdio_filebuf.h>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

namespace launchwatch {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view partial_suffix = ".launchwatch-partial";

fs::path created(fs::path folder) {
  if (folder.empty()) {
    throw std::runtime_error{"the output folder is an empty path. Name one with --out."};
  }
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) {
    throw std::runtime_error{fmt::format("cannot create the output folder {}: {}. Choose another with --out.",
                                         folder.string(), error.message())};
  }
  return folder;
}

/// `.NAME.PID.launchwatch-partial` beside `path`: hidden, and unique to this process.
fs::path partial_name(const fs::path& path) {
  return path.parent_path() /
         fmt::format(".{}.{}{}", path.filename().string(), static_cast<long>(::getpid()), partial_suffix);
}

std::string reason(int error_number) {
  return error_number != 0 ? std::strerror(error_number) : "a write failed: is the disk full?";
}

/// Creates, writes, flushes and removes a probe file in `folder`: what writing the report needs.
void check_writable(const fs::path& folder) {
  const auto probe = partial_name(folder / "write-probe");
  const auto failed = write_file_replacing(probe, [](std::ostream& out) { out << "launchwatch\n"; });
  std::error_code ignored;
  fs::remove(probe, ignored);
  if (!failed.empty()) {
    throw std::runtime_error{fmt::format("cannot write into {}: {}. Choose another folder with --out.",
                                         folder.string(), failed)};
  }
}

/// Writes `input` through `writer` into `folder`, under the writer's file name, whole or not at
/// all (write_file_replacing); a failure is added to `failed` (path and reason) rather than thrown,
/// so one file's failure stops none of the others.
template <class Input>
void write_report_file(const fs::path& folder, report_writer<Input>& writer, const Input& input,
                       durability wanted, std::string& failed) {
  const auto path = folder / writer.file_name();
  const auto why =
      write_file_replacing(path, [&](std::ostream& out) { writer.write(out, input); }, wanted);
  if (!why.empty()) failed += fmt::format("{}{} ({})", failed.empty() ? "" : ", ", path.string(), why);
}

}  // namespace

std::string write_file_replacing(const fs::path& path, const std::function<void(std::ostream&)>& fill,
                                 durability wanted) {
  const auto partial = partial_name(path);
  ::unlink(partial.c_str());  // left by a killed process whose pid this one now has
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return reason(errno);
  int failure = 0;
  {
    // Owns `fd` from here and closes it when it goes (after the explicit close below, a no-op).
    __gnu_cxx::stdio_filebuf<char> buffer{fd, std::ios::out, 1 << 16};
    std::ostream out{&buffer};
    errno = 0;
    try {
      fill(out);
      out.flush();
    } catch (const std::exception&) {
      out.setstate(std::ios::badbit);
    }
    if (!out) failure = errno != 0 ? errno : EIO;
    // A network or full file system may report the failure only here.
    if (failure == 0 && wanted == durability::synced && ::fsync(fd) != 0 && errno != EINVAL) failure = errno;
    if (buffer.close() == nullptr && failure == 0) failure = errno != 0 ? errno : EIO;
  }
  if (failure == 0 && ::rename(partial.c_str(), path.c_str()) != 0) failure = errno;
  if (failure != 0) {
    ::unlink(partial.c_str());
    return reason(failure);
  }
  return {};
}

bool is_partial_report_file(std::string_view name) noexcept {
  return name.size() > partial_suffix.size() + 1 && name.front() == '.' && name.ends_with(partial_suffix);
}

report_files::report_files(fs::path folder) : folder_{created(std::move(folder))} { check_writable(folder_); }

trace_stats report_files::write(const pass_record& pass, const pass_summary& summary,
                                const trace_options& trace) {
  // In the order of `names`: summary.json first, the one file the other commands read.
  summary_json_writer summary_file;
  folded_writer flame_graph;
  chrome_trace_writer trace_file{trace};
  std::string failed;
  write_report_file(folder_, summary_file, summary, durability::synced, failed);
  write_report_file(folder_, flame_graph, summary, durability::synced, failed);
  // Not waited for: a capped trace is still up to hundreds of megabytes, seconds of disk at exit.
  write_report_file(folder_, trace_file, pass, durability::cached, failed);
  if (!failed.empty()) {
    throw std::runtime_error{fmt::format(
        "could not finish writing {}; a file not written keeps its previous version, if it had one",
        failed)};
  }
  return trace_file.stats();
}

void report_files::write_summary(const pass_summary& summary) {
  summary_json_writer summary_file;
  std::string failed;
  write_report_file(folder_, summary_file, summary, durability::synced, failed);
  if (!failed.empty()) {
    throw std::runtime_error{
        fmt::format("could not finish writing {}; its previous version is kept", failed)};
  }
}

}  // namespace launchwatch
