// Chrome trace JSON: host scopes and launches on thread tracks, kernels on per-stream device
// tracks, and an arrow from each launch to its kernel.

#include <launchwatch/report/chrome_trace.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace launchwatch {
namespace {

using std::chrono::nanoseconds;

/// `text` as a JSON string. Names are the caller's bytes, so what is not UTF-8 is replaced rather
/// than failing the whole trace.
std::string json_string(std::string_view text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Nanoseconds as the format's microseconds, exactly: three decimals, no floating point.
std::string micros(std::int64_t ns) {
  const bool negative = ns < 0;
  const auto magnitude = negative ? -static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", negative ? "-" : "", magnitude / 1000, magnitude % 1000);
}

std::string grid_text(const std::array<std::uint32_t, 3>& extent) {
  return fmt::format("[{},{},{}]", extent[0], extent[1], extent[2]);
}

/// What an event is; it is formatted only when written, from the pass it points into.
enum class event_kind : std::uint8_t { scope, launch, kernel, flow_start, flow_finish };

/// One event on a track, with what orders it there: a few words, not its text, so a pass of
/// millions of launches is not held a second time as strings (review 20).
struct event {
  std::int64_t ts;
  int rank;  // at one instant: slices before the flow events bound to them
  std::int64_t dur;
  event_kind kind;
  std::uint32_t index;   // the launch, or the scope interval within its thread
  std::uint32_t thread;  // a scope interval's thread
};

/// A thread track: a host thread, or one lane of a device stream.
struct track {
  int pid;
  int tid;
  std::string name;
  std::vector<event> events;
};

struct process {
  int pid;
  std::string name;
};

class trace_builder {
 public:
  trace_builder(const pass_record& pass, const trace_options& options)
      : pass_{pass}, options_{options} {}

  void build() {
    processes_.push_back(process{host_pid, "host"});
    for (std::size_t t = 0; t < pass_.threads.size(); ++t) {
      // Replayed graph nodes have no host side: their list is no track.
      if (pass_.threads[t].replays) {
        host_tracks_.push_back(no_track);
        continue;
      }
      host_tracks_.push_back(tracks_.size());
      tracks_.push_back(track{host_pid, static_cast<int>(t + 1), pass_.threads[t].name, {}});
      const auto& scopes = pass_.threads[t].scopes;
      for (std::uint32_t i = 0; i < scopes.size(); ++i) add_scope(tracks_.back(), static_cast<std::uint32_t>(t), i);
    }
    place_kernels();
    flow_ends_.assign(pass_.launches.size(), {0, 0});
    for (std::size_t i = 0; i < pass_.launches.size(); ++i) add_launch(i);
  }

  /// Writes the trace, each event formatted into one reused buffer and written out as it goes.
  trace_stats write(std::ostream& out, std::size_t max_events) {
    trace_stats stats;
    const auto& beyond = options_.beyond_prefix;
    stats.beyond_prefix = beyond;
    for (const auto& t : tracks_) stats.events += t.events.size();
    const auto cutoff = cutoff_for(max_events, stats.events);
    if (cutoff) {
      for (auto& t : tracks_) std::erase_if(t.events, [&](const event& e) { return !kept(e, *cutoff); });
      std::size_t kept_events = 0;
      for (const auto& t : tracks_) kept_events += t.events.size();
      stats.dropped = stats.events - kept_events;
      stats.events = kept_events;
      stats.dropped_from = nanoseconds{*cutoff};
    }
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    const char* separator = "";
    fmt::memory_buffer buffer;
    auto emit = [&] {
      out << separator;
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
      separator = ",\n";
    };
    for (std::size_t p = 0; p < processes_.size(); ++p) {
      const auto& proc = processes_[p];
      // A trace cut short says so where a reader looks first: the host process's name.
      std::string name = proc.name;
      if (proc.pid == host_pid && (stats.dropped > 0 || beyond.any())) {
        std::string said;
        if (stats.dropped > 0) {
          said = fmt::format("trace cut at {} events: {} later events dropped", max_events, stats.dropped);
        }
        if (beyond.any()) {
          said += fmt::format("{}the pass's beginning: {} later launches and {} scope intervals only in "
                              "the summary",
                              said.empty() ? "" : "; ", beyond.launches, beyond.scope_intervals);
        }
        name = fmt::format("{} ({})", proc.name, said);
      }
      fmt::format_to(std::back_inserter(buffer),
                     R"({{"ph":"M","pid":{},"tid":0,"name":"process_name","args":{{"name":{}}}}})",
                     proc.pid, json_string(name));
      emit();
      fmt::format_to(std::back_inserter(buffer),
                     R"({{"ph":"M","pid":{},"tid":0,"name":"process_sort_index","args":{{"sort_index":{}}}}})",
                     proc.pid, p);
      emit();
    }
    if (stats.dropped > 0 || beyond.any()) {
      fmt::format_to(std::back_inserter(buffer),
                     R"({{"ph":"M","pid":{},"tid":0,"name":"launchwatch_dropped_events","args":{{"max_events":{},"events":{},"dropped_events":{},"dropped_from_us":{})",
                     host_pid, max_events, stats.events, stats.dropped, micros(stats.dropped_from.count()));
      if (beyond.any()) {
        fmt::format_to(std::back_inserter(buffer),
                       R"(,"launches_beyond_prefix":{},"scope_intervals_beyond_prefix":{},"prefix_ends_us":{})",
                       beyond.launches, beyond.scope_intervals,
                       micros(beyond.from.value_or(nanoseconds{0}).count()));
      }
      fmt::format_to(std::back_inserter(buffer), "}}}}");
      emit();
    }
    for (const auto& t : tracks_) {
      fmt::format_to(std::back_inserter(buffer),
                     R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})",
                     t.pid, t.tid, json_string(t.name));
      emit();
      fmt::format_to(std::back_inserter(buffer),
                     R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
                     t.pid, t.tid, t.tid);
      emit();
    }
    for (auto& t : tracks_) {
      // Time order, and at one instant the enclosing slice first, so every reader sees slices
      // nest and flow events land inside the slice they bind to.
      std::stable_sort(t.events.begin(), t.events.end(), [](const event& a, const event& b) {
        return std::tie(a.ts, a.rank, b.dur) < std::tie(b.ts, b.rank, a.dur);
      });
      for (const auto& e : t.events) {
        format(buffer, t, e);
        emit();
      }
    }
    out << "\n]}\n";
    return stats;
  }

 private:
  static constexpr int host_pid = 1;

  std::int64_t since_origin(instant at) const {
    return std::chrono::duration_cast<nanoseconds>(at - pass_.origin).count();
  }

  std::string kernel_label(std::uint32_t kernel) const {
    return format_kernel_name(pass_.kernels.at(kernel), options_.kernel_names);
  }

  void add_scope(track& t, std::uint32_t thread, std::uint32_t index) {
    const auto& interval = pass_.threads[thread].scopes[index];
    const auto ts = since_origin(interval.start);
    const auto dur = std::max<std::int64_t>(0, since_origin(interval.end) - ts);
    t.events.push_back(event{ts, 0, dur, event_kind::scope, index, thread});
  }

  /// Where a capped trace stops: the instant before which at most `max_events` events start, or
  /// none when every event fits. Everything from there on is dropped, so what is written is the
  /// pass's beginning, whole.
  std::optional<std::int64_t> cutoff_for(std::size_t max_events, std::size_t events) const {
    if (max_events == 0 || events <= max_events) return std::nullopt;
    std::vector<std::int64_t> starts;
    starts.reserve(events);
    for (const auto& t : tracks_) {
      for (const auto& e : t.events) starts.push_back(e.ts);
    }
    std::nth_element(starts.begin(), starts.begin() + static_cast<std::ptrdiff_t>(max_events), starts.end());
    return starts[max_events];
  }

  /// Whether `e` is written in a trace cut at `cutoff`. An arrow is written only when both its
  /// ends are, so none is left half drawn.
  bool kept(const event& e, std::int64_t cutoff) const {
    if (e.ts >= cutoff) return false;
    if (e.kind == event_kind::flow_start || e.kind == event_kind::flow_finish) {
      return flow_ends_[e.index].first < cutoff && flow_ends_[e.index].second < cutoff;
    }
    return true;
  }

  /// `make(index)` as a JSON string, made once per index of its table: a pass of millions of
  /// events names a few kernels, scopes, streams and threads, so each event's text is not escaped
  /// (and a kernel's name shortened) again.
  template <class Make>
  static const std::string& quoted(std::vector<std::optional<std::string>>& cache, std::size_t index,
                                   Make make) {
    if (cache.size() <= index) cache.resize(index + 1);
    auto& entry = cache[index];
    if (!entry) entry = json_string(make(index));
    return *entry;
  }

  void format(fmt::memory_buffer& buffer, const track& t, const event& e) {
    auto to = std::back_inserter(buffer);
    const auto kernel_label_of = [&](std::size_t k) { return kernel_label(static_cast<std::uint32_t>(k)); };
    const auto kernel_name_of = [&](std::size_t k) { return std::string{pass_.kernels.at(k)}; };
    const auto scope_path_of = [&](std::size_t s) { return pass_.scope_path_text(static_cast<std::uint32_t>(s)); };
    switch (e.kind) {
      case event_kind::scope: {
        const auto& interval = pass_.threads[e.thread].scopes[e.index];
        fmt::format_to(to, R"({{"ph":"X","cat":"scope","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"path":{}}}}})",
                       quoted(scope_names_, interval.scope, [&](std::size_t s) { return pass_.scopes.at(s).name; }),
                       t.pid, t.tid, micros(e.ts), micros(e.dur), quoted(scope_paths_, interval.scope, scope_path_of));
        return;
      }
      case event_kind::launch: {
        const auto& launch = pass_.launches[e.index];
        fmt::format_to(to, R"({{"ph":"X","cat":"launch","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"kernel":{},"stream":{},"grid":{},"cube":{}{}{}}}}})",
                       quoted(kernel_labels_, launch.kernel, kernel_label_of), t.pid, t.tid, micros(e.ts),
                       micros(e.dur), quoted(kernel_names_, launch.kernel, kernel_name_of),
                       quoted(stream_names_, launch.stream,
                              [&](std::size_t s) {
                                const auto& stream = pass_.streams.at(s);
                                return fmt::format("{} device {} stream {}",
                                                   stream.backend.empty() ? "unknown" : stream.backend,
                                                   stream.device, stream.stream);
                              }),
                       grid_text(launch.cube_count), grid_text(launch.cube_dim),
                       launch.dry_run ? R"(,"dry_run":true)" : "",
                       launch.captured ? R"(,"captured":true)" : "");
        return;
      }
      case event_kind::kernel: {
        const auto& launch = pass_.launches[e.index];
        // Index 0 of the scope cache is "outside every scope"; scope s is at s + 1.
        const auto& scope = quoted(launch_scopes_, launch.scope ? *launch.scope + 1 : 0, [&](std::size_t s) {
          return s == 0 ? std::string{} : scope_path_of(s - 1);
        });
        fmt::format_to(to, R"({{"ph":"X","cat":"kernel","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"kernel":{},"scope":{},"launched_by":{},"method":{}}}}})",
                       quoted(kernel_labels_, launch.kernel, kernel_label_of), t.pid, t.tid, micros(e.ts),
                       micros(e.dur), quoted(kernel_names_, launch.kernel, kernel_name_of), scope,
                       quoted(thread_names_, launch.thread, [&](std::size_t h) { return pass_.threads.at(h).name; }),
                       quoted(method_names_, static_cast<std::size_t>(launch.timing->method), [&](std::size_t) {
                         return std::string{to_string(launch.timing->method)};
                       }));
        return;
      }
      case event_kind::flow_start:
      case event_kind::flow_finish:
        fmt::format_to(to, R"({{"ph":"{}","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":{},"bp":"e"}})",
                       e.kind == event_kind::flow_start ? 's' : 'f', e.index + 1, t.pid, t.tid,
                       micros(e.ts));
        return;
    }
  }

  /// Lays each stream's timed kernels on lanes: the first lane where it starts after the last
  /// kernel there ended. A stream runs in order, so everything lands on lane 0 unless the device's
  /// timestamps say two kernels overlapped; those go on extra lanes rather than break nesting.
  void place_kernels() {
    std::vector<std::vector<std::size_t>> by_stream(pass_.streams.size());
    for (std::size_t i = 0; i < pass_.launches.size(); ++i) {
      const auto& launch = pass_.launches[i];
      if (launch.timing && launch.timing->ticks && !launch.dry_run) {
        by_stream.at(launch.stream).push_back(i);
      }
    }
    std::map<std::pair<std::string, int>, int> device_pids;
    kernel_track_.assign(pass_.launches.size(), no_track);
    for (std::size_t s = 0; s < by_stream.size(); ++s) {
      auto& launches = by_stream[s];
      if (launches.empty()) continue;
      const auto& stream = pass_.streams[s];
      const auto key = std::pair{stream.backend, stream.device};
      auto pid = device_pids.find(key);
      if (pid == device_pids.end()) {
        const int next = host_pid + 1 + static_cast<int>(device_pids.size());
        pid = device_pids.emplace(key, next).first;
        processes_.push_back(process{
            next, stream.backend.empty() ? fmt::format("unknown backend, device {}", stream.device)
                                         : fmt::format("{} device {}", stream.backend, stream.device)});
        next_tid_[next] = 1;
      }
      std::stable_sort(launches.begin(), launches.end(), [&](std::size_t a, std::size_t b) {
        const auto& ta = *pass_.launches[a].timing->ticks;
        const auto& tb = *pass_.launches[b].timing->ticks;
        if (ta.start() != tb.start()) return ta.start() < tb.start();
        return ta.end() > tb.end();
      });
      std::vector<std::pair<std::size_t, instant>> lanes;  // track index, end of its last kernel
      for (const auto i : launches) {
        const auto& ticks = *pass_.launches[i].timing->ticks;
        auto lane = std::find_if(lanes.begin(), lanes.end(),
                                 [&](const auto& l) { return l.second <= ticks.start(); });
        if (lane == lanes.end()) {
          const int tid = next_tid_[pid->second]++;
          const auto name = lanes.empty()
                                ? fmt::format("stream {}", stream.stream)
                                : fmt::format("stream {} (overlap {})", stream.stream, lanes.size());
          tracks_.push_back(track{pid->second, tid, name, {}});
          lanes.emplace_back(tracks_.size() - 1, ticks.end());
          lane = lanes.end() - 1;
        }
        lane->second = ticks.end();
        kernel_track_[i] = lane->first;
      }
    }
  }

  void add_launch(std::size_t index) {
    const auto& launch = pass_.launches[index];
    const auto i = static_cast<std::uint32_t>(index);
    // Nothing was issued for a replayed graph node: no host slice, only its kernel.
    track* host = launch.replayed ? nullptr : &tracks_[host_tracks_.at(launch.thread)];
    const auto ts = since_origin(launch.issued);
    const auto dur = std::max<std::int64_t>(0, since_origin(launch.returned) - ts);
    if (host != nullptr) host->events.push_back(event{ts, 0, dur, event_kind::launch, i, 0});

    if (kernel_track_[index] == no_track) return;
    auto& device = tracks_[kernel_track_[index]];
    const auto& timing = *launch.timing;
    const auto start = since_origin(timing.ticks->start());
    const auto length = std::max<std::int64_t>(0, since_origin(timing.ticks->end()) - start);
    device.events.push_back(event{start, 0, length, event_kind::kernel, i, 0});

    // Each end of the arrow sits inside its slice (halfway), not on an edge, so it binds to that
    // slice and not to one that ends or begins at the same instant. A slice of zero length has no
    // inside: readers would bind the arrow to whatever encloses it, so it gets none.
    if (host == nullptr || dur == 0 || length == 0) return;
    const auto from = ts + dur / 2;
    const auto to = start + length / 2;
    flow_ends_[index] = {from, to};
    host->events.push_back(event{from, 1, 0, event_kind::flow_start, i, 0});
    device.events.push_back(event{to, 1, 0, event_kind::flow_finish, i, 0});
  }

  static constexpr std::size_t no_track = static_cast<std::size_t>(-1);

  const pass_record& pass_;
  const trace_options& options_;
  std::vector<process> processes_;
  std::vector<track> tracks_;
  std::vector<std::size_t> host_tracks_;
  std::vector<std::size_t> kernel_track_;
  std::vector<std::pair<std::int64_t, std::int64_t>> flow_ends_;  // per launch with an arrow
  std::map<int, int> next_tid_;
  // Each table entry's text as a JSON string, made when first written (quoted()).
  std::vector<std::optional<std::string>> scope_names_;
  std::vector<std::optional<std::string>> scope_paths_;
  std::vector<std::optional<std::string>> launch_scopes_;
  std::vector<std::optional<std::string>> kernel_labels_;
  std::vector<std::optional<std::string>> kernel_names_;
  std::vector<std::optional<std::string>> stream_names_;
  std::vector<std::optional<std::string>> thread_names_;
  std::vector<std::optional<std::string>> method_names_;
};

}  // namespace

chrome_trace_writer::chrome_trace_writer(const trace_options& options)
    : report_writer{"chrome-trace", default_file_name}, options_{options} {}

void chrome_trace_writer::do_write(std::ostream& out, const pass_record& pass) {
  trace_builder builder{pass, options_};
  builder.build();
  stats_ = builder.write(out, options_.max_events);
}

trace_stats write_chrome_trace(std::ostream& out, const pass_record& pass,
                               const trace_options& options) {
  chrome_trace_writer writer{options};
  writer.write(out, pass);
  return writer.stats();
}

}  // namespace launchwatch
