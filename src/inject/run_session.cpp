// The process-long attribution of `launchwatch run` (run_session.hpp).

#include "run_session.hpp"

#include <cerrno>
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
#include <unistd.h>

#include <fmt/format.h>

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/attribute/merge.hpp>
#include <launchwatch/attribute/report_files.hpp>
#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/errors.hpp>

#include "cupti/inside_cuda_init.hpp"

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
  std::unique_ptr<cuda_bridge> bridge;
  bool cuda_tried = false;
  std::string cuda_unavailable;  // why the bridge did not start, once it was tried
};

// Never destroyed: the program's other threads may still report launches while statics go.
session* const the_session = new session;
std::once_flag started;
std::once_flag finished;
bool running = false;  // written once under `started`, read after it
std::mutex cuda_mutex;

void say(std::string_view message) { std::fprintf(stderr, "launchwatch: %.*s\n", static_cast<int>(message.size()), message.data()); }

void finish_at_exit() { finish_run_session(); }

// Signals: the handler only writes the signal's number to a pipe; a thread waiting on it writes the
// report (which takes locks and allocates, so cannot run in a handler), then ends the process by
// the same signal with its default action, as the program would have ended.
int signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int signal_number) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(signal_number);
  [[maybe_unused]] const auto written = ::write(signal_pipe[1], &byte, 1);
  errno = saved;
}

/// In a child forked without exec: the pipe's reader thread is the parent's, so a signal the child
/// caught would end the parent. The child gets the default actions back and no pipe.
extern "C" void forget_stop_signals_in_child() {
  for (const int signal_number : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == &on_stop_signal) {
      std::signal(signal_number, SIG_DFL);
    }
  }
  for (int& end : signal_pipe) {
    if (end >= 0) ::close(end);
    end = -1;
  }
}

void catch_stop_signals() {
  bool any = false;
  for (const int signal_number : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    // A program that handles the signal itself (Python's KeyboardInterrupt) exits through its own
    // path, and the report is written at exit: leave its handler alone.
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    // Close-on-exec: a program the program runs gets neither the pipe nor (exec resets them) the
    // handler; a child forked without exec loses both (forget_stop_signals_in_child).
    if (!any && (::pipe2(signal_pipe, O_CLOEXEC) != 0 ||
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
    unsigned char byte = 0;
    while (::read(signal_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    finish_run_session();
    std::signal(byte, SIG_DFL);
    ::kill(::getpid(), byte);
  }}.detach();
}

void start() {
  auto& s = *the_session;
  try {
    s.settings = read_run_settings();
    s.pid = ::getpid();
    s.place = report_place_for(s.settings, s.pid, ::getppid(), process_label_from_environment());
    s.files.emplace(s.place.folder);
  } catch (const std::exception& error) {
    say(fmt::format("not watching this program: {}", error.what()));
    return;
  }
  attribution_options options;
  options.timing = s.settings.timing;
  options.unscoped = s.settings.unscoped;
  s.observer = std::make_shared<attribution>(options);
  s.watching.emplace(s.observer);
  running = true;
  std::atexit(&finish_at_exit);
  // Python ends an uncaught KeyboardInterrupt by finalising, then raising SIGINT again with its
  // default action, which skips C's atexit: inside Python, have it call us when it finalises too.
  using py_at_exit = int (*)(void (*)());
  if (auto* at_exit = reinterpret_cast<py_at_exit>(::dlsym(RTLD_DEFAULT, "Py_AtExit"))) at_exit(&finish_at_exit);
  catch_stop_signals();
}

}  // namespace

run_settings read_run_settings() {
  run_settings settings;
  if (const auto out = environment("LAUNCHWATCH_RUN_OUT"); !out.empty()) settings.out = std::string{out};
  const auto timing = environment("LAUNCHWATCH_RUN_TIMING");
  if (timing == "resolved") {
    settings.timing = timing_request::resolved;
  } else if (timing == "none") {
    settings.timing = timing_request::none;
  } else if (!timing.empty() && timing != "deferred") {
    throw configuration_error{fmt::format("LAUNCHWATCH_RUN_TIMING is '{}'; use deferred, resolved or none", timing)};
  }
  const auto range = environment("LAUNCHWATCH_RUN_CAPTURE_RANGE");
  if (range == "cuda-profiler-api") {
    settings.profiler_api_range = true;
  } else if (!range.empty() && range != "none") {
    throw configuration_error{
        fmt::format("LAUNCHWATCH_RUN_CAPTURE_RANGE is '{}'; use none or cuda-profiler-api", range)};
  }
  if (const auto parent = environment("LAUNCHWATCH_RUN_PARENT"); !parent.empty()) {
    settings.parent = std::strtol(std::string{parent}.c_str(), nullptr, 10);
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
  std::string folder;
  for (const char c : label) {
    if (c == ',') continue;
    folder += c == ' ' ? '-' : c;
  }
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
    const cupti::inside_cuda_init no_runtime_calls;
    s.bridge = std::make_unique<cuda_bridge>(options);
  } catch (const std::exception& error) {
    s.cuda_unavailable = error.what();
    say(fmt::format("CUDA kernels are not watched: {}. The program runs as usual.", s.cuda_unavailable));
    return;
  }
  // The report must be written before the CUDA runtime's exit handlers tear the devices down, so
  // its handler is registered after theirs (exit runs them in reverse). finish_run_session works
  // once, however often it is registered. (When no context is ever created, the handler
  // registered at start still writes the report.)
  (void)cupti::after_cuda_runtime_initialised([] { std::atexit(&finish_at_exit); });
}

void finish_run_session() noexcept {
  if (!running) return;
  // A child forked without exec has the session's state but not the threads that may hold its
  // locks, and the parent's open report files: it writes nothing.
  if (::getpid() != the_session->pid) return;
  try {
    std::call_once(finished, [] {
      auto& s = *the_session;
      {
        std::lock_guard lock{cuda_mutex};
        if (s.bridge) {
          try {
            s.bridge->flush();
          } catch (const std::exception& error) {
            say(fmt::format("flushing CUDA's pending measurements failed: {}", error.what()));
          }
        } else if (!s.cuda_tried) {
          say(cuda_bridge::built()
                  ? "no CUDA kernel was watched: the program never initialised CUDA (no GPU or CUDA "
                    "driver here, or it ran no CUDA code)"
                  : "no CUDA kernel was watched: this launchwatch was built without the CUDA bridge");
        }
      }
      s.watching.reset();
      const auto pass = s.observer->collect();
      auto summary = summarize(pass);
      summary.process = s.place.label;
      s.files->write(pass, summary);
    });
  } catch (const std::exception& error) {
    say(fmt::format("the report could not be written: {}", error.what()));
  } catch (...) {
    say("the report could not be written");
  }
}

}  // namespace launchwatch::detail
