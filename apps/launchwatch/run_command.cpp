// `launchwatch run` (run_command.hpp).

#include "run_command.hpp"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <launchwatch/attribute/merge.hpp>
#include <launchwatch/attribute/render.hpp>
#include <launchwatch/attribute/summary.hpp>
#include <launchwatch/cuda_bridge.hpp>

#include "output_folder.hpp"
#include "report_paths.hpp"

extern char** environ;

namespace launchwatch::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view library_name = "liblaunchwatch_inject.so";
constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
/// How long, after passing on a stop signal, launchwatch waits for the processes the program
/// started to end once the program has (each writes its report on the way).
constexpr std::chrono::seconds descendants_grace{10};

/// liblaunchwatch_inject.so: LAUNCHWATCH_INJECTION_LIBRARY, else beside this program (the build
/// tree and the wheel's launchwatch/_bin), else in the installed library folder beside its bin
/// folder.
std::optional<fs::path> find_injection_library() {
  if (const char* named = std::getenv("LAUNCHWATCH_INJECTION_LIBRARY"); named != nullptr && *named != '\0') {
    if (!fs::exists(named)) {
      throw std::runtime_error{fmt::format(
          "LAUNCHWATCH_INJECTION_LIBRARY names {}, which does not exist; unset it to use the one "
          "installed with launchwatch",
          named)};
    }
    std::ifstream file{named, std::ios::binary};
    char magic[4] = {};
    if (!file.read(magic, sizeof magic) || std::string_view{magic, sizeof magic} != "\x7f" "ELF") {
      throw std::runtime_error{fmt::format(
          "LAUNCHWATCH_INJECTION_LIBRARY names {}, which is not a shared library; name launchwatch's "
          "liblaunchwatch_inject.so, or unset it to use the one installed with launchwatch",
          named)};
    }
    return fs::absolute(named);
  }
  std::error_code error;
  const auto self = fs::read_symlink("/proc/self/exe", error);
  if (error) return std::nullopt;
  for (const auto& candidate : {self.parent_path() / library_name,
                                self.parent_path().parent_path() / LAUNCHWATCH_INSTALL_LIBDIR / library_name}) {
    if (fs::exists(candidate, error)) return candidate;
  }
  return std::nullopt;
}

/// The folder holding launchwatch's Python package (python/CMakeLists.txt): the build tree's
/// `python` folder two levels above this program, the installed share/launchwatch/python, or, in
/// the wheel (scripts/wheel), the site-packages folder whose launchwatch/_bin holds this program.
std::optional<fs::path> find_python_package() {
  std::error_code error;
  const auto self = fs::read_symlink("/proc/self/exe", error);
  if (error) return std::nullopt;
  const auto prefix = self.parent_path().parent_path();
  const auto installed = prefix / LAUNCHWATCH_INSTALL_DATADIR / "launchwatch" / "python";
  for (const auto& candidate : {prefix.parent_path() / "python", installed, prefix.parent_path()}) {
    const auto sitecustomize = candidate / "launchwatch" / "_site" / "sitecustomize.py";
    if (fs::exists(sitecustomize, error)) return candidate;
  }
  return std::nullopt;
}

/// The file posix_spawnp would run for `program`: itself when it names a path, else the first
/// match on PATH.
std::optional<fs::path> resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return fs::path{program};
  const char* path = std::getenv("PATH");
  std::istringstream folders{path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"};
  std::error_code error;
  for (std::string folder; std::getline(folders, folder, ':');) {
    const auto candidate = fs::path{folder.empty() ? "." : folder} / program;
    if (fs::is_regular_file(candidate, error) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

/// Whether `program` is a Python interpreter (its name starts with `python`) or a script whose
/// shebang line runs one (`#!/usr/bin/env python3`).
bool is_python_program(const std::string& program) {
  if (fs::path{program}.filename().string().starts_with("python")) return true;
  const auto file = resolve_program(program);
  if (!file) return false;
  std::ifstream in{*file, std::ios::binary};
  std::string line;
  if (!std::getline(in, line) || !line.starts_with("#!")) return false;
  return line.find("python") != std::string::npos;
}

}  // namespace

std::string torch_mode_for(const std::string& torch, const std::string& program) {
  if (torch != "auto") return torch;
  return is_python_program(program) ? "modules" : "off";
}

namespace {

/// The variables that make a Python program install launchwatch's torch hooks (`mode` modules or
/// ops): the package's sitecustomize folder, then the package's folder, first on PYTHONPATH,
/// before the program's own PYTHONPATH (kept), and LAUNCHWATCH_TORCH. Nothing for `off`.
std::vector<std::pair<std::string, std::string>> torch_variables(const std::string& mode,
                                                                 const fs::path& package) {
  if (mode == "off") return {};
  std::string python_path = (package / "launchwatch" / "_site").string() + ":" + package.string();
  if (const char* own = std::getenv("PYTHONPATH"); own != nullptr && *own != '\0') {
    python_path += std::string{":"} + own;
  }
  return {{"PYTHONPATH", python_path}, {"LAUNCHWATCH_TORCH", mode}};
}

/// The program's environment: this one's, with the injection's variables set, and
/// `torch` (torch_variables) besides.
std::vector<std::string> program_environment(
    const run_options& options, const std::optional<fs::path>& library,
    const std::vector<std::pair<std::string, std::string>>& torch) {
  std::vector<std::string> variables;
  const fs::path out = fs::absolute(options.out);
  std::vector<std::pair<std::string, std::string>> ours = {
      {"LAUNCHWATCH_RUN_OUT", out.string()},
      {"LAUNCHWATCH_RUN_TIMING", options.timing},
      {"LAUNCHWATCH_RUN_CAPTURE_RANGE", options.capture_range},
      {"LAUNCHWATCH_RUN_UNSCOPED", options.unscoped},
      {"LAUNCHWATCH_RUN_TRACE_EVENTS", std::to_string(options.trace_events)},
      {"LAUNCHWATCH_RUN_SNAPSHOT_EVERY", std::to_string(options.snapshot_every)},
      // So a process the program starts in turn (torchrun's ranks, a subprocess) writes its own
      // report beside the program's rather than over it.
      {"LAUNCHWATCH_RUN_PARENT", std::to_string(::getpid())},
  };
  if (library) {
    ours.emplace_back("NVTX_INJECTION64_PATH", library->string());
    if (cuda_bridge::built()) ours.emplace_back("CUDA_INJECTION64_PATH", library->string());
  }
  ours.insert(ours.end(), torch.begin(), torch.end());
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view variable{*entry};
    const auto name = variable.substr(0, variable.find('='));
    bool replaced = false;
    for (const auto& [our_name, value] : ours) {
      if (name != our_name) continue;
      replaced = true;
      if (our_name.ends_with("_INJECTION64_PATH") && variable.substr(name.size() + 1) != value) {
        std::cerr << fmt::format("launchwatch run: replacing {} (another tool's injection) with launchwatch's\n",
                                 variable);
      }
    }
    if (!replaced) variables.emplace_back(variable);
  }
  for (const auto& [name, value] : ours) variables.push_back(name + "=" + value);
  return variables;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    const int signal_number = WTERMSIG(status);
    return fmt::format("was ended by signal {} ({})", signal_number, ::strsignal(signal_number));
  }
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

/// The terminal launchwatch runs in the foreground of, if any: the program is given its place there
/// (its own process group made the terminal's foreground), as a shell does for a job, so Ctrl-C,
/// Ctrl-\ and Ctrl-Z reach the program and every process it started. -1 when there is none.
int foreground_terminal() {
  for (const int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::isatty(fd) != 0 && ::tcgetpgrp(fd) == ::getpgrp()) return fd;
  }
  return -1;
}

/// Makes `group` the foreground process group of `terminal` (no-op without one). SIGTTOU, which a
/// background group asking this is sent, is blocked by the caller.
void give_terminal(int terminal, pid_t group) {
  if (terminal >= 0) (void)::tcsetpgrp(terminal, group);
}

/// Starts the program in a process group of its own and waits for it, passing on the stop signals
/// launchwatch is sent; returns its wait status, or -1 when it could not be started (`failure` says
/// why: errno of the start).
///
/// Its own group, so a stop signal reaches every process the program started (`run -- sh -c
/// 'python3 train.py'` leaves no orphan, as Nsight Systems' --kill signals the group) and none of
/// launchwatch's own neighbours (`launchwatch run ... | tee log`). SIGINT, SIGTERM and SIGHUP sent to
/// launchwatch go to the whole group; a second one ends the group at once (SIGKILL), for a program
/// stuck in a kernel or in its report. On a terminal the group is made the foreground one, so the
/// terminal's own signals reach it directly; when the program is stopped (Ctrl-Z) launchwatch
/// stops too, giving the shell its terminal back, and resumes it on `fg` or `bg`.
///
/// Signals are taken synchronously (blocked, then sigwaitinfo), not by a handler, so the wait for
/// the program and the passing on cannot miss each other.
int run_and_wait(const std::vector<std::string>& command, const std::vector<std::string>& environment,
                 int& failure) {
  std::vector<char*> argv;
  for (const auto& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& variable : environment) envp.push_back(const_cast<char*>(variable.c_str()));
  envp.push_back(nullptr);

  sigset_t waited;
  sigset_t blocked;
  sigset_t original;
  sigemptyset(&waited);
  sigaddset(&waited, SIGCHLD);
  for (const int signal_number : stop_signals) {
    struct sigaction current {};
    ::sigaction(signal_number, nullptr, &current);
    // Ignored here (nohup): the program inherits that, and launchwatch keeps ignoring it.
    if (current.sa_handler != SIG_IGN) sigaddset(&waited, signal_number);
  }
  blocked = waited;
  sigaddset(&blocked, SIGTTOU);  // taking the terminal back from the program's group
  ::signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would reap the program before we see it end
  ::sigprocmask(SIG_BLOCK, &blocked, &original);
  const int terminal = foreground_terminal();
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setsigmask(&attributes, &original);  // the program starts with the mask we had
  posix_spawnattr_setpgroup(&attributes, 0);            // a group of its own, numbered by its pid
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // In the program, before it runs: a program that reads the terminal at once must not find itself
  // in the background.
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
  if (terminal >= 0) posix_spawn_file_actions_addtcsetpgrp_np(&actions, terminal);
#endif
  pid_t pid = 0;
  const int failed = ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) {
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    failure = failed;
    return -1;
  }
  give_terminal(terminal, pid);  // the program did it too; whichever comes first
  int status = 0;
  int stops_passed_on = 0;
  // The program may have left its group (setsid): then it alone is signalled.
  const auto signal_group = [pid](int signal_number) {
    if (::kill(-pid, signal_number) != 0) ::kill(pid, signal_number);
  };
  const auto pass_on = [&](int signal_number) {
    if (++stops_passed_on == 1) {
      signal_group(signal_number);
      return;
    }
    std::cerr << fmt::format(
        "launchwatch run: a second stop signal ({}): ending {} and every process of its group now "
        "(SIGKILL); a report not written yet is lost, one already written is kept\n",
        ::strsignal(signal_number), command[0]);
    signal_group(SIGKILL);
  };
  // Reaps what ended: the program, and (launchwatch being their subreaper) processes it started
  // whose parent is gone. True once the program has ended, its status in `status`.
  const auto reap = [&] {
    bool program_ended = false;
    for (;;) {
      int reaped = 0;
      const pid_t ended = ::waitpid(-1, &reaped, WNOHANG | WUNTRACED);
      if (ended < 0 && errno == EINTR) continue;
      if (ended <= 0) return program_ended;
      if (ended != pid) continue;
      if (!WIFSTOPPED(reaped)) {
        status = reaped;
        program_ended = true;
        continue;
      }
      // Stopped (Ctrl-Z): stop too, so the shell that started launchwatch gets its terminal back;
      // when continued, continue the program, in the foreground again if launchwatch is.
      give_terminal(terminal, ::getpgrp());
      ::kill(::getpid(), SIGSTOP);
      if (terminal >= 0 && ::tcgetpgrp(terminal) == ::getpgrp()) give_terminal(terminal, pid);
      ::kill(-pid, SIGCONT);
    }
  };
  for (bool ended = false; !ended;) {
    siginfo_t info{};
    const int signal_number = ::sigwaitinfo(&waited, &info);
    if (signal_number < 0) {
      if (errno == EINTR) continue;
      throw std::system_error{errno, std::generic_category(), "waiting for the program"};
    }
    if (signal_number == SIGCHLD) {
      ended = reap();
    } else {
      pass_on(signal_number);
    }
  }
  give_terminal(terminal, ::getpgrp());
  // Stopped by a signal, the program's own processes may outlive it by the time their reports
  // take (a shell dies at once, the python3 it ran writes first): wait for them, a while.
  if (stops_passed_on > 0) {
    const auto deadline = std::chrono::steady_clock::now() + descendants_grace;
    while (std::chrono::steady_clock::now() < deadline) {
      reap();
      if (::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) break;
      const timespec tick{0, 10'000'000};
      siginfo_t info{};
      const int signal_number = ::sigtimedwait(&waited, &info, &tick);
      if (signal_number > 0 && signal_number != SIGCHLD) pass_on(signal_number);
    }
  }
  ::sigprocmask(SIG_SETMASK, &original, nullptr);
  return status;
}

/// What the injection in the program said about its report, through the status pipe
/// (LAUNCHWATCH_RUN_STATUS_FD): one line at its start (`watching`), one at its end (`written`, or
/// `failed WHY`).
struct injection_status {
  bool watching = false;
  bool written = false;
  std::string failed;
};

injection_status read_injection_status(int fd) {
  injection_status said;
  if (fd < 0) return said;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);  // a process the program left running may hold it open
  std::string text;
  char buffer[4096];
  for (;;) {
    const auto got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      text.append(buffer, static_cast<std::size_t>(got));
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  std::istringstream lines{text};
  for (std::string line; std::getline(lines, line);) {
    if (line == "watching") said.watching = true;
    if (line == "written") said.written = true;
    if (line.starts_with("failed ")) said.failed = line.substr(7);
  }
  return said;
}

/// The report folders processes the program started left this run (OUT/processes/<label>/),
/// ordered by their folder names with numbers compared as numbers (rank-2 before rank-10), and
/// those that left none (a process killed before it wrote its report). One that cannot be read is
/// said and counted as left none, not fatal to the others.
struct descendants {
  std::vector<process_summary> reports;
  std::vector<std::string> without_report;
};

descendants descendants_reports(const output_folder& out) {
  std::vector<fs::path> folders;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator{out.path / "processes", error}) {
    if (entry.is_directory(error) && written_since_claimed(out, entry.path())) folders.push_back(entry.path());
  }
  // glibc's natural order: "rank-2-pid-9" before "rank-10-pid-3".
  std::sort(folders.begin(), folders.end(), [](const fs::path& a, const fs::path& b) {
    return ::strverscmp(a.filename().c_str(), b.filename().c_str()) < 0;
  });
  descendants found;
  for (const auto& folder : folders) {
    const auto summary = folder / "summary.json";
    if (!fs::exists(summary, error) || !written_since_claimed(out, summary)) {
      found.without_report.push_back(folder.filename().string());
      continue;
    }
    try {
      auto loaded = load_summary(summary);
      auto label = loaded.process.empty() ? folder.filename().string() : loaded.process;
      found.reports.push_back(process_summary{std::move(label), std::move(loaded)});
    } catch (const std::exception& failure) {
      std::cerr << fmt::format("launchwatch run: left out a process's report: {}\n", failure.what());
      found.without_report.push_back(folder.filename().string());
    }
  }
  return found;
}

/// What trace.json says it left out (its `launchwatch_dropped_events` metadata event, which the
/// writer puts on a line of its own among the first; render.hpp), as the line under the tree
/// table; empty when it left out nothing or cannot be read.
std::string trace_left_out_line(const fs::path& trace, long long trace_events) {
  std::ifstream in{trace};
  std::string line;
  for (int i = 0; i < 64 && std::getline(in, line); ++i) {
    if (line.find("\"launchwatch_dropped_events\"") == std::string::npos) continue;
    if (!line.empty() && line.back() == ',') line.pop_back();
    const auto event = nlohmann::json::parse(line, nullptr, false);
    if (event.is_discarded()) return {};
    const auto& args = event.value("args", nlohmann::json::object());
    const auto number = [&](const char* name) { return args.value(name, std::uint64_t{0}); };
    const auto dropped = number("dropped_events");
    const auto launches = number("launches_beyond_prefix");
    const auto intervals = number("scope_intervals_beyond_prefix");
    return fmt::format(
        "trace.json: the pass's beginning, {} events (--trace-events {}); left out: {} later launches "
        "and {} later scope intervals, which are in the summary only{}",
        number("events"), trace_events, launches, intervals,
        dropped > 0 ? fmt::format(", and {} events cut by the cap", dropped) : std::string{});
  }
  return {};
}

/// Prints the report the injection left, or says why there is none: the program's own, and when
/// processes it started left reports too, one merged report of them all (a row per process); the
/// last line names every process that started watching and left no report. Returns whether any
/// report of this run exists (then an earlier run's leftovers may go).
bool print_report(const run_options& options, const output_folder& out, const injection_status& said, int status) {
  const auto summary = out.path / "summary.json";
  const auto& program = options.command[0];
  std::error_code error;
  const bool own = fs::exists(summary, error) && written_since_claimed(out, summary);
  auto others = descendants_reports(out);
  const auto lost_processes = [&] {
    if (others.without_report.empty()) return;
    std::string names;
    for (const auto& name : others.without_report) names += (names.empty() ? "" : ", ") + name;
    std::cerr << fmt::format(
        "launchwatch run: {} process(es) the program started were watched but left no report (killed, "
        "or their report could not be written): {} (in {})\n",
        others.without_report.size(), names, (out.path / "processes").string());
  };
  if (!own && !said.failed.empty()) {
    std::cerr << fmt::format("launchwatch run: {} {}, but its report could not be written: {}\n", program,
                             how_it_ended(status), said.failed);
  } else if (!own && said.watching) {
    std::cerr << fmt::format("launchwatch run: {} {} before its report was written; nothing of it was saved\n",
                             program, how_it_ended(status));
  }
  if (!own && others.reports.empty()) {
    if (!said.watching && others.without_report.empty()) {
      std::cerr << fmt::format(
          "launchwatch run: nothing was watched: {} initialised neither CUDA nor NVTX (no GPU or CUDA "
          "driver here?), so launchwatch's injection never loaded and left no report{}\n",
          program,
          fs::exists(summary, error) ? fmt::format("; {} still holds an earlier run's report", out.path.string())
                                     : std::string{});
    }
    lost_processes();
    return false;
  }
  std::cout << fmt::format("\nlaunchwatch run: {} {}\n\n", program, how_it_ended(status));
  const auto trace = out.path / "trace.json";
  const bool trace_written = fs::exists(trace, error) && written_since_claimed(out, trace);
  const auto left_out = trace_written ? trace_left_out_line(trace, options.trace_events) : std::string{};
  if (others.reports.empty()) {
    write_tree(std::cout, load_summary(summary));
    if (options.snapshot_every > 0 && !trace_written) {
      // Killed before its report: what is there is the last snapshot (--snapshot-every).
      std::cout << fmt::format("\n{} ended before its report was written: {} is its last snapshot "
                               "(--snapshot-every {}), and there is no trace\n",
                               program, summary.string(), options.snapshot_every);
      lost_processes();
      return true;
    }
    std::cout << '\n' << wrote_report_files(out.path) << '\n';
    if (!left_out.empty()) std::cout << left_out << '\n';
    lost_processes();
    return true;
  }
  std::vector<process_summary> all;
  if (own) all.push_back(process_summary{fs::path{program}.filename().string(), load_summary(summary)});
  std::cout << fmt::format("{} process(es) it started left reports of their own (in {}): one report of {}, a row "
                           "per process\n\n",
                           others.reports.size(), (out.path / "processes").string(),
                           all.empty() ? "them" : "it and them");
  for (auto& other : others.reports) all.push_back(std::move(other));
  write_tree(std::cout, all.size() == 1 ? all.front().summary : merge_summaries(all));
  std::cout << '\n'
            << (own ? wrote_report_files(out.path) + "\n" : std::string{})
            << fmt::format("each process's files are in {}/<process>/ (launchwatch report --merge them)\n",
                           (out.path / "processes").string());
  if (own && !left_out.empty()) std::cout << left_out << '\n';
  lost_processes();
  return true;
}

/// A pipe whose writing end the program inherits as LAUNCHWATCH_RUN_STATUS_FD (a descriptor of its
/// own, without close-on-exec, which the injection closes on exec once it has it).
struct status_pipe {
  int read_end = -1;
  int inherited = -1;
  status_pipe() {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return;
    read_end = ends[0];
    inherited = ::fcntl(ends[1], F_DUPFD, 3);  // no close-on-exec
    ::close(ends[1]);
  }
  ~status_pipe() {
    if (read_end >= 0) ::close(read_end);
    close_inherited();
  }
  void close_inherited() {
    if (inherited >= 0) ::close(inherited);
    inherited = -1;
  }
  status_pipe(const status_pipe&) = delete;
  status_pipe& operator=(const status_pipe&) = delete;
};

}  // namespace

CLI::App* add_run_command(CLI::App& app, run_options& options) {
  auto* run = app.add_subcommand(
      "run", "Run a program with every CUDA kernel it launches watched, its NVTX ranges as scopes; print "
             "the report and write trace files");
  run->add_option("-o,--out", options.out,
                  "Folder for trace.json, flame.folded and summary.json (a new or empty folder, or one an "
                  "earlier run wrote: it carries a .launchwatch-run stamp)")
      ->capture_default_str();
  run->add_flag("--force", options.force,
                "Write into --out even when it holds files launchwatch did not write (only its three "
                "report files are replaced)");
  run->add_option("--timing", options.timing,
                  "deferred (kernels back to back, read at exit), resolved (each kernel read as it "
                  "ends), none (counts only), or windows:ON_MS/OFF_MS (deferred for ON_MS, then "
                  "counts only for OFF_MS, and again: CUPTI's kernel records cost only in the windows)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value == "deferred" || value == "resolved" || value == "none") return {};
            constexpr std::string_view windows = "windows:";
            if (value.starts_with(windows)) {
              try {
                (void)parse_timing_windows(std::string_view{value}.substr(windows.size()));
                return {};
              } catch (const std::exception& error) {
                return error.what();
              }
            }
            return "'" + value +
                   "' is not deferred, resolved, none or windows:ON_MS/OFF_MS (as windows:200/800)";
          },
          "deferred|resolved|none|windows:ON_MS/OFF_MS"))
      ->capture_default_str();
  run->add_option("--capture-range", options.capture_range,
                  "none (every launch) or cuda-profiler-api (also spelt cudaProfilerApi, as in Nsight "
                  "Systems: only launches between cudaProfilerStart and cudaProfilerStop)")
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"cudaProfilerApi", "cuda-profiler-api"}}))
      ->check(CLI::IsMember({"none", "cuda-profiler-api"}))
      ->capture_default_str();
  run->add_option("--unscoped", options.unscoped,
                  "where a kernel from a thread with no NVTX range open goes: sole-scoped-thread (to "
                  "the range open on the one thread that has one, as PyTorch's backward kernels on "
                  "its autograd thread; outside when several have) or outside")
      ->check(CLI::IsMember({"sole-scoped-thread", "outside"}))
      ->capture_default_str();
  run->add_option("--trace-events", options.trace_events,
                  "at most N events in trace.json: the pass's beginning (its launches and ranges until "
                  "N events' worth), everything after it in the summary only, and said so; 0 = no cap")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--snapshot-every", options.snapshot_every,
                  "rewrite summary.json with the summary so far every SECONDS while the program runs (a "
                  "job killed by its scheduler keeps it); 0 = only at exit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--torch", options.torch,
                  "PyTorch's modules as scopes: modules (each nn.Module's forward and backward, "
                  "and each optimizer step, by module path), ops (and each aten op), off (the "
                  "program untouched), or auto (modules for a Python program)")
      ->check(CLI::IsMember({"auto", "modules", "ops", "off"}))
      ->capture_default_str();
  run->add_option("command", options.command, "-- PROGRAM [ARGS...]: the program to run, and its arguments");
  run->positionals_at_end();
  run->callback([&options] {
    if (options.command.empty()) {
      throw CLI::RequiredError{"the program to run: launchwatch run [OPTIONS] -- PROGRAM [ARGS...]"};
    }
  });
  return run;
}

int run_program(const run_options& options) {
  // Before the program starts: a folder that cannot take the report, or holds files launchwatch
  // did not write, is refused now, not found out when the program ends. An earlier run's report
  // stays until this run's exists.
  const auto library = find_injection_library();
  const auto out = claim_output_folder(options.out, options.force);

  if (!library) {
    std::cerr << fmt::format(
        "launchwatch run: {} not found beside this program or in its installed library folder (set "
        "LAUNCHWATCH_INJECTION_LIBRARY to it); {} runs unwatched\n",
        library_name, options.command[0]);
  }
  std::vector<std::pair<std::string, std::string>> torch;
  const auto mode = torch_mode_for(options.torch, options.command[0]);
  if (mode != "off" && library) {
    if (const auto package = find_python_package()) {
      torch = torch_variables(mode, *package);
    } else {
      std::cerr << fmt::format(
          "launchwatch run: --torch {}: launchwatch's Python package was not found beside this "
          "program, in its installed share/launchwatch/python folder or around the wheel's "
          "launchwatch/_bin; PyTorch modules are not scopes\n",
          mode);
    }
  }
  status_pipe status_pipe;
  auto environment = program_environment(options, library, torch);
  if (status_pipe.inherited >= 0) {
    environment.push_back(fmt::format("LAUNCHWATCH_RUN_STATUS_FD={}", status_pipe.inherited));
  }
  // Processes the program starts and leaves behind are reparented to launchwatch, so it can wait
  // for their reports when a stop signal ends the program first.
  (void)::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int failure = 0;
  const int status = run_and_wait(options.command, environment, failure);
  status_pipe.close_inherited();
  if (status < 0) {
    std::cerr << fmt::format("launchwatch run: cannot run {}: {}\n", options.command[0], std::strerror(failure));
    // As shells say it: 127 for a program that is not there, 126 for one that cannot be run.
    return failure == ENOENT ? 127 : 126;
  }
  if (library) {
    try {
      if (print_report(options, out, read_injection_status(status_pipe.read_end), status)) {
        remove_earlier_reports(out);
      }
    } catch (const std::exception& failure) {
      std::cerr << "launchwatch run: " << failure.what() << '\n';
    }
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace launchwatch::cli
