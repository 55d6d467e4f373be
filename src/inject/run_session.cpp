// The process-long attribution of `launchwatch run` (run_session.hpp).

#include "run_session.hpp"

#include <atomic>
#include <chrono>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/merge.hpp>
#include <launchwatch/attribute/report_files.hpp>
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/errors.hpp>

#include "core/interface/thread_name.hpp"
#include "cuda_bridge/inside_cuda_init.hpp"
#include "cuda_bridge/live_bridge.hpp"
#include "run_notes.hpp"

namespace launchwatch::detail {
namespace {

std::string_view environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string_view{} : std::string_view{value};
}

struct session {
  run_settings settings;
  report_place place;
  pid_t pid = 0;  // the process that started the session: a forked child is another
  std::optional<report_files> files;
  std::shared_ptr<attribution> observer;
  std::optional<launch_observation> watching;
  std::unique_ptr<launchwatch::cuda_bridge> bridge;
  bool cuda_tried = false;
  std::string cuda_unavailable;  // why the bridge did not start, once it was tried
  // The snapshot thread (run_settings::snapshot_every) and how it is told to stop. `snapshotting`
  // is held for each snapshot, and by fork's prepare handler, so a child forked without exec never
  // inherits a snapshot's locks half taken.
  std::thread snapshots;
  std::mutex snapshot_mutex;
  std::condition_variable snapshot_stop;
  bool stop_snapshots = false;
  std::mutex snapshotting;
};

// Never destroyed: the program's other threads may still report launches while statics go.
session* const the_session = new session;
std::once_flag started;
std::once_flag finished;
bool running = false;  // written once under `started`, read after it
std::mutex cuda_mutex;

void say(std::string_view message) { std::fprintf(stderr, "launchwatch: %.*s\n", static_cast<int>(message.size()), message.data()); }

void finish_at_exit() { finish_run_session(); }

/// The pipe `launchwatch run` reads what became of the program's report from
/// (LAUNCHWATCH_RUN_STATUS_FD; -1 when there is none, or this process is not the program): one line
/// when watching starts, one when the report was written or could not be.
int status_fd = -1;

void tell_launchwatch(std::string_view line) {
  if (status_fd < 0) return;
  std::string text{line};
  text += '\n';
  [[maybe_unused]] const auto written = ::write(status_fd, text.data(), text.size());
}

/// Takes the status pipe the program inherited, if this is the program and it still has it (a
/// program may close descriptors it did not open): close-on-exec from now on, so the processes it
/// runs do not hold it.
void take_status_pipe(const session& s) {
  const auto named = environment("LAUNCHWATCH_RUN_STATUS_FD");
  if (named.empty() || !s.place.label.empty()) return;
  int fd = -1;
  const auto [end, error] = std::from_chars(named.data(), named.data() + named.size(), fd);
  struct stat about {};
  if (error != std::errc{} || end != named.data() + named.size() || fd < 0 || ::fstat(fd, &about) != 0 ||
      !S_ISFIFO(about.st_mode)) {
    return;
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  status_fd = fd;
}

// Stop signals (SIGINT, SIGTERM, SIGHUP): the handler only notes the signal and posts a semaphore;
// a thread waiting on it writes the report (which takes locks and allocates, so cannot run in a
// handler), then ends the process by the same signal with its default action, as the program would
// have ended. A semaphore rather than a pipe: it is memory, which the program cannot close or reuse
// as it can a descriptor it did not open.
constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
sem_t stop_requested;
std::atomic<int> stop_signal{0};

extern "C" void on_stop_signal(int signal_number);

/// Puts back the default action of every stop signal this library handles.
void default_stop_actions() noexcept {
  for (const int signal_number : stop_signals) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == &on_stop_signal) {
      std::signal(signal_number, SIG_DFL);
    }
  }
}

extern "C" void on_stop_signal(int signal_number) {
  const int saved = errno;
  // A second stop signal ends the process at once (the report of the first may take a while: the
  // device is waited for), as a user pressing Ctrl-C twice means.
  default_stop_actions();
  int none = 0;
  if (stop_signal.compare_exchange_strong(none, signal_number)) ::sem_post(&stop_requested);
  errno = saved;
}

/// In a child forked without exec: the semaphore's waiting thread is the parent's, so a signal the
/// child caught would never end it. The child gets the default actions back.
extern "C" void forget_stop_signals_in_child() { default_stop_actions(); }

void catch_stop_signals() {
  bool any = false;
  for (const int signal_number : stop_signals) {
    struct sigaction current {};
    // A program that handles the signal itself (Python's KeyboardInterrupt) exits through its own
    // path, and the report is written at exit: leave its handler alone. One that ignores it keeps
    // ignoring it.
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    if (!any && (::sem_init(&stop_requested, 0, 0) != 0 ||
                 ::pthread_atfork(nullptr, nullptr, &forget_stop_signals_in_child) != 0)) {
      return;
    }
    any = true;
    struct sigaction ours {};
    ours.sa_handler = &on_stop_signal;
    sigemptyset(&ours.sa_mask);
    ours.sa_flags = SA_RESTART;
    ::sigaction(signal_number, &ours, nullptr);
  }
  if (!any) return;
  std::thread{[] {
    name_this_thread("lw-stop-signal");
    while (::sem_wait(&stop_requested) != 0 && errno == EINTR) {
    }
    const int signal_number = stop_signal.load();
    finish_run_session();
    std::signal(signal_number, SIG_DFL);
    ::kill(::getpid(), signal_number);
  }}.detach();
}

/// The snapshot thread: every `snapshot_every`, the summary so far into summary.json.
void take_snapshots() {
  name_this_thread("lw-snapshots");
  auto& s = *the_session;
  std::unique_lock lock{s.snapshot_mutex};
  bool said = false;
  while (!s.snapshot_stop.wait_for(lock, s.settings.snapshot_every, [&] { return s.stop_snapshots; })) {
    lock.unlock();
    try {
      std::lock_guard snapshotting{s.snapshotting};
      auto summary = s.observer->snapshot_summary();
      summary.process = s.place.label;
      s.files->write_summary(summary);
    } catch (const std::exception& error) {
      if (!std::exchange(said, true)) say(fmt::format("a snapshot of summary.json failed: {}", error.what()));
    }
    lock.lock();
  }
}

extern "C" void pause_snapshots_for_fork() { the_session->snapshotting.lock(); }
extern "C" void resume_snapshots_after_fork() { the_session->snapshotting.unlock(); }

void stop_snapshots() {
  auto& s = *the_session;
  {
    std::lock_guard lock{s.snapshot_mutex};
    s.stop_snapshots = true;
  }
  s.snapshot_stop.notify_all();
  if (s.snapshots.joinable() && s.snapshots.get_id() != std::this_thread::get_id()) s.snapshots.join();
}

void start() {
  auto& s = *the_session;
  try {
    s.settings = read_run_settings();
    s.pid = ::getpid();
    s.place = report_place_for(s.settings, s.pid, ::getppid(), process_label_from_environment());
    take_status_pipe(s);
    // Its folder made now: one left without a report names a process that was watched and killed.
    s.files.emplace(s.place.folder);
  } catch (const std::exception& error) {
    say(fmt::format("not watching this program: {}", error.what()));
    tell_launchwatch(fmt::format("failed {}", error.what()));
    return;
  }
  s.observer = std::make_shared<attribution>(session_attribution_options(s.settings));
  s.watching.emplace(s.observer);
  running = true;
  if (s.settings.snapshot_every.count() > 0 &&
      ::pthread_atfork(&pause_snapshots_for_fork, &resume_snapshots_after_fork, &resume_snapshots_after_fork) == 0) {
    s.snapshots = std::thread{take_snapshots};
  }
  tell_launchwatch("watching");
  std::atexit(&finish_at_exit);
  // Python ends an uncaught KeyboardInterrupt by finalising, then raising SIGINT again with its
  // default action, which skips C's atexit: inside Python, have it call us when it finalises too.
  using py_at_exit = int (*)(void (*)());
  if (auto* at_exit = reinterpret_cast<py_at_exit>(::dlsym(RTLD_DEFAULT, "Py_AtExit"))) at_exit(&finish_at_exit);
  catch_stop_signals();
}

/// `text` as a whole number of at most `most`, digits only (no sign, space or suffix); throws
/// configuration_error naming `variable` and what it counts otherwise.
std::size_t whole_number(std::string_view text, const char* variable, const char* counts,
                         std::size_t most = static_cast<std::size_t>(-1)) {
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool digits_only = !text.empty() && text.front() >= '0' && text.front() <= '9';
  if (!digits_only || error != std::errc{} || end != text.data() + text.size() || value > most) {
    throw configuration_error{fmt::format("{} is '{}'; use a whole number of {}", variable, text, counts)};
  }
  return value;
}

constexpr std::string_view windows_prefix = "windows:";

}  // namespace

run_settings read_run_settings() {
  run_settings settings;
  if (const auto out = environment("LAUNCHWATCH_RUN_OUT"); !out.empty()) settings.out = std::string{out};
  const auto timing = environment("LAUNCHWATCH_RUN_TIMING");
  if (timing == "resolved") {
    settings.timing = timing_request::resolved;
  } else if (timing == "none") {
    settings.timing = timing_request::none;
  } else if (timing.starts_with(windows_prefix)) {
    try {
      settings.timing_windows = parse_timing_windows(timing.substr(windows_prefix.size()));
    } catch (const configuration_error& error) {
      throw configuration_error{fmt::format("LAUNCHWATCH_RUN_TIMING: {}", error.what())};
    }
  } else if (!timing.empty() && timing != "deferred") {
    throw configuration_error{fmt::format(
        "LAUNCHWATCH_RUN_TIMING is '{}'; use deferred, resolved, none or windows:ON_MS/OFF_MS", timing)};
  }
  const auto range = environment("LAUNCHWATCH_RUN_CAPTURE_RANGE");
  if (range == "cuda-profiler-api") {
    settings.profiler_api_range = true;
  } else if (!range.empty() && range != "none") {
    throw configuration_error{
        fmt::format("LAUNCHWATCH_RUN_CAPTURE_RANGE is '{}'; use none or cuda-profiler-api", range)};
  }
  if (const auto parent = environment("LAUNCHWATCH_RUN_PARENT"); !parent.empty()) {
    const auto [end, error] = std::from_chars(parent.data(), parent.data() + parent.size(), settings.parent);
    if (error != std::errc{} || end != parent.data() + parent.size() || settings.parent <= 0) {
      throw configuration_error{
          fmt::format("LAUNCHWATCH_RUN_PARENT is '{}'; it must be the pid of `launchwatch run`", parent)};
    }
  }
  if (const auto events = environment("LAUNCHWATCH_RUN_TRACE_EVENTS"); !events.empty()) {
    settings.trace_events = whole_number(events, "LAUNCHWATCH_RUN_TRACE_EVENTS", "events, 0 for no cap");
  }
  if (const auto every = environment("LAUNCHWATCH_RUN_SNAPSHOT_EVERY"); !every.empty()) {
    settings.snapshot_every = std::chrono::seconds{static_cast<std::chrono::seconds::rep>(
        whole_number(every, "LAUNCHWATCH_RUN_SNAPSHOT_EVERY", "seconds, 0 for no snapshots", 1'000'000'000))};
  }
  const auto unscoped = environment("LAUNCHWATCH_RUN_UNSCOPED");
  if (unscoped == "outside") {
    settings.unscoped = unscoped_launches::outside;
  } else if (!unscoped.empty() && unscoped != "sole-scoped-thread") {
    throw configuration_error{
        fmt::format("LAUNCHWATCH_RUN_UNSCOPED is '{}'; use sole-scoped-thread or outside", unscoped)};
  }
  return settings;
}

report_place report_place_for(const run_settings& settings, long pid, long parent_pid,
                               const std::string& job_label) {
  if (settings.parent == 0 || parent_pid == settings.parent) return {settings.out, {}};
  // With the pid always: a rank's own subprocesses inherit its RANK.
  const std::string label =
      job_label.empty() ? fmt::format("pid {}", pid) : fmt::format("{}, pid {}", job_label, pid);
  // Only letters, digits, `.`, `_` and `-` in the folder's name: a rank of `0/1` must not make a
  // folder two deep, which the merge would not find.
  std::string folder;
  for (const char c : label) {
    if (c == ',') continue;
    const bool kept = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
    folder += kept ? c : '-';
  }
  if (folder.front() == '.') folder.front() = '-';
  return {settings.out / "processes" / folder, label};
}

void start_run_session() noexcept {
  try {
    std::call_once(started, start);
  } catch (...) {
    // Out of memory or a thread that would not start: the program runs unwatched.
  }
}

void watch_cuda_in_run_session() noexcept {
  start_run_session();
  if (!running) return;
  auto& s = *the_session;
  std::lock_guard lock{cuda_mutex};
  if (s.cuda_tried) return;
  s.cuda_tried = true;
  // Here, inside cuInit, is where CUPTI's own injection samples subscribe: the program has not
  // launched anything yet, so every launch is seen. The CUDA runtime may be initialising on this
  // very thread and holding its lock, so the bridge is told to call none of it.
  try {
    cuda_bridge_options options;
    options.capture_range = s.settings.profiler_api_range ? cuda_capture_range::cuda_profiler_api
                                                          : cuda_capture_range::whole;
    // Replayed graphs' kernels in the report, charged to the range that captured them. It needs
    // CUPTI's kernel records, which timing turns on at the first timed launch anyway.
    if (s.settings.timing != timing_request::none) options.graph_replays = cuda_graph_replays::per_node;
    options.timing_windows = s.settings.timing_windows;
    const cuda_bridge::inside_cuda_init no_runtime_calls;
    s.bridge = std::make_unique<launchwatch::cuda_bridge>(options);
  } catch (const std::exception& error) {
    s.cuda_unavailable = error.what();
    say(fmt::format("CUDA kernels are not watched: {}. The program runs as usual.", s.cuda_unavailable));
    return;
  }
  // The report must be written before the CUDA runtime's exit handlers tear the devices down, so
  // its handler is registered after theirs (exit runs them in reverse). finish_run_session works
  // once, however often it is registered. (When no context is ever created, the handler
  // registered at start still writes the report.)
  (void)cuda_bridge::after_cuda_runtime_initialised([] { std::atexit(&finish_at_exit); });
}

void finish_run_session() noexcept {
  if (!running) return;
  // A child forked without exec has the session's state but not the threads that may hold its
  // locks, and the parent's open report files: it writes nothing.
  if (::getpid() != the_session->pid) return;
  try {
    std::call_once(finished, [] {
      auto& s = *the_session;
      stop_snapshots();
      {
        std::lock_guard lock{cuda_mutex};
        if (s.bridge) {
          try {
            s.bridge->flush();
          } catch (const std::exception& error) {
            say(fmt::format("flushing CUDA's pending measurements failed: {}", error.what()));
          }
          const cuda_bridge_stats stats = s.bridge->stats();
          for (const auto& note :
               {capture_range_note(s.settings.profiler_api_range, stats), records_taken_note(stats),
                timing_windows_note(s.settings.timing_windows, stats)}) {
            if (note) say(*note);
          }
        } else if (!s.cuda_tried) {
          say(launchwatch::cuda_bridge::built()
                  ? "no CUDA kernel was watched: the program never initialised CUDA (no GPU or CUDA "
                    "driver here, or it ran no CUDA code)"
                  : "no CUDA kernel was watched: this launchwatch was built without the CUDA bridge");
        }
      }
      s.watching.reset();
      // Nothing of the bridge runs through exit: its collector stops after one last flush.
      cuda_bridge::close_live_bridge_records();
      auto pass = s.observer->collect_bounded();
      pass.summary.process = s.place.label;
      s.files->write(pass.trace_prefix, pass.summary, session_trace_options(s.settings, pass.left_out));
      tell_launchwatch("written");
    });
  } catch (const std::exception& error) {
    say(fmt::format("the report could not be written: {}", error.what()));
    tell_launchwatch(fmt::format("failed {}", error.what()));
  } catch (...) {
    say("the report could not be written");
    tell_launchwatch("failed (an unknown error)");
  }
}

}  // namespace launchwatch::detail
