// The profiling logger: its configuration, the background writer and the API.
//
// The launch path only pushes onto a queue. One writer thread takes the queue a batch at a time,
// resolves each measurement (which waits for the kernel), keeps the running totals, formats and
// writes. What it writes is in logger/lines.cpp, where lines go in logger/output.cpp, and what the
// environment says in logger/environment.cpp.

#include <launchwatch/logger.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/logger.h>

#include "core/interface/diagnostics.hpp"
#include "core/interface/fork_locks.hpp"
#include "core/interface/thread_name.hpp"
#include "core/launch_watch_writer.hpp"
#include "core/logger/environment.hpp"
#include "core/logger/lines.hpp"
#include "core/logger/output.hpp"

namespace launchwatch {
namespace detail {
namespace {

/// How long the exit handler waits for measurements still queued. A kernel still running when the
/// program returns from main is unusual; a device already torn down, whose measurement never
/// resolves, must not turn the exit into a hang.
constexpr auto exit_drain_limit = std::chrono::seconds{5};

instant steady_now() noexcept { return std::chrono::steady_clock::now(); }

// ------------------------------------------------------------------------------------------------
// The writer.

/// One entry of the writer's queue, in the order it was pushed.
struct queued {
  enum class kind { execution, timed, summary, switch_output };

  static queued execution(profile_level level, const launch_info& info) {
    return queued{kind::execution, level, info, std::nullopt, nullptr};
  }
  static queued timed(profile_level level, const launch_info& info, profile_duration reading) {
    return queued{kind::timed, level, info, std::move(reading), nullptr};
  }
  static queued summary(profile_level level) {
    return queued{kind::summary, level, launch_info{}, std::nullopt, nullptr};
  }
  static queued switch_output(std::shared_ptr<spdlog::logger> output) {
    return queued{kind::switch_output, profile_level::disabled, launch_info{}, std::nullopt,
                  std::move(output)};
  }

  kind what;
  profile_level level;  // in force when the entry was pushed
  launch_info info;
  std::optional<profile_duration> reading;  // timed only
  std::shared_ptr<spdlog::logger> output;   // switch_output only
};

/// Everything behind the logger. Never destroyed: threads may launch while static destructors run.
struct logger_state {
  // Configuration, changed by start, set_level and set_output. Held while a file is opened, which
  // is why it is not the queue's lock: a launch never waits for an open.
  std::mutex config_mutex;
  bool started = false;
  bool level_set_by_code = false;
  bool output_set_by_code = false;
  log_output configured = log_output::standard_error();
  bool configured_opened = false;
  instant (*clock)() noexcept = &steady_now;

  // The queue and the writer.
  std::mutex mutex;
  std::condition_variable work;      // the writer waits for entries
  std::condition_variable progress;  // flush and write_summary wait for the writer
  std::vector<queued> queue;
  std::uint64_t pushed = 0;   // entries ever pushed
  std::uint64_t written = 0;  // of those, entries the writer has finished (and flushed)
  std::thread writer;
  std::thread::id writer_id;
  // The process the writer runs in. A forked child inherits the writer's handle, queue and lock
  // (held, if the writer held it at the fork) but not its thread, so its exit must touch none of
  // them: read without the lock.
  std::atomic<::pid_t> writer_process{0};
  bool stopping = false;
  bool accepting = true;       // false once shut down at exit
  bool exit_hook_registered = false;
  std::shared_ptr<spdlog::logger> output;  // the latest output opened, for a writer that starts
  instant origin{};
  bool has_origin = false;

  // Writer thread only (and reset, after joining it).
  running_totals running;

  static logger_state& get() {
    static auto* const state = new logger_state;
    return *state;
  }

  /// A forked child has only the thread that forked: the writer stayed with the parent. The locks
  /// are held across the fork (fork_locks.hpp: logger_config, then logger_queue), so the child gets
  /// them free, not held by a thread it lacks, and the child forgets the writer and what was queued
  /// for it, so its own launches start a writer of its own, and its syncs and exit wait for nothing
  /// of the parent's. What a fork waits for here: a file being opened (config_mutex), or the writer
  /// taking a batch or pushing an entry (the queue's lock); never a measurement being resolved or a
  /// line being written, which the writer does with the lock released.
  void forget_parents_writer() noexcept;
};

constexpr fork_locks::handlers config_across_fork{
    []() noexcept { logger_state::get().config_mutex.lock(); },
    []() noexcept { logger_state::get().config_mutex.unlock(); },
    []() noexcept { logger_state::get().config_mutex.unlock(); },
};
constexpr fork_locks::handlers queue_across_fork{
    []() noexcept { logger_state::get().mutex.lock(); },
    []() noexcept { logger_state::get().mutex.unlock(); },
    []() noexcept {
      auto& state = logger_state::get();
      state.forget_parents_writer();
      state.mutex.unlock();
    },
};
[[maybe_unused]] const bool logger_enrolled =
    fork_locks::enroll(fork_locks::rank::logger_config, config_across_fork) &&
    fork_locks::enroll(fork_locks::rank::logger_queue, queue_across_fork);

void logger_state::forget_parents_writer() noexcept {
  // Neither joined nor destroyed: both would wait for a thread this process does not have. The
  // handles and the parent's queue (whose measurements could only be read by the parent's
  // streams) are left where nothing will touch them again.
  if (writer.joinable()) new (std::nothrow) std::thread{std::move(writer)};
  if (!queue.empty()) new (std::nothrow) std::vector<queued>{std::move(queue)};
  queue.clear();
  // The parent's waiters do not exist here: start the condition variables afresh.
  new (&work) std::condition_variable;
  new (&progress) std::condition_variable;
  pushed = 0;
  written = 0;
  writer_id = {};
  writer_process.store(0, std::memory_order_relaxed);
  stopping = false;
  running = running_totals{};
}

void shut_down_at_exit() noexcept;

/// What the writer does with one entry. `current` is where lines go right now.
void handle(logger_state& state, queued& entry, std::shared_ptr<spdlog::logger>& current,
            instant origin) {
  const auto write = [&](const std::string& line) {
    current->log(spdlog::level::info, spdlog::string_view_t{line.data(), line.size()});
  };
  switch (entry.what) {
    case queued::kind::execution:
      write(execution_line(entry.info));
      return;
    case queued::kind::timed: {
      reading_outcome outcome;
      outcome.method = entry.reading->method();
      try {
        outcome.ticks = std::move(*entry.reading).resolve();
      } catch (const std::exception& error) {
        outcome.failure = error.what();
      } catch (...) {
        outcome.failure = "an exception not derived from std::exception";
      }
      entry.reading.reset();
      state.running.add(entry.info.kernel, outcome);
      if (entry.level >= profile_level::medium) {
        write(timed_line(entry.info, entry.level, outcome, origin));
      }
      return;
    }
    case queued::kind::summary:
      for (const auto& line : state.running.render(entry.level)) write(line);
      state.running = running_totals{};
      return;
    case queued::kind::switch_output:
      current->flush();
      current = std::move(entry.output);
      return;
  }
}

void run_writer(logger_state& state, std::shared_ptr<spdlog::logger> current) {
  name_this_thread("lw-log");
  std::vector<queued> batch;
  std::unique_lock lock{state.mutex};
  for (;;) {
    state.work.wait(lock, [&] { return !state.queue.empty() || state.stopping; });
    if (state.queue.empty()) break;  // stopping, and everything is written
    batch.swap(state.queue);
    const auto last = state.written + batch.size();
    const auto origin = state.origin;
    lock.unlock();
    for (auto& entry : batch) {
      try {
        handle(state, entry, current, origin);
      } catch (const std::exception& error) {
        // Formatting ran out of memory, say: lose the line, never the writer.
        diagnostics().error("The profiling logger could not write a line: {}", error.what());
      } catch (...) {
        diagnostics().error("The profiling logger could not write a line");
      }
    }
    batch.clear();
    current->flush();
    lock.lock();
    state.written = last;
    state.progress.notify_all();
  }
  current->flush();
}

/// Starts the writer if it is not running. Caller holds `state.mutex`.
void ensure_writer(logger_state& state) {
  if (state.writer.joinable()) return;
  if (!state.output) state.output = open_output(log_output::standard_error(), "");
  if (!state.has_origin) {
    state.origin = steady_now();
    state.has_origin = true;
  }
  state.stopping = false;
  state.writer = std::thread{run_writer, std::ref(state), state.output};
  state.writer_id = state.writer.get_id();
  state.writer_process.store(::getpid(), std::memory_order_relaxed);
  if (!std::exchange(state.exit_hook_registered, true)) {
    // Exit handlers and static destructors run in reverse order of registration: whatever the
    // handler may use (the diagnostics logger and spdlog's registry) is created first, so it is
    // still there when the handler runs.
    diagnostics();
    std::atexit(shut_down_at_exit);
  }
}

/// Pushes `entry` for the writer, starting it if needed. Returns its sequence number. Caller holds
/// `state.mutex` and has checked `state.accepting`.
std::uint64_t push(logger_state& state, queued entry) {
  ensure_writer(state);
  const bool was_idle = state.queue.empty();
  state.queue.push_back(std::move(entry));
  // The writer takes the whole queue at once: if it was not empty, the writer has yet to take it
  // and needs no wake-up.
  if (was_idle) state.work.notify_one();
  return ++state.pushed;
}

/// Waits until the writer has finished entry `sequence`. Caller holds `lock` on `state.mutex`.
void wait_written(logger_state& state, std::unique_lock<std::mutex>& lock, std::uint64_t sequence) {
  // The writer waiting for itself (a resolver that syncs) would never wake.
  if (std::this_thread::get_id() == state.writer_id) return;
  state.progress.wait(lock, [&] { return state.written >= sequence || !state.writer.joinable(); });
}

/// Makes `output` where lines go from now on, behind what is already queued. Caller holds
/// `state.mutex`.
void install_output(logger_state& state, std::shared_ptr<spdlog::logger> output) {
  state.output = output;
  if (state.writer.joinable()) {
    push(state, queued::switch_output(std::move(output)));
  }
}

/// Stops the writer once it has written what was queued, waiting at most `limit` for it. Returns
/// how many entries it gave up on.
std::uint64_t stop_writer(logger_state& state, std::optional<std::chrono::seconds> limit,
                          bool summarise_first) {
  std::unique_lock lock{state.mutex};
  if (!state.writer.joinable()) return 0;
  if (std::this_thread::get_id() == state.writer_id) return 0;
  if (summarise_first) {
    push(state, queued::summary(profiling_logger::instance().level()));
  }
  state.stopping = true;
  state.work.notify_one();
  const auto everything = state.pushed;
  const auto done = [&] { return state.written >= everything; };
  bool drained = true;
  if (limit) {
    drained = state.progress.wait_for(lock, *limit, done);
  } else {
    state.progress.wait(lock, done);
  }
  auto writer = std::move(state.writer);
  const auto lost = everything - state.written;
  lock.unlock();
  if (drained) {
    writer.join();
  } else {
    // Blocked reading a measurement that will never come: leave it, the process is ending.
    writer.detach();
  }
  lock.lock();
  state.writer_id = {};
  state.writer_process.store(0, std::memory_order_relaxed);
  state.stopping = false;
  state.progress.notify_all();
  return lost;
}

void shut_down_at_exit() noexcept {
  auto& state = logger_state::get();
  // A forked child exiting: the writer thread, and what it had queued, stayed with the parent.
  const auto writer_process = state.writer_process.load(std::memory_order_relaxed);
  if (writer_process != 0 && writer_process != ::getpid()) return;
  {
    std::lock_guard lock{state.mutex};
    state.accepting = false;
  }
  try {
    const auto lost = stop_writer(state, exit_drain_limit, true);
    if (lost > 0) {
      // The last summary was queued last, so it is among what was lost.
      diagnostics().error(
          "The profiling logger stopped waiting at exit: measurements queued before the exit did "
          "not arrive within {} s (a device torn down before its last kernels were read), so up to "
          "{} launch lines and the last summary are missing.",
          exit_drain_limit.count(), lost - 1);
    }
  } catch (...) {
    // Exiting: nothing more can be done, and nothing may escape an exit handler.
  }
}

const char* level_name(profile_level level) {
  switch (level) {
    case profile_level::disabled: return "disabled";
    case profile_level::execution_only: return "execution_only";
    case profile_level::basic: return "basic";
    case profile_level::medium: return "medium";
    case profile_level::full: return "full";
  }
  return nullptr;
}

}  // namespace

void reset_profiling_logger_for_testing() {
  auto& state = logger_state::get();
  watch_change_notice notice;  // after the locks are released
  std::lock_guard config{state.config_mutex};
  stop_writer(state, std::nullopt, false);
  std::lock_guard lock{state.mutex};
  profiling_logger::instance().level_.store(profile_level::disabled, std::memory_order_relaxed);
  notice.changed = launch_watch_writer::set(launch_watch::logging, false);
  state.started = false;
  state.level_set_by_code = false;
  state.output_set_by_code = false;
  state.configured = log_output::standard_error();
  state.configured_opened = false;
  state.output.reset();
  state.has_origin = false;
  state.accepting = true;
  state.queue.clear();
  state.running = running_totals{};
}

void set_profiling_clock_for_testing(instant (*now)() noexcept) {
  auto& state = logger_state::get();
  std::lock_guard config{state.config_mutex};
  state.clock = now != nullptr ? now : &steady_now;
}

}  // namespace detail

void profiling_logger::set_level(profile_level level) {
  if (detail::level_name(level) == nullptr) {
    throw configuration_error{fmt::format(
        "profiling_logger::set_level was given {}, which is not a profile_level: use one of "
        "disabled, execution_only, basic, medium, full",
        static_cast<int>(level))};
  }
  auto& state = detail::logger_state::get();
  detail::watch_change_notice notice;  // after the locks are released
  std::lock_guard config{state.config_mutex};
  const bool active = state.started && level != profile_level::disabled;
  std::shared_ptr<spdlog::logger> opened;
  if (active && !state.configured_opened) {
    // The environment named a file the logger had no need to open while it was disabled.
    opened = detail::open_output(state.configured, state.output_set_by_code
                                                       ? std::string_view{"set_output"}
                                                       : detail::log_variable);
    state.configured_opened = true;
  }
  state.level_set_by_code = true;
  std::lock_guard lock{state.mutex};
  if (opened) detail::install_output(state, std::move(opened));
  level_.store(level, std::memory_order_relaxed);
  notice.changed =
      detail::launch_watch_writer::set(detail::launch_watch::logging, level != profile_level::disabled);
  if (active && state.accepting) detail::ensure_writer(state);
}

void profiling_logger::set_output(log_output output) {
  auto& state = detail::logger_state::get();
  std::lock_guard config{state.config_mutex};
  auto opened = detail::open_output(output, "set_output");
  state.output_set_by_code = true;
  state.configured = std::move(output);
  state.configured_opened = true;
  std::lock_guard lock{state.mutex};
  detail::install_output(state, std::move(opened));
}

void profiling_logger::start() {
  auto& state = detail::logger_state::get();
  detail::watch_change_notice notice;  // after the locks are released
  std::lock_guard config{state.config_mutex};
  if (state.started) return;
  // Everything is read and opened before anything is changed, so a bad value leaves the logger as
  // it was and the next start throws the same error.
  auto level = level_.load(std::memory_order_relaxed);
  if (!state.level_set_by_code) {
    if (auto from_environment = detail::profile_from_environment()) level = *from_environment;
  }
  auto configured = state.configured;
  bool opened_already = state.configured_opened;
  std::string_view setting = "set_output";
  if (!state.output_set_by_code) {
    if (auto from_environment = detail::output_from_environment()) {
      configured = std::move(*from_environment);
      opened_already = false;
      setting = detail::log_variable;
    }
  }
  std::shared_ptr<spdlog::logger> opened;
  if (level != profile_level::disabled && !opened_already) {
    opened = detail::open_output(configured, setting);
    opened_already = true;
  } else if (!opened_already && configured.where() == log_output::kind::file) {
    // Nothing to write yet, so nothing is opened; but a bad path is a bad value all the same.
    if (auto why = detail::why_not_appendable(configured.path())) {
      detail::throw_cannot_append(configured.path(), setting, *why);
    }
  }
  state.configured = std::move(configured);
  state.configured_opened = opened_already;
  state.started = true;
  std::lock_guard lock{state.mutex};
  state.origin = state.clock();
  state.has_origin = true;
  if (opened) detail::install_output(state, std::move(opened));
  level_.store(level, std::memory_order_relaxed);
  notice.changed =
      detail::launch_watch_writer::set(detail::launch_watch::logging, level != profile_level::disabled);
  if (level != profile_level::disabled && state.accepting) detail::ensure_writer(state);
}

void profiling_logger::record(const launch_info& info, profile_duration reading) {
  const auto now = level();
  if (now <= profile_level::execution_only) return;
  auto entry = detail::queued::timed(now, info, std::move(reading));
  auto& state = detail::logger_state::get();
  std::lock_guard lock{state.mutex};
  if (!state.accepting) return;
  detail::push(state, std::move(entry));
}

void profiling_logger::record_execution(const launch_info& info) {
  const auto now = level();
  if (now != profile_level::execution_only) return;
  auto& state = detail::logger_state::get();
  std::lock_guard lock{state.mutex};
  if (!state.accepting) return;
  detail::push(state, detail::queued::execution(now, info));
}

void profiling_logger::write_summary() {
  auto& state = detail::logger_state::get();
  std::unique_lock lock{state.mutex};
  // No writer means nothing was recorded since the last reset: there is nothing to summarise.
  if (!state.writer.joinable() || !state.accepting) return;
  const auto sequence = detail::push(state, detail::queued::summary(level()));
  detail::wait_written(state, lock, sequence);
}

void profiling_logger::flush() {
  auto& state = detail::logger_state::get();
  std::unique_lock lock{state.mutex};
  if (!state.writer.joinable()) {
    auto output = state.output;
    lock.unlock();
    if (output) output->flush();
    return;
  }
  detail::wait_written(state, lock, state.pushed);
}

}  // namespace launchwatch
