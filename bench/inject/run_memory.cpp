// What `launchwatch run` costs over a long run: peak resident memory and the time from the
// program's end to its report written, at two lengths side by side in one run (review 2026-12-01b
// finding 7: memory grew with every range, and the exit took seconds).
//
// Rows, each in a child process of its own so its peak (wait4's ru_maxrss: the largest of the
// child and the processes it waited for) is its own:
// - `ranges alone`: the program of N NVTX push/pop steps (`step/forward`), unwatched: the floor.
// - `launchwatch run -- ranges`: the same program under the real `launchwatch run` (its injection
//   loaded through NVTX_INJECTION64_PATH); the time is from the program's loop ending (it writes
//   the instant) to `launchwatch run` having written the files and printed the report. On a CPU
//   build no launch is seen here (a program's own launchwatch copy is not the injection's, and CUDA
//   kernels need a GPU), so:
// - `session in one process, a launch a step`: the session's pieces in this program: NVTX ranges
//   through the injection's handlers (NVTX's static injection hook, static_injection.cpp), the attribution and the
//   trace options `run` uses (run_session.hpp), one launch a step through the launch path's hooks
//   with a host-clock measurement, and at the end what the session does at exit: collect_bounded
//   and report_files. The time is from the loop's end to the files written.
//
//   launchwatch_run_memory_bench [STEPS...]   (default: 1000000 10000000)

#include <nvtx3/nvToolsExt.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/launch_path.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/report/report_files.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "run_session.hpp"

namespace {

namespace fs = std::filesystem;
using namespace launchwatch;

long long monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

struct result {
  long peak_kib = 0;
  double report_s = -1;  // none for the unwatched program
  double trace_mb = 0;
  bool ok = false;
};

/// Runs `argv` in a child; its peak and exit status.
result run_child(std::vector<std::string> words, const fs::path& end_file) {
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  const long long ended = monotonic_ns();
  result r;
  r.peak_kib = usage.ru_maxrss;
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::ifstream in{end_file};
  long long loop_end = 0;
  if (in >> loop_end) r.report_s = static_cast<double>(ended - loop_end) / 1e9;
  return r;
}

/// The session's pieces in this process, a launch a step; writes the seconds from the loop's end
/// to the files written into `pipe_out`.
int session_row(long steps, const fs::path& out) {
  detail::run_settings settings;  // run's defaults: --trace-events 1000000
  settings.out = out;
  auto observer = std::make_shared<attribution>(detail::session_attribution_options(settings));
  report_files files{out};
  std::optional<launch_observation> watching{std::in_place, observer};
  for (long i = 0; i < steps; ++i) {
    nvtxRangePushA("step");
    nvtxRangePushA("forward");
    launch_info info;
    info.kernel = "forward_kernel";
    info.backend = "cpu";
    info.stream = 1;
    launch_path::notify_launch(info);
    if (launch_path::timing_wanted()) {
      const auto start = std::chrono::steady_clock::now();
      launch_path::notify_profiled(info.kernel, profile_duration::from_system_time(start, start));
    }
    nvtxRangePop();
    nvtxRangePop();
  }
  const long long loop_end = monotonic_ns();
  // What finish_run_session does at exit.
  watching.reset();
  const auto pass = observer->collect_bounded();
  (void)files.write(pass.trace_prefix, pass.summary, detail::session_trace_options(settings, pass.left_out));
  const long long written = monotonic_ns();
  if (pass.summary.launches != static_cast<std::size_t>(steps)) {
    std::fprintf(stderr, "FAILED: the summary counted %zu launches of %ld\n", pass.summary.launches, steps);
    return 2;
  }
  std::ofstream{out / "end-to-report"} << static_cast<double>(written - loop_end) / 1e9 << '\n';
  return 0;
}

result in_child_session(long steps, const fs::path& out) {
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) _exit(session_row(steps, out));
  int status = 0;
  rusage usage{};
  wait4(child, &status, 0, &usage);
  result r;
  r.peak_kib = usage.ru_maxrss;
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::ifstream in{out / "end-to-report"};
  in >> r.report_s;
  return r;
}

double megabytes(const fs::path& file) {
  std::error_code error;
  const auto size = fs::file_size(file, error);
  return error ? 0.0 : static_cast<double>(size) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> lengths;
  for (int i = 1; i < argc; ++i) lengths.push_back(std::atol(argv[i]));
  if (lengths.empty()) lengths = {1000000, 10000000};
  const fs::path scratch = fs::temp_directory_path() / ("launchwatch-run-memory-" + std::to_string(::getpid()));
  fs::create_directories(scratch);

  struct row {
    std::string name;
    long steps;
    result r;
  };
  std::vector<row> rows;
  for (const long steps : lengths) {
    const auto tag = std::to_string(steps);
    const auto end_file = scratch / ("end-" + tag);
    fs::remove(end_file);
    rows.push_back({"ranges alone", steps, run_child({RANGES_PROGRAM, tag, end_file.string()}, end_file)});
    rows.back().r.report_s = -1;
    const auto run_out = scratch / ("run-" + tag);
    fs::remove(end_file);
    rows.push_back({"launchwatch run -- ranges", steps,
                    run_child({LAUNCHWATCH_PROGRAM, "run", "--out", run_out.string(), "--", RANGES_PROGRAM, tag,
                               end_file.string()},
                              end_file)});
    rows.back().r.trace_mb = megabytes(run_out / "trace.json");
    const auto session_out = scratch / ("session-" + tag);
    rows.push_back({"session, a launch a step", steps, in_child_session(steps, session_out)});
    rows.back().r.trace_mb = megabytes(session_out / "trace.json");
  }

  std::printf("%-28s %10s %14s %18s %14s\n", "row", "steps", "peak RSS MiB", "end to report s", "trace.json MB");
  bool all_ok = true;
  for (const auto& r : rows) {
    all_ok = all_ok && r.r.ok;
    std::printf("%-28s %10ld %14.1f %18s %14.1f%s\n", r.name.c_str(), r.steps,
                static_cast<double>(r.r.peak_kib) / 1024.0,
                r.r.report_s < 0 ? "-" : std::to_string(r.r.report_s).substr(0, 6).c_str(), r.r.trace_mb,
                r.r.ok ? "" : "  FAILED");
  }
  if (lengths.size() >= 2) {
    std::printf("\npeak RSS at %ld steps / at %ld steps (target: within 2x):\n", lengths.back(), lengths.front());
    const std::size_t per_length = 3;
    for (std::size_t k = 0; k < per_length; ++k) {
      const auto& small = rows[k];
      const auto& large = rows[(lengths.size() - 1) * per_length + k];
      std::printf("  %-28s %.2fx\n", small.name.c_str(),
                  static_cast<double>(large.r.peak_kib) / static_cast<double>(std::max(1L, small.r.peak_kib)));
    }
  }
  fs::remove_all(scratch);
  return all_ok ? 0 : 1;
}
