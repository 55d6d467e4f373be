// `launchwatch run` (run_command.hpp).

#include "run_command.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <launchwatch/attribute/merge.hpp>
#include <launchwatch/attribute/render.hpp>
#include <launchwatch/attribute/summary.hpp>
#include <launchwatch/cuda_bridge.hpp>

#include "report_paths.hpp"

extern char** environ;

namespace launchwatch::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view library_name = "liblaunchwatch_inject.so";
constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

/// liblaunchwatch_inject.so: LAUNCHWATCH_INJECTION_LIBRARY, else beside this program (the build
/// tree), else in the installed library folder beside its bin folder.
std::optional<fs::path> find_injection_library() {
  if (const char* named = std::getenv("LAUNCHWATCH_INJECTION_LIBRARY"); named != nullptr && *named != '\0') {
    if (!fs::exists(named)) {
      throw std::runtime_error{fmt::format(
          "LAUNCHWATCH_INJECTION_LIBRARY names {}, which does not exist; unset it to use the one "
          "installed with launchwatch",
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

/// The program's environment: this one's, with the injection's variables set.
std::vector<std::string> program_environment(const run_options& options, const std::optional<fs::path>& library) {
  std::vector<std::string> variables;
  const fs::path out = fs::absolute(options.out);
  std::vector<std::pair<std::string, std::string>> ours = {
      {"LAUNCHWATCH_RUN_OUT", out.string()},
      {"LAUNCHWATCH_RUN_TIMING", options.timing},
      {"LAUNCHWATCH_RUN_CAPTURE_RANGE", options.capture_range},
      {"LAUNCHWATCH_RUN_UNSCOPED", options.unscoped},
      // So a process the program starts in turn (torchrun's ranks, a subprocess) writes its own
      // report beside the program's rather than over it.
      {"LAUNCHWATCH_RUN_PARENT", std::to_string(::getpid())},
  };
  if (library) {
    ours.emplace_back("NVTX_INJECTION64_PATH", library->string());
    if (cuda_bridge::built()) ours.emplace_back("CUDA_INJECTION64_PATH", library->string());
  }
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

/// Starts the program and waits for it, passing on the stop signals another process sends
/// launchwatch; returns its wait status, or -1 when it could not be started.
///
/// Signals are taken synchronously (blocked, then sigwaitinfo), not by a handler, so the wait for
/// the program and the passing on cannot miss each other. One the terminal sent (Ctrl-C: si_code
/// SI_KERNEL) went to the whole foreground process group, the program included, so it is not sent
/// twice; one sent by a process (kill, a CI runner's timeout: si_code <= 0) is.
int run_and_wait(const std::vector<std::string>& command, const std::vector<std::string>& environment) {
  std::vector<char*> argv;
  for (const auto& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& variable : environment) envp.push_back(const_cast<char*>(variable.c_str()));
  envp.push_back(nullptr);

  sigset_t waited;
  sigset_t original;
  sigemptyset(&waited);
  sigaddset(&waited, SIGCHLD);
  for (const int signal_number : stop_signals) {
    struct sigaction current {};
    ::sigaction(signal_number, nullptr, &current);
    // Ignored here (nohup): the program inherits that, and launchwatch keeps ignoring it.
    if (current.sa_handler != SIG_IGN) sigaddset(&waited, signal_number);
  }
  ::signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would reap the program before we see it end
  ::sigprocmask(SIG_BLOCK, &waited, &original);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setsigmask(&attributes, &original);  // the program starts with the mask we had
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int failed = ::posix_spawnp(&pid, argv[0], nullptr, &attributes, argv.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  if (failed != 0) {
    ::sigprocmask(SIG_SETMASK, &original, nullptr);
    std::cerr << fmt::format("launchwatch run: cannot run {}: {}\n", command[0], std::strerror(failed));
    return -1;
  }
  int status = 0;
  for (;;) {
    siginfo_t info{};
    const int signal_number = ::sigwaitinfo(&waited, &info);
    if (signal_number < 0) {
      if (errno == EINTR) continue;
      throw std::system_error{errno, std::generic_category(), "waiting for the program"};
    }
    if (signal_number != SIGCHLD) {
      if (info.si_code <= 0) ::kill(pid, signal_number);
      continue;
    }
    const pid_t ended = ::waitpid(pid, &status, WNOHANG);
    if (ended == pid) break;
    if (ended < 0 && errno != EINTR) {
      throw std::system_error{errno, std::generic_category(), "waiting for the program"};
    }
  }
  ::sigprocmask(SIG_SETMASK, &original, nullptr);
  return status;
}

/// The reports left by processes the program started (OUT/processes/*/summary.json), ordered by
/// their folder names with numbers compared as numbers (rank-2 before rank-10). One that cannot be
/// read (its process was killed while writing it) is said and left out, not fatal to the others.
std::vector<process_summary> descendants_reports(const fs::path& out) {
  std::vector<fs::path> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator{out / "processes", error}) {
    const auto summary = entry.path() / "summary.json";
    if (fs::exists(summary, error) && fs::file_size(summary, error) > 0) files.push_back(summary);
  }
  // glibc's natural order: "rank-2-pid-9" before "rank-10-pid-3".
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return ::strverscmp(a.parent_path().filename().c_str(), b.parent_path().filename().c_str()) < 0;
  });
  std::vector<process_summary> reports;
  for (const auto& file : files) {
    try {
      auto summary = load_summary(file);
      auto label = summary.process.empty() ? file.parent_path().filename().string() : summary.process;
      reports.push_back(process_summary{std::move(label), std::move(summary)});
    } catch (const std::exception& failure) {
      std::cerr << fmt::format("launchwatch run: left out a process's report: {}\n", failure.what());
    }
  }
  return reports;
}

/// Prints the report the injection left, or says why there is none: the program's own, and when
/// processes it started left reports too, one merged report of them all (a row per process).
void print_report(const run_options& options, int status) {
  const auto summary = options.out / "summary.json";
  const auto& program = options.command[0];
  std::error_code error;
  const bool own = fs::exists(summary, error);
  auto others = descendants_reports(options.out);
  if (!own && others.empty()) {
    std::cerr << fmt::format(
        "launchwatch run: nothing was watched: {} initialised neither CUDA nor NVTX (no GPU or CUDA "
        "driver here?), so launchwatch's injection never loaded and left no report\n",
        program);
    return;
  }
  if (own && fs::file_size(summary, error) == 0) {
    std::cerr << fmt::format("launchwatch run: {} {} before its report was written; nothing was saved\n", program,
                             how_it_ended(status));
    if (others.empty()) return;
  }
  std::cout << fmt::format("\nlaunchwatch run: {} {}\n\n", program, how_it_ended(status));
  if (others.empty()) {
    write_tree(std::cout, load_summary(summary));
    std::cout << '\n' << wrote_report_files(options.out) << '\n';
    return;
  }
  std::vector<process_summary> all;
  const bool own_written = own && fs::file_size(summary, error) > 0;
  if (own_written) {
    all.push_back(process_summary{fs::path{program}.filename().string(), load_summary(summary)});
  }
  std::cout << fmt::format("{} process(es) it started left reports of their own (in {}): one report of {}, a row "
                           "per process\n\n",
                           others.size(), (options.out / "processes").string(),
                           all.empty() ? "them" : "it and them");
  for (auto& other : others) all.push_back(std::move(other));
  write_tree(std::cout, all.size() == 1 ? all.front().summary : merge_summaries(all));
  std::cout << '\n'
            << (own_written ? wrote_report_files(options.out) + "\n" : std::string{})
            << fmt::format("each process's files are in {}/<process>/ (launchwatch report --merge them)\n",
                           (options.out / "processes").string());
}

}  // namespace

CLI::App* add_run_command(CLI::App& app, run_options& options) {
  auto* run = app.add_subcommand(
      "run", "Run a program with every CUDA kernel it launches watched, its NVTX ranges as scopes; print "
             "the report and write trace files");
  run->add_option("--out", options.out, "Folder for trace.json, flame.folded and summary.json")
      ->capture_default_str();
  run->add_option("--timing", options.timing,
                  "deferred (kernels back to back, read at exit), resolved (each kernel read as it "
                  "ends), or none (counts only)")
      ->check(CLI::IsMember({"deferred", "resolved", "none"}))
      ->capture_default_str();
  run->add_option("--capture-range", options.capture_range,
                  "none (every launch) or cuda-profiler-api (only launches between cudaProfilerStart "
                  "and cudaProfilerStop)")
      ->check(CLI::IsMember({"none", "cuda-profiler-api"}))
      ->capture_default_str();
  run->add_option("--unscoped", options.unscoped,
                  "where a kernel from a thread with no NVTX range open goes: sole-scoped-thread (to "
                  "the range open on the one thread that has one, as PyTorch's backward kernels on "
                  "its autograd thread; outside when several have) or outside")
      ->check(CLI::IsMember({"sole-scoped-thread", "outside"}))
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
  // The previous run's report goes first, so a program that never loads the injection is not
  // shown an old report as its own.
  std::error_code error;
  fs::create_directories(options.out, error);
  if (error) {
    throw std::runtime_error{fmt::format("cannot create the output folder {}: {}. Choose another with --out.",
                                         options.out.string(), error.message())};
  }
  for (const char* name : {"trace.json", "flame.folded", "summary.json"}) fs::remove(options.out / name, error);
  fs::remove_all(options.out / "processes", error);

  const auto library = find_injection_library();
  if (!library) {
    std::cerr << fmt::format(
        "launchwatch run: {} not found beside this program or in its installed library folder (set "
        "LAUNCHWATCH_INJECTION_LIBRARY to it); {} runs unwatched\n",
        library_name, options.command[0]);
  }
  const int status = run_and_wait(options.command, program_environment(options, library));
  if (status < 0) return 127;
  if (library) {
    try {
      print_report(options, status);
    } catch (const std::exception& failure) {
      std::cerr << "launchwatch run: " << failure.what() << '\n';
    }
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace launchwatch::cli
