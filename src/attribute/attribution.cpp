// The attribution observer: recording on the launch path, reading and assembling in collect().

#include <launchwatch/attribute/attribution.hpp>
#include <launchwatch/observe.hpp>

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "aggregate_fold.hpp"
#include "core/interface/diagnostics.hpp"
#include "recorder.hpp"
#include "scope_paths.hpp"

namespace launchwatch {

attribution::attribution(attribution_options options)
    : recorder_{std::make_unique<detail::recorder>(options)} {
  detail::register_recorder(*recorder_);
}

attribution::~attribution() { detail::unregister_recorder(*recorder_); }

void attribution::launched(std::string_view kernel) {
  launch_info info;
  info.kernel = kernel;
  info.backend = {};  // only the name is known: its stream is reported as unknown
  launched_with(info);
}

namespace {

/// Keeps the path a captured launch had, for its graph's replays (attribution::replayed).
void remember_capture(detail::recorder& r, std::uint64_t launch_id, detail::path_id path) {
  try {
    std::lock_guard lock{r.captures_mutex};
    if (!r.capture_paths.insert_or_assign(launch_id, path).second) return;
    r.capture_order.push_back(launch_id);
    if (r.capture_order.size() > detail::recorder::captures_kept) {
      r.capture_paths.erase(r.capture_order.front());
      r.capture_order.pop_front();
    }
  } catch (...) {
    // Out of memory: its replays go outside every scope, the launch is recorded.
  }
}

/// Records `info`'s launch in `log`. The caller holds `log.mutex`.
void record_launch(detail::recorder& r, detail::thread_log& log, const launch_info& info,
                   detail::path_id path, instant now) {
  auto& entry = log.launches.emplace(r.pools->launches);
  entry.kernel = info.kernel;
  entry.backend = info.backend;
  entry.stream = info.stream;
  entry.device = info.device;
  entry.path = path;
  entry.cube_count = info.cube_count;
  entry.cube_dim = info.cube_dim;
  entry.issued = now;
  entry.returned = now;
  entry.dry_run = info.dry_run;
  entry.capturing = info.capturing;
  if (r.pools->aggregate_only) {
    // Once the prefix is full: a relaxed load and a counter under the lock already held.
    entry.in_prefix = r.pools->prefix.take(detail::prefix_room::launch_events, now);
    if (!entry.in_prefix) ++log.left_out_launches;
  }
  // A launch recorded into a graph has its profile refused, so no measurement follows it.
  log.awaiting = info.capturing ? nullptr : &entry;
  if (info.capturing && info.launch_id != 0) remember_capture(r, info.launch_id, path);
}

/// Records a replayed graph node in the replay log. The caller holds `log.mutex`.
void record_replay(detail::recorder& r, detail::thread_log& log, const replayed_node& node,
                   detail::path_id path) {
  auto& entry = log.launches.emplace(r.pools->launches);
  entry.kernel = node.kernel;
  entry.backend = "cuda";
  entry.stream = node.stream;
  entry.device = node.device;
  entry.path = path;
  entry.issued = node.ticks.start();
  entry.returned = node.ticks.start();
  entry.pending.emplace([ticks = node.ticks]() -> std::optional<profile_ticks> { return ticks; },
                        timing_method::device);
  entry.method = timing_method::device;
  entry.state = detail::measurement_state::pending;
  entry.replayed = true;
  if (r.pools->aggregate_only) {
    entry.in_prefix = r.pools->prefix.take(detail::prefix_room::replayed_events, entry.issued);
    if (!entry.in_prefix) ++log.left_out_launches;
  }
}

}  // namespace

void attribution::launched_with(const launch_info& info) {
  auto& r = *recorder_;
  auto& log = detail::log_for(r);
  const instant now = log.clock();
  detail::refresh_launch_scopes();
  detail::path_id path = detail::current_path();
  if (path == detail::no_path && r.unscoped == unscoped_launches::sole_scoped_thread) {
    path = detail::sole_scoped_thread_path();
  }
  auto next = detail::after_hand_over::nothing;
  {
    std::lock_guard lock{log.mutex};
    if (r.pools->aggregate_only && ++log.unfolded > detail::fold_every)
      next = detail::hand_over(log);
    record_launch(r, log, info, path, now);
  }
  // Outside the log's lock: the fold thread, or this thread when it cannot, takes it to fold.
  detail::finish_hand_over(r, log, next);
}

void attribution::replayed(const replayed_node& node) {
  auto& r = *recorder_;
  detail::path_id path = detail::no_path;
  {
    std::lock_guard lock{r.captures_mutex};
    if (const auto found = r.capture_paths.find(node.captured_launch);
        found != r.capture_paths.end()) {
      path = found->second;
    }
  }
  auto& log = r.replay_log();
  auto next = detail::after_hand_over::nothing;
  {
    std::lock_guard lock{log.mutex};
    if (log.closed) return;
    if (r.pools->aggregate_only && ++log.unfolded > detail::fold_every)
      next = detail::hand_over(log);
    record_replay(r, log, node, path);
  }
  detail::finish_hand_over(r, log, next);
}

timing_request attribution::timing() const { return recorder_->timing; }

bool attribution::installed() const { return launch_observation::is_installed(*this); }

bool attribution::measurements_may_come() const {
  return recorder_->timing != timing_request::none && installed();
}

namespace {

/// The launch a measurement of `kernel` belongs to: the thread's launch still awaiting one. A
/// measurement follows its launch on the same thread; anything else belongs to a launch this
/// attribution never saw, and is counted as unpaired (null is returned). The caller holds
/// `log.mutex`.
template <class Log>
auto* take_awaiting(Log& log, std::string_view kernel) {
  auto* entry = std::exchange(log.awaiting, nullptr);
  if (entry == nullptr || entry->kernel != kernel) {
    ++log.unpaired;
    return decltype(entry){nullptr};
  }
  return entry;
}

/// Stamps when `entry`'s launch returned, if anything will read it: only a trace does (a launch's
/// host slice), so an aggregate-only launch outside the trace prefix, folded into totals that never
/// read it, skips the clock read. The caller holds the log's lock (the entry's `in_prefix` is set
/// under it, and cleared by a collect that leaves the launch to the next pass).
void stamp_returned(const detail::recorder& r, const detail::thread_log& log,
                    detail::launch_entry& entry) noexcept {
  if (!r.pools->aggregate_only || entry.in_prefix) entry.returned = log.clock();
}

}  // namespace

void attribution::profiled(std::string_view kernel, profile_duration profile) {
  auto& log = detail::log_for(*recorder_);
  std::lock_guard lock{log.mutex};
  auto* entry = take_awaiting(log, kernel);
  if (entry == nullptr) return;
  entry->method = profile.method();
  entry->pending.emplace(std::move(profile));
  entry->state = detail::measurement_state::pending;
  stamp_returned(*recorder_, log, *entry);
}

void attribution::timed(std::string_view kernel, std::chrono::nanoseconds length,
                        timing_method method) {
  auto& log = detail::log_for(*recorder_);
  std::lock_guard lock{log.mutex};
  auto* entry = take_awaiting(log, kernel);
  if (entry == nullptr) return;
  entry->length = length;
  entry->method = method;
  entry->state = detail::measurement_state::length;
  stamp_returned(*recorder_, log, *entry);
}

namespace {

/// Builds a pass_record's tables while its launches are added.
class pass_builder {
 public:
  explicit pass_builder(pass_record& pass) : pass_{pass} {}

  std::uint32_t kernel(std::string_view name) {
    const auto [found, added] =
        kernels_.try_emplace(name, static_cast<std::uint32_t>(pass_.kernels.size()));
    if (added) pass_.kernels.emplace_back(name);
    return found->second;
  }

  std::uint32_t stream(std::string_view backend, int device, std::uint64_t stream) {
    const auto [found, added] = streams_.try_emplace(
        std::tuple{backend, device, stream}, static_cast<std::uint32_t>(pass_.streams.size()));
    if (added) pass_.streams.push_back(stream_info{std::string{backend}, device, stream});
    return found->second;
  }

  std::optional<std::uint32_t> scope(detail::path_id path) {
    if (path == detail::no_path) return std::nullopt;
    if (const auto found = scopes_.find(path); found != scopes_.end()) return found->second;
    const auto node = detail::read_path(path);
    // The parent first, so a scope's parent always comes before it in the table.
    const auto parent = scope(node.parent);
    const auto index = static_cast<std::uint32_t>(pass_.scopes.size());
    pass_.scopes.push_back(scope_info{std::string{node.name}, parent});
    scopes_.emplace(path, index);
    return index;
  }

 private:
  pass_record& pass_;
  std::unordered_map<std::string_view, std::uint32_t> kernels_;
  std::map<std::tuple<std::string_view, int, std::uint64_t>, std::uint32_t> streams_;
  std::unordered_map<detail::path_id, std::uint32_t> scopes_;
};

/// What collect took from one thread's log.
struct taken_log {
  std::shared_ptr<detail::thread_log> log;
  detail::chunk<detail::launch_entry>* launches = nullptr;
  detail::chunk<detail::interval_entry>* intervals = nullptr;
  std::size_t unpaired = 0;
};

/// Adds the host thread `log` recorded for to `pass`, named as reports name it; returns its index.
std::uint32_t add_host_thread(pass_record& pass, const detail::thread_log& log) {
  const auto thread = static_cast<std::uint32_t>(pass.threads.size());
  auto& host = pass.threads.emplace_back();
  host.replays = log.replays;
  host.name = host.replays ? "CUDA graph replays" : "host thread " + std::to_string(log.index);
  return thread;
}

/// Adds the scope intervals of `intervals` to `pass`'s thread `thread`. Called after the thread's
/// launches, so the scope table is filled in the same order by every collect.
void add_intervals(pass_record& pass, pass_builder& tables, std::uint32_t thread,
                   const detail::chunk<detail::interval_entry>* intervals) {
  auto& host = pass.threads[thread];
  for (const auto* c = intervals; c != nullptr; c = c->next) {
    for (const auto& entry : c->items) {
      if (const auto scope = tables.scope(entry.path)) {
        host.scopes.push_back(scope_interval{*scope, entry.start, entry.end});
      }
    }
  }
}

}  // namespace

pass_record attribution::collect() {
  auto& r = *recorder_;
  if (r.pools->aggregate_only) {
    throw std::logic_error{
        "attribution::collect: this attribution keeps only the aggregate "
        "(attribution_options::aggregate_only), so there is no pass_record to collect; call "
        "collect_summary() instead"};
  }
  // Asked before any lock is taken: it reads the observer slot, which is ordered before every
  // attribution lock (fork_locks.hpp).
  const bool measurements_may_come = this->measurements_may_come();
  // Held while the records are taken, not while they are read: reading waits for kernels, and a
  // fork() takes this lock (fork_locks.hpp: recorder_collect).
  std::unique_lock collecting{r.collect_mutex};

  std::vector<taken_log> taken;
  {
    std::lock_guard lock{r.logs_mutex};
    taken.reserve(r.logs.size());
    for (const auto& log : r.logs) taken.push_back(taken_log{log});
  }
  // A thread can be caught between reporting a launch and handing over its measurement (it is
  // submitting the kernel). Taking that launch now would part it from its measurement, so it stays
  // in the log for the next pass, unless its measurement can no longer come: the launch path
  // delivers a measurement only to the installed observer, and only when that observer asked for
  // timing, so none comes when this attribution asked for none or is not the installed observer
  // (nothing is, or another replaced it). Nor does one come for the calling thread's own launch
  // (it is here, not inside a launch), or for a launch recorded into a graph (never awaiting).
  const auto this_thread = detail::thread_token();
  std::optional<instant> earliest_left;
  for (auto& t : taken) {
    auto& log = *t.log;
    std::lock_guard lock{log.mutex};
    std::optional<detail::launch_entry> in_flight;
    // `awaiting` is always the last launch the thread recorded (see launched_with).
    if (measurements_may_come && log.awaiting != nullptr && log.owner != this_thread &&
        log.awaiting == log.launches.last()) {
      in_flight.emplace(log.launches.take_last());
    }
    t.launches = log.launches.release();
    t.intervals = log.intervals.release();
    log.awaiting = nullptr;
    t.unpaired = std::exchange(log.unpaired, 0);
    if (!in_flight) continue;
    const instant issued = in_flight->issued;
    try {
      log.awaiting = &log.launches.emplace(r.pools->launches, std::move(*in_flight));
      earliest_left = std::min(earliest_left.value_or(issued), issued);
    } catch (...) {
      // No memory for the next pass's first chunk: the launch goes into this pass, untimed, back
      // where it was (its chunk has room, since it was just taken from there).
      auto* last = t.launches;
      while (last->next != nullptr) last = last->next;
      last->items.push_back(std::move(*in_flight));
    }
  }

  // The chunks go back to the pool however this ends, emptied, for the next pass to fill.
  struct give_back_chunks {
    detail::recorder& r;
    std::vector<taken_log>& taken;
    ~give_back_chunks() {
      for (auto& t : taken) {
        r.pools->launches.give_back(std::exchange(t.launches, nullptr));
        r.pools->intervals.give_back(std::exchange(t.intervals, nullptr));
      }
    }
  } on_exit{r, taken};

  pass_record pass;
  // The next pass starts now, or with the launch left to it if that was issued earlier, so that
  // every launch of a pass is on its timeline.
  const instant next_origin = r.clock();
  pass.origin = r.pools->origin();
  r.pools->begin_pass(std::min(next_origin, earliest_left.value_or(next_origin)));
  collecting.unlock();
  pass.timing = r.timing;
  pass_builder tables{pass};
  std::string first_failure;

  for (auto& t : taken) {
    pass.lost.unpaired += t.unpaired;
    if (t.launches == nullptr && t.intervals == nullptr) continue;
    const auto thread = add_host_thread(pass, *t.log);
    for (auto* c = t.launches; c != nullptr; c = c->next) {
      for (auto& entry : c->items) {
        launch_record launch;
        launch.kernel = tables.kernel(entry.kernel);
        launch.scope = tables.scope(entry.path);
        launch.thread = thread;
        launch.stream = tables.stream(entry.backend, entry.device, entry.stream);
        launch.cube_count = entry.cube_count;
        launch.cube_dim = entry.cube_dim;
        launch.issued = entry.issued;
        launch.returned = entry.returned;
        launch.timing = detail::read_measurement(entry, pass.lost, first_failure);
        launch.dry_run = entry.dry_run;
        launch.captured = entry.capturing;
        launch.replayed = entry.replayed;
        pass.launches.push_back(launch);
      }
    }
    add_intervals(pass, tables, thread, t.intervals);
  }
  // Each thread's launches are in issue order already; this interleaves the threads, keeping
  // thread order among launches stamped with the same instant.
  std::stable_sort(pass.launches.begin(), pass.launches.end(),
                   [](const launch_record& a, const launch_record& b) { return a.issued < b.issued; });

  if (pass.lost.failed > 0 || pass.lost.empty > 0) {
    detail::diagnostics().warn(
        "{} launch measurement(s) of this pass could not be read ({} failed, {} carried no "
        "measurement){}{}. Those launches are reported without device time.",
        pass.lost.failed + pass.lost.empty, pass.lost.failed, pass.lost.empty,
        first_failure.empty() ? "" : "; the first failure: ", first_failure);
  }
  return pass;
}

// --- aggregate-only ---

namespace {

using stream_unions = std::map<detail::stream_key, detail::interval_union, detail::key_less>;
using device_unions = std::map<detail::device_key, detail::interval_union, detail::key_less>;

/// One thread's trace prefix, taken by a collect.
struct taken_prefix {
  std::shared_ptr<detail::thread_log> log;
  detail::chunk<detail::prefix_launch>* launches = nullptr;
  detail::chunk<detail::interval_entry>* intervals = nullptr;
};

/// What an aggregate-only read gathered from every log.
struct aggregate_read {
  std::vector<std::map<detail::aggregate_key, detail::launch_group>> aggregates;
  lost_measurements lost;
  std::size_t threads = 0;
  std::pair<stream_unions, device_unions> unions;
  /// Taking reads only: each log's prefix, and what the prefix left out.
  std::vector<taken_prefix> prefixes;
  prefix_left_out left_out;
  /// The earliest launch left to the next pass (caught between its report and its measurement).
  std::optional<instant> earliest_left;
};

enum class read_kind {
  /// Takes the totals (and the prefix) and leaves the logs empty for the next pass.
  take,
  /// Copies the totals and leaves everything as it was.
  snapshot,
};

/// Folds every log's unfolded launches and reads the totals, as `kind` says. The caller holds
/// `r.collect_mutex`. A launch caught between its report and its measurement, while one may still
/// come (`measurements_may_come`, and not the calling thread's), stays unfolded in its log.
aggregate_read read_aggregate(detail::recorder& r, bool measurements_may_come, read_kind kind) {
  std::vector<std::shared_ptr<detail::thread_log>> logs;
  {
    std::lock_guard lock{r.logs_mutex};
    logs = r.logs;
  }
  const auto this_thread = detail::thread_token();
  aggregate_read read;
  read.aggregates.reserve(logs.size());
  for (const auto& shared : logs) {
    auto& log = *shared;
    // Held while this log's launches are folded, so the fold thread's fold of it comes before
    // (its launches are older) or finds nothing left.
    std::lock_guard folding{log.fold_mutex};
    detail::chunk<detail::launch_entry>* unfolded = nullptr;
    detail::chunk<detail::interval_entry>* prefix_intervals = nullptr;
    bool left_a_scope = false;
    {
      std::lock_guard lock{log.mutex};
      std::optional<detail::launch_entry> in_flight;
      if (measurements_may_come && log.awaiting != nullptr && log.owner != this_thread &&
          log.awaiting == log.launches.last()) {
        in_flight.emplace(log.launches.take_last());
      }
      // Oldest first: the launches handed over to the fold thread, then the ones after them.
      log.handed.append(log.launches.release());
      unfolded = log.take_handed();
      log.awaiting = nullptr;
      log.unfolded = 0;
      left_a_scope = log.left_out_intervals.load(std::memory_order_relaxed) > 0 ||
                     log.intervals.last() != nullptr;
      if (kind == read_kind::snapshot) {
        read.lost.unpaired += log.unpaired;
      } else {
        read.lost.unpaired += std::exchange(log.unpaired, 0);
        read.left_out.launches += std::exchange(log.left_out_launches, 0);
        read.left_out.scope_intervals +=
            log.left_out_intervals.exchange(0, std::memory_order_relaxed);
        prefix_intervals = log.intervals.release();
      }
      if (in_flight) {
        if (kind == read_kind::take) {
          // It belongs to the next pass, whose prefix it was not counted in: left out of that one.
          read.earliest_left =
              std::min(read.earliest_left.value_or(in_flight->issued), in_flight->issued);
          in_flight->in_prefix = false;
          ++log.left_out_launches;
        }
        log.awaiting = &log.launches.emplace(r.pools->launches, std::move(*in_flight));
        log.unfolded = 1;
      }
    }
    // Taken before the fold, which may throw: the intervals are freed with the other prefixes'.
    if (kind == read_kind::take)
      read.prefixes.push_back(taken_prefix{shared, nullptr, prefix_intervals});
    detail::fold_chunks(r, log, unfolded);
    // A thread counts when it launched or left a scope this pass, as summarize() counts a full
    // record's threads (kept in the prefix or not).
    if ((!log.aggregate.empty() || left_a_scope) && !log.replays) ++read.threads;
    if (kind == read_kind::snapshot) {
      read.lost.empty += log.aggregate_lost.empty;
      read.lost.failed += log.aggregate_lost.failed;
      read.aggregates.push_back(log.aggregate);
    } else {
      read.lost.empty += std::exchange(log.aggregate_lost.empty, 0);
      read.lost.failed += std::exchange(log.aggregate_lost.failed, 0);
      // Forgotten first: the groups' nodes leave the log here, even if the push throws.
      log.forget_aggregate_index();
      read.aggregates.push_back(std::exchange(log.aggregate, {}));
      read.prefixes.back().launches = log.prefix.release();
    }
  }
  std::lock_guard lock{r.timeline_mutex};
  read.unions = kind == read_kind::take ? r.placed.take() : r.placed.snapshot();
  return read;
}

/// The summary of what `read_aggregate` gathered.
pass_summary summary_of(const detail::recorder& r, aggregate_read& read) {
  // The tables first (a summary_builder reads them whole), then the groups by index.
  pass_record tables;
  tables.timing = r.timing;
  pass_builder indices{tables};
  std::vector<detail::launch_group> groups;
  for (auto& aggregate : read.aggregates) {
    for (auto& [key, group] : aggregate) {
      const auto& [path, kernel, backend, device, stream] = key;
      group.scope = indices.scope(path);
      group.kernel = indices.kernel(kernel);
      group.stream = indices.stream(backend, device, stream);
      groups.push_back(group);
    }
  }
  detail::summary_builder builder{tables};
  for (const auto& group : groups) builder.add(group);
  return builder.finish(read.lost, read.threads, read.unions.first, read.unions.second);
}

/// Frees each prefix's launch and interval chunks, however the collect ends: not kept in the
/// pools for the next pass, since a prefix fills once a pass and its storage (up to the cap)
/// should not be held while the report is written.
struct free_taken_prefixes {
  std::vector<taken_prefix>& prefixes;
  ~free_taken_prefixes() {
    for (auto& p : prefixes) {
      detail::delete_chunks(std::exchange(p.launches, nullptr));
      detail::delete_chunks(std::exchange(p.intervals, nullptr));
    }
  }
};

}  // namespace

pass_summary attribution::collect_summary() {
  auto& r = *recorder_;
  if (!r.pools->aggregate_only) return summarize(collect());
  // Asked before any lock is taken: it reads the observer slot, which comes first in the fork
  // order (fork_locks.hpp). The collect lock is then held while the launches are folded, which
  // reads their measurements: a fork() waits for those kernels.
  const bool may_come = measurements_may_come();
  std::lock_guard collecting{r.collect_mutex};
  auto read = read_aggregate(r, may_come, read_kind::take);
  free_taken_prefixes on_exit{read.prefixes};
  r.pools->begin_pass(r.clock());
  r.pools->prefix.reset(r.pools->prefix_events);
  return summary_of(r, read);
}

bounded_pass attribution::collect_bounded() {
  auto& r = *recorder_;
  bounded_pass result;
  if (!r.pools->aggregate_only) {
    result.trace_prefix = collect();
    result.summary = summarize(result.trace_prefix);
    return result;
  }
  // Asked before any lock is taken: it reads the observer slot, which comes first in the fork
  // order (fork_locks.hpp). The collect lock is then held while the launches are folded, which
  // reads their measurements: a fork() waits for those kernels.
  const bool may_come = measurements_may_come();
  std::lock_guard collecting{r.collect_mutex};
  auto read = read_aggregate(r, may_come, read_kind::take);
  free_taken_prefixes on_exit{read.prefixes};
  const auto ended = r.pools->prefix.ended();
  r.pools->prefix.reset(r.pools->prefix_events);
  // The next pass starts now, or with the launch left to it if that was issued earlier (collect).
  const instant next_origin = r.clock();
  auto& pass = result.trace_prefix;
  pass.origin = r.pools->origin();
  r.pools->begin_pass(std::min(next_origin, read.earliest_left.value_or(next_origin)));
  pass.timing = r.timing;
  result.left_out = read.left_out;
  if (ended && read.left_out.any()) {
    result.left_out.from = std::max(std::chrono::duration_cast<std::chrono::nanoseconds>(*ended - pass.origin),
                                    std::chrono::nanoseconds{0});
  }

  pass_builder tables{pass};
  std::size_t prefix_launches = 0;
  for (const auto& p : read.prefixes) {
    for (const auto* c = p.launches; c != nullptr; c = c->next) prefix_launches += c->items.size();
  }
  pass.launches.reserve(prefix_launches);  // one allocation for up to the cap's 250,000
  for (auto& p : read.prefixes) {
    if (p.launches == nullptr && p.intervals == nullptr) continue;
    const auto thread = add_host_thread(pass, *p.log);
    for (const auto* c = p.launches; c != nullptr; c = c->next) {
      for (const auto& kept : c->items) {
        auto& launch = pass.launches.emplace_back(kept.record);
        launch.kernel = tables.kernel(kept.kernel);
        launch.scope = tables.scope(kept.path);
        launch.thread = thread;
        launch.stream = tables.stream(kept.backend, kept.device, kept.stream);
      }
    }
    add_intervals(pass, tables, thread, p.intervals);
  }
  std::stable_sort(pass.launches.begin(), pass.launches.end(),
                   [](const launch_record& a, const launch_record& b) { return a.issued < b.issued; });
  result.summary = summary_of(r, read);
  return result;
}

pass_summary attribution::snapshot_summary() {
  auto& r = *recorder_;
  if (!r.pools->aggregate_only) {
    throw std::logic_error{
        "attribution::snapshot_summary: only an aggregate-only attribution "
        "(attribution_options::aggregate_only) can summarise its pass without ending it"};
  }
  // Asked before any lock is taken: it reads the observer slot, which comes first in the fork
  // order (fork_locks.hpp). The collect lock is then held while the launches are folded, which
  // reads their measurements: a fork() waits for those kernels.
  const bool may_come = measurements_may_come();
  std::lock_guard collecting{r.collect_mutex};
  auto read = read_aggregate(r, may_come, read_kind::snapshot);
  return summary_of(r, read);
}

}  // namespace launchwatch
