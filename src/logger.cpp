// The profiling logger: configuration from the environment, the background writer, and the lines
// and summary tables it writes.
//
// The launch path only pushes onto a queue. One writer thread takes the queue a batch at a time,
// resolves each measurement (which waits for the kernel), keeps the running totals, formats and
// writes. Presentation (the functions in the first section) is separate from that machinery and
// works on plain values.

#include <launchwatch/kernel_name.hpp>
#include <launchwatch/logger.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include "diagnostics.hpp"

namespace launchwatch {
namespace detail {
namespace {

using std::chrono::nanoseconds;

constexpr std::string_view profile_variable = "LAUNCHWATCH_PROFILE";
constexpr std::string_view log_variable = "LAUNCHWATCH_LOG";
constexpr std::string_view accepted_profiles = "disabled, minimal, basic, medium, full";
constexpr std::string_view accepted_logs =
    "stderr, stdout, or the path of a file in an existing directory that this process may write";

/// How long the exit handler waits for measurements still queued. A kernel still running when the
/// program returns from main is unusual; a device already torn down, whose measurement never
/// resolves, must not turn the exit into a hang.
constexpr auto exit_drain_limit = std::chrono::seconds{5};

// ------------------------------------------------------------------------------------------------
// Presentation: plain values in, text out.

/// `1.500 ms`: three decimals of the largest unit that keeps the integer part nonzero, rounded to
/// nearest. Integer arithmetic throughout, so a golden file reads the same on every machine.
std::string format_duration(nanoseconds length) {
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(length.count(), 0));
  if (ns < 1'000) return fmt::format("{} ns", ns);
  const auto thousandths = [&](std::uint64_t unit) { return (ns + unit / 2'000) / (unit / 1'000); };
  std::uint64_t scaled = 0;
  std::string_view unit;
  if (ns < 1'000'000) {
    scaled = ns;
    unit = "us";
  } else if (ns < 1'000'000'000) {
    scaled = thousandths(1'000'000);
    unit = "ms";
  } else {
    scaled = thousandths(1'000'000'000);
    unit = "s";
  }
  return fmt::format("{}.{:03} {}", scaled / 1'000, scaled % 1'000, unit);
}

/// `+1.000000 ms`: a signed offset from the logger's start with nanosecond precision, so launches on
/// several streams can be lined up from their lines.
std::string format_offset(nanoseconds offset) {
  const auto count = offset.count();
  const auto magnitude = static_cast<std::uint64_t>(count < 0 ? -count : count);
  return fmt::format("{}{}.{:06} ms", count < 0 ? '-' : '+', magnitude / 1'000'000,
                     magnitude % 1'000'000);
}


std::string display_name(std::string_view kernel, profile_level level) {
  return format_kernel_name(kernel, level == profile_level::full ? name_format::full
                                                                 : name_format::balanced);
}

std::string where_it_ran(const launch_info& info) {
  return fmt::format("on {}:{} stream {}", info.backend, info.device, info.stream);
}

std::string_view flags(const launch_info& info) {
  if (info.dry_run) return " [dry run]";
  if (info.capturing) return " [captured]";
  return "";
}

std::string execution_line(const launch_info& info) {
  return fmt::format("launch {} {}{}", display_name(info.kernel, profile_level::execution_only),
                     where_it_ran(info), flags(info));
}

/// What became of a launch's measurement once the writer read it.
struct reading_outcome {
  std::optional<profile_ticks> ticks;
  timing_method method = timing_method::system;
  std::string failure;  // why a read threw; empty otherwise
};

std::string timing_text(const reading_outcome& outcome) {
  if (outcome.ticks) {
    return fmt::format("took {} ({})", format_duration(outcome.ticks->length()),
                       to_string(outcome.method));
  }
  if (!outcome.failure.empty()) return fmt::format("untimed (reading failed: {})", outcome.failure);
  return "untimed (no measurement)";
}

std::string timed_line(const launch_info& info, profile_level level, const reading_outcome& outcome,
                       instant origin) {
  if (level != profile_level::full) {
    return fmt::format("launch {} {}{}", display_name(info.kernel, level), timing_text(outcome),
                       flags(info));
  }
  std::string line = fmt::format(
      "launch {} {} grid {}x{}x{} cube {}x{}x{}", info.kernel, where_it_ran(info),
      info.cube_count[0], info.cube_count[1], info.cube_count[2], info.cube_dim[0],
      info.cube_dim[1], info.cube_dim[2]);
  if (outcome.ticks) {
    fmt::format_to(std::back_inserter(line), " start {} end {}",
                   format_offset(std::chrono::duration_cast<nanoseconds>(outcome.ticks->start() - origin)),
                   format_offset(std::chrono::duration_cast<nanoseconds>(outcome.ticks->end() - origin)));
  }
  fmt::format_to(std::back_inserter(line), " {}{}", timing_text(outcome), flags(info));
  return line;
}

/// One kernel's totals over the launches since the previous summary, for one timing method.
struct totals {
  nanoseconds time{0};
  std::uint64_t count = 0;
};

struct summary_row {
  std::string name;
  totals sum;
};

/// Each row's share of `total` in hundredths of a percent, rounded by largest remainder so that the
/// shares shown add up to exactly 100.00%, the total row, rather than to 99.99%.
std::vector<std::uint32_t> shares_of(const std::vector<summary_row>& rows, nanoseconds total) {
  constexpr std::uint32_t whole = 10'000;
  std::vector<std::uint32_t> shares(rows.size(), 0);
  if (total.count() <= 0) return shares;
  std::vector<std::pair<long double, std::size_t>> remainders;
  std::uint32_t given = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const long double exact = static_cast<long double>(rows[i].sum.time.count()) * whole /
                              static_cast<long double>(total.count());
    const long double floor = std::floor(exact);
    shares[i] = static_cast<std::uint32_t>(floor);
    given += shares[i];
    remainders.emplace_back(exact - floor, i);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; given < whole && k < remainders.size(); ++k, ++given) {
    ++shares[remainders[k].second];
  }
  return shares;
}

std::string format_share(std::uint32_t hundredths) {
  return fmt::format("{}.{:02}%", hundredths / 100, hundredths % 100);
}

/// Left-aligns the first column and right-aligns the others, two spaces apart.
std::vector<std::string> lay_out(const std::vector<std::vector<std::string>>& cells) {
  std::vector<std::size_t> widths;
  for (const auto& row : cells) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::vector<std::string> lines;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (c == 0) {
        line += fmt::format("{:<{}}", row[c], widths[c]);
      } else {
        line += fmt::format("  {:>{}}", row[c], widths[c]);
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

/// The summary table of one timing method: rows by total time, longest first, then a total row.
std::vector<std::string> render_timed_table(timing_method method, std::vector<summary_row> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const summary_row& a, const summary_row& b) {
    if (a.sum.time != b.sum.time) return a.sum.time > b.sum.time;
    return a.name < b.name;
  });
  totals all;
  for (const auto& row : rows) {
    all.time += row.sum.time;
    all.count += row.sum.count;
  }
  const auto shares = shares_of(rows, all.time);
  const bool shareable = all.time.count() > 0;
  std::vector<std::vector<std::string>> cells{{"kernel", "total", "count", "share"}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    cells.push_back({rows[i].name, format_duration(rows[i].sum.time),
                     std::to_string(rows[i].sum.count),
                     shareable ? format_share(shares[i]) : std::string{"-"}});
  }
  cells.push_back({"total", format_duration(all.time), std::to_string(all.count),
                   shareable ? format_share(10'000) : std::string{"-"}});
  std::vector<std::string> lines{fmt::format("profile summary ({} timing): {} launch{}, {}",
                                             to_string(method), all.count,
                                             all.count == 1 ? "" : "es", format_duration(all.time))};
  for (auto& line : lay_out(cells)) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> render_untimed_table(const std::vector<std::pair<std::string, std::uint64_t>>& rows) {
  std::uint64_t count = 0;
  for (const auto& row : rows) count += row.second;
  std::vector<std::vector<std::string>> cells{{"kernel", "count"}};
  for (const auto& [name, n] : rows) cells.push_back({name, std::to_string(n)});
  std::vector<std::string> lines{fmt::format("untimed launches (no measurement): {}", count)};
  for (auto& line : lay_out(cells)) lines.push_back(std::move(line));
  return lines;
}

/// What the writer keeps between summaries, keyed by full kernel name: the name shown is chosen when
/// the summary is written, by the level in force then.
struct running_totals {
  std::array<std::map<std::string, totals, std::less<>>, 2> timed;  // indexed by timing_method
  std::map<std::string, std::uint64_t, std::less<>> untimed;

  void add(std::string_view kernel, const reading_outcome& outcome) {
    if (outcome.ticks) {
      auto& by_name = timed[static_cast<std::size_t>(outcome.method)];
      auto it = by_name.find(kernel);
      if (it == by_name.end()) it = by_name.emplace(std::string{kernel}, totals{}).first;
      it->second.time += outcome.ticks->length();
      ++it->second.count;
    } else {
      auto it = untimed.find(kernel);
      if (it == untimed.end()) it = untimed.emplace(std::string{kernel}, 0).first;
      ++it->second;
    }
  }

  bool empty() const {
    return timed[0].empty() && timed[1].empty() && untimed.empty();
  }

  /// The summary's lines: the device table, then the system table, then the untimed launches; each
  /// only when it has rows.
  std::vector<std::string> render(profile_level level) const {
    std::vector<std::string> lines;
    for (const auto method : {timing_method::device, timing_method::system}) {
      const auto& by_name = timed[static_cast<std::size_t>(method)];
      if (by_name.empty()) continue;
      std::vector<summary_row> rows;
      for (const auto& [name, sum] : by_name) rows.push_back({display_name(name, level), sum});
      for (auto& line : render_timed_table(method, std::move(rows))) lines.push_back(std::move(line));
    }
    if (!untimed.empty()) {
      std::vector<std::pair<std::string, std::uint64_t>> rows;
      for (const auto& [name, n] : untimed) rows.emplace_back(display_name(name, level), n);
      for (auto& line : render_untimed_table(rows)) lines.push_back(std::move(line));
    }
    return lines;
  }
};

// ------------------------------------------------------------------------------------------------
// Outputs.

/// Appends to a file launchwatch opened itself, rather than spdlog's file sink, which creates
/// missing directories (hiding a typo in the path) and retries a failed open.
class append_file_sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  append_file_sink(std::FILE* file, std::string path) : file_{file}, path_{std::move(path)} {}
  ~append_file_sink() override { std::fclose(file_); }
  append_file_sink(const append_file_sink&) = delete;
  append_file_sink& operator=(const append_file_sink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()) report_write_error();
  }
  void flush_() override {
    if (std::fflush(file_) != 0) report_write_error();
  }

 private:
  // Once per file: a full disk fails every line after the first.
  void report_write_error() {
    if (std::exchange(failed_, true)) return;
    const int code = errno;
    diagnostics().error(
        "The profiling logger could not write to `{}` ({}); lines from now on may be missing from "
        "it. Free space or choose another LAUNCHWATCH_LOG.",
        path_, std::strerror(code));
  }

  std::FILE* file_;
  std::string path_;
  bool failed_ = false;
};

std::shared_ptr<spdlog::logger> make_output_logger(spdlog::sink_ptr sink) {
  // Not registered with spdlog: spdlog::set_pattern and set_level apply to every registered logger,
  // and a program styling its own logs must not put timestamps into these report lines.
  auto logger = std::make_shared<spdlog::logger>("launchwatch.profile", std::move(sink));
  logger->set_pattern("%v");
  logger->set_level(spdlog::level::trace);
  logger->flush_on(spdlog::level::off);
  return logger;
}

/// Why `path` cannot be appended to, or nothing when it looks writable; creates nothing. For a log
/// the logger has no need to open yet (profiling is disabled), so a bad path is still reported when
/// the first client is created, without leaving an empty file behind.
std::optional<std::string> why_not_appendable(const std::filesystem::path& path) {
  const auto directory = path.has_parent_path() ? path.parent_path() : std::filesystem::path{"."};
  std::error_code ignored;
  if (!std::filesystem::is_directory(directory, ignored)) {
    return fmt::format("its directory `{}` does not exist", directory.string());
  }
  if (std::filesystem::is_directory(path, ignored)) return std::string{"it is a directory"};
  const auto& must_be_writable = std::filesystem::exists(path, ignored) ? path : directory;
  if (::access(must_be_writable.c_str(), W_OK) != 0) {
    return fmt::format("`{}` is not writable ({})", must_be_writable.string(), std::strerror(errno));
  }
  return std::nullopt;
}

/// Why `path` cannot be appended to, or nothing when it was opened into `file`.
std::optional<std::string> open_for_appending(const std::filesystem::path& path, std::FILE*& file) {
  if (auto why = why_not_appendable(path)) return why;
  file = std::fopen(path.c_str(), "a");
  if (file == nullptr) return std::string{std::strerror(errno)};
  return std::nullopt;
}

[[noreturn]] void throw_cannot_append(const std::filesystem::path& path, std::string_view setting,
                                      std::string_view why) {
  if (setting == log_variable) {
    throw configuration_error{fmt::format(
        "{} is set to `{}`, which launchwatch cannot open for appending: {}. Accepted values: {}.",
        log_variable, path.string(), why, accepted_logs)};
  }
  throw configuration_error{fmt::format(
      "profiling_logger::set_output cannot open `{}` for appending: {}. Give the path of a file in "
      "an existing directory that this process may write, or log_output::standard_error().",
      path.string(), why)};
}

/// Opens `output`. `setting` names where it was chosen, for the error: the environment variable, or
/// set_output.
std::shared_ptr<spdlog::logger> open_output(const log_output& output, std::string_view setting) {
  switch (output.where()) {
    case log_output::kind::standard_error:
      return make_output_logger(std::make_shared<spdlog::sinks::stderr_sink_mt>());
    case log_output::kind::standard_output:
      return make_output_logger(std::make_shared<spdlog::sinks::stdout_sink_mt>());
    case log_output::kind::stream:
      if (output.stream() == nullptr) {
        throw configuration_error{"profiling_logger::set_output was given a null stream"};
      }
      return make_output_logger(std::make_shared<spdlog::sinks::ostream_sink_mt>(*output.stream()));
    case log_output::kind::file: break;
  }
  std::FILE* file = nullptr;
  if (auto why = open_for_appending(output.path(), file)) {
    throw_cannot_append(output.path(), setting, *why);
  }
  return make_output_logger(std::make_shared<append_file_sink>(file, output.path().string()));
}

// ------------------------------------------------------------------------------------------------
// The environment.

std::optional<std::string> environment(std::string_view name) {
  const char* value = std::getenv(std::string{name}.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string{value};
}

std::optional<profile_level> profile_from_environment() {
  const auto value = environment(profile_variable);
  if (!value) return std::nullopt;
  if (*value == "disabled") return profile_level::disabled;
  if (*value == "minimal") return profile_level::execution_only;
  if (*value == "basic") return profile_level::basic;
  if (*value == "medium") return profile_level::medium;
  if (*value == "full") return profile_level::full;
  throw configuration_error{fmt::format(
      "{} is set to `{}`, which is not a profiling level. Accepted values: {} (minimal writes a "
      "line per launch without timing; unset means disabled).",
      profile_variable, *value, accepted_profiles)};
}

std::optional<log_output> output_from_environment() {
  const auto value = environment(log_variable);
  if (!value) return std::nullopt;
  if (*value == "stderr") return log_output::standard_error();
  if (*value == "stdout") return log_output::standard_output();
  return log_output::file(*value);
}

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
};

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
  std::lock_guard config{state.config_mutex};
  stop_writer(state, std::nullopt, false);
  std::lock_guard lock{state.mutex};
  profiling_logger::instance().level_.store(profile_level::disabled, std::memory_order_relaxed);
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
