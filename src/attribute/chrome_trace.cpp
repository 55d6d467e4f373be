// Chrome trace JSON: host scopes and launches on thread tracks, kernels on per-stream device
// tracks, and an arrow from each launch to its kernel.

#include <launchwatch/attribute/render.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
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

/// One event on a track, with what orders it there.
struct event {
  std::int64_t ts;
  int rank;  // at one instant: slices before the flow events bound to them
  std::int64_t dur;
  std::string json;
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
      host_tracks_.push_back(tracks_.size());
      tracks_.push_back(track{host_pid, static_cast<int>(t + 1), pass_.threads[t].name, {}});
      for (const auto& interval : pass_.threads[t].scopes) add_scope(tracks_.back(), interval);
    }
    place_kernels();
    for (std::size_t i = 0; i < pass_.launches.size(); ++i) add_launch(i);
  }

  void write(std::ostream& out) {
    out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    const char* separator = "";
    auto emit = [&](const std::string& json) {
      out << separator << json;
      separator = ",\n";
    };
    for (std::size_t p = 0; p < processes_.size(); ++p) {
      const auto& proc = processes_[p];
      emit(fmt::format(R"({{"ph":"M","pid":{},"tid":0,"name":"process_name","args":{{"name":{}}}}})",
                       proc.pid, json_string(proc.name)));
      emit(fmt::format(R"({{"ph":"M","pid":{},"tid":0,"name":"process_sort_index","args":{{"sort_index":{}}}}})",
                       proc.pid, p));
    }
    for (const auto& t : tracks_) {
      emit(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})",
                       t.pid, t.tid, json_string(t.name)));
      emit(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})",
                       t.pid, t.tid, t.tid));
    }
    for (auto& t : tracks_) {
      // Time order, and at one instant the enclosing slice first, so every reader sees slices
      // nest and flow events land inside the slice they bind to.
      std::stable_sort(t.events.begin(), t.events.end(), [](const event& a, const event& b) {
        return std::tie(a.ts, a.rank, b.dur) < std::tie(b.ts, b.rank, a.dur);
      });
      for (const auto& e : t.events) emit(e.json);
    }
    out << "\n]}\n";
  }

 private:
  static constexpr int host_pid = 1;

  std::int64_t since_origin(instant at) const {
    return std::chrono::duration_cast<nanoseconds>(at - pass_.origin).count();
  }

  std::string kernel_label(std::uint32_t kernel) const {
    return format_kernel_name(pass_.kernels.at(kernel), options_.kernel_names);
  }

  std::string scope_text(const std::optional<std::uint32_t>& scope) const {
    return scope ? pass_.scope_path_text(*scope) : std::string{};
  }

  void add_scope(track& t, const scope_interval& interval) {
    const auto ts = since_origin(interval.start);
    const auto dur = std::max<std::int64_t>(0, since_origin(interval.end) - ts);
    t.events.push_back(event{
        ts, 0, dur,
        fmt::format(R"({{"ph":"X","cat":"scope","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"path":{}}}}})",
                    json_string(pass_.scopes.at(interval.scope).name), t.pid, t.tid, micros(ts),
                    micros(dur), json_string(pass_.scope_path_text(interval.scope)))});
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
    auto& host = tracks_[host_tracks_.at(launch.thread)];
    const auto& stream = pass_.streams.at(launch.stream);
    const auto label = kernel_label(launch.kernel);
    const auto& kernel = pass_.kernels.at(launch.kernel);
    const auto ts = since_origin(launch.issued);
    const auto dur = std::max<std::int64_t>(0, since_origin(launch.returned) - ts);
    std::string flags;
    if (launch.dry_run) flags += R"(,"dry_run":true)";
    if (launch.captured) flags += R"(,"captured":true)";
    host.events.push_back(event{
        ts, 0, dur,
        fmt::format(R"({{"ph":"X","cat":"launch","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"kernel":{},"stream":{},"grid":{},"cube":{}{}}}}})",
                    json_string(label), host.pid, host.tid, micros(ts), micros(dur), json_string(kernel),
                    json_string(fmt::format("{} device {} stream {}",
                                       stream.backend.empty() ? "unknown" : stream.backend,
                                       stream.device, stream.stream)),
                    grid_text(launch.cube_count), grid_text(launch.cube_dim), flags)});

    if (kernel_track_[index] == no_track) return;
    auto& device = tracks_[kernel_track_[index]];
    const auto& timing = *launch.timing;
    const auto start = since_origin(timing.ticks->start());
    const auto length = std::max<std::int64_t>(0, since_origin(timing.ticks->end()) - start);
    device.events.push_back(event{
        start, 0, length,
        fmt::format(R"({{"ph":"X","cat":"kernel","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"kernel":{},"scope":{},"launched_by":{},"method":{}}}}})",
                    json_string(label), device.pid, device.tid, micros(start), micros(length),
                    json_string(kernel), json_string(scope_text(launch.scope)),
                    json_string(pass_.threads.at(launch.thread).name),
                    json_string(to_string(timing.method)))});

    // Each end of the arrow sits inside its slice (halfway), not on an edge, so it binds to that
    // slice and not to one that ends or begins at the same instant. A slice of zero length has no
    // inside: readers would bind the arrow to whatever encloses it, so it gets none.
    if (dur == 0 || length == 0) return;
    const auto id = index + 1;
    const auto from = ts + dur / 2;
    const auto to = start + length / 2;
    host.events.push_back(event{
        from, 1, 0,
        fmt::format(R"({{"ph":"s","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":{},"bp":"e"}})",
                    id, host.pid, host.tid, micros(from))});
    device.events.push_back(event{
        to, 1, 0,
        fmt::format(R"({{"ph":"f","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":{},"bp":"e"}})",
                    id, device.pid, device.tid, micros(to))});
  }

  static constexpr std::size_t no_track = static_cast<std::size_t>(-1);

  const pass_record& pass_;
  const trace_options& options_;
  std::vector<process> processes_;
  std::vector<track> tracks_;
  std::vector<std::size_t> host_tracks_;
  std::vector<std::size_t> kernel_track_;
  std::map<int, int> next_tid_;
};

}  // namespace

void write_chrome_trace(std::ostream& out, const pass_record& pass, const trace_options& options) {
  trace_builder builder{pass, options};
  builder.build();
  builder.write(out);
}

}  // namespace launchwatch
