// Aggregating launches by scope path and kernel, and accounting for the device window per stream
// and per device.

#include <launchwatch/report/summary.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

#include "summary_builder.hpp"

namespace launchwatch {
namespace detail {
namespace {

using std::chrono::nanoseconds;

nanoseconds between(instant start, instant end) {
  return std::chrono::duration_cast<nanoseconds>(end - start);
}

/// Whether a launch's time counts: it was measured and something ran (a dry launch ran nothing).
bool counts_time(const launch_record& launch) { return launch.timing && !launch.dry_run; }

/// A launch's time: its ticks' length when it has them, so the timeline and the totals agree.
nanoseconds time_of(const launch_record& launch) {
  return launch.timing->ticks ? launch.timing->ticks->length() : launch.timing->length;
}

/// Adds `from`'s counts to `to` (the fields a row and a group share).
void add_counts(summary_node& to, const launch_group& from) {
  to.launches += from.launches;
  to.timed_launches += from.timed_launches;
  to.dry_run_launches += from.dry_run_launches;
  to.methods |= from.methods;
}

/// Widens `min` and `max` to take in `low` to `high` (either end none: nothing to take in).
void widen(std::optional<nanoseconds>& min, std::optional<nanoseconds>& max,
           std::optional<nanoseconds> low, std::optional<nanoseconds> high) {
  if (low && (!min || *low < *min)) min = low;
  if (high && (!max || *high > *max)) max = high;
}

void add_kinds(measurement_kinds& to, const measurement_kinds& from) {
  to.device_stamped += from.device_stamped;
  to.device_lengths += from.device_lengths;
  to.system_stamped += from.system_stamped;
  to.system_lengths += from.system_lengths;
}

}  // namespace

void launch_group::add(const launch_record& launch) {
  if (launches == 0 || launch.issued < first_issued) first_issued = launch.issued;
  ++launches;
  if (launch.dry_run) ++dry_run_launches;
  if (launch.captured) ++captured_launches;
  if (!counts_time(launch)) return;
  ++timed_launches;
  const auto length = time_of(launch);
  time += length;
  widen(min_time, max_time, length, length);
  const bool device = launch.timing->method == timing_method::device;
  (device ? methods.device : methods.system) = true;
  if (launch.timing->ticks) {
    ++(device ? measurements.device_stamped : measurements.system_stamped);
  } else {
    ++(device ? measurements.device_lengths : measurements.system_lengths);
    unplaced += length;
  }
}

void launch_group::merge(const launch_group& other) {
  if (other.launches == 0) return;
  if (launches == 0 || other.first_issued < first_issued) first_issued = other.first_issued;
  launches += other.launches;
  timed_launches += other.timed_launches;
  dry_run_launches += other.dry_run_launches;
  captured_launches += other.captured_launches;
  time += other.time;
  unplaced += other.unplaced;
  widen(min_time, max_time, other.min_time, other.max_time);
  methods |= other.methods;
  add_kinds(measurements, other.measurements);
}

// --- interval_union ---

bool interval_union::ring::push_back(const interval& next, std::size_t limit) {
  bool grew = false;
  if (size_ == slots_.size()) {
    // Full: more room, the waiting intervals moved to its start in order.
    std::vector<interval> grown(std::min(std::max<std::size_t>(16, 2 * slots_.size()), limit));
    for (std::size_t i = 0; i < size_; ++i) grown[i] = slots_[at(i)];
    slots_ = std::move(grown);
    head_ = 0;
    grew = true;
  }
  slots_[at(size_)] = next;
  ++size_;
  return grew;
}

void interval_union::add(instant start, instant end) {
  length_sum_ += between(start, end);
  if (!first_) {
    first_ = start;
    last_ = end;
  } else {
    first_ = std::min(*first_, start);
    last_ = std::max(last_, end);
  }
  const interval next{start, end};
  // In order when no earlier than the last in-order arrival: the FIFO stays sorted, and the
  // earliest waiting interval is the earlier of its front and the heap's top.
  if (in_order_.empty() || !(next < in_order_.back())) {
    // At most `window + 1` wait at once (one over, until the earliest leaves below).
    const std::size_t limit = window_ == unbounded ? unbounded : window_ + 1;
    if (in_order_.push_back(next, limit) && window_ != unbounded) {
      // The heap's room follows the FIFO's, so that a pass whose kernels start arriving out of
      // order after the FIFO has grown allocates nothing then: about the two windows' worth a
      // single heap's doubling vector reached (three at most, if the heap grew first). Not for an
      // unbounded window, where it would double summarize()'s memory for a heap mostly empty.
      late_.reserve(in_order_.capacity());
    }
  } else {
    late_.push_back(next);
    std::push_heap(late_.begin(), late_.end(), std::greater<>{});
  }
  if (in_order_.size() + late_.size() > window_) join_earliest();
}

void interval_union::finish() {
  while (!in_order_.empty() || !late_.empty()) join_earliest();
}

void interval_union::join_earliest() {
  // Ties go to the FIFO: equal intervals join the same way whichever part held them.
  if (!late_.empty() && (in_order_.empty() || late_.front() < in_order_.front())) {
    join(late_.front());
    std::pop_heap(late_.begin(), late_.end(), std::greater<>{});
    late_.pop_back();
  } else {
    join(in_order_.front());
    in_order_.pop_front();
  }
}

void interval_union::join(const interval& next) {
  if (!run_) {
    run_ = next;
    return;
  }
  if (next.first < run_->first) {
    // Came too late for the reorder buffer: the runs it may overlap have been counted already
    // and are gone. Its part before the current run is counted as busy in full, an error of at
    // most its own length; stretching the run back to its start counted the whole gap between as
    // busy (seconds, after a compile's autotuning: a negative overlap).
    ++out_of_order_;
    busy_ += between(next.first, std::min(next.second, run_->first));
    if (next.second > run_->first) run_->second = std::max(run_->second, next.second);
    return;
  }
  if (next.first <= run_->second) {
    run_->second = std::max(run_->second, next.second);
    return;
  }
  busy_ += run_length();
  run_ = next;
}

nanoseconds interval_union::run_length() const {
  return run_ ? between(run_->first, run_->second) : nanoseconds{0};
}

nanoseconds interval_union::span() const {
  return first_ ? between(*first_, last_) : nanoseconds{0};
}

// --- timeline ---

void timeline::add(std::string_view backend, int device, std::uint64_t stream, instant start,
                   instant end) {
  if (last_.stream_union == nullptr || last_.stream != stream || last_.device != device ||
      last_.backend != backend) {
    auto found_stream = streams_.find(std::tuple{backend, device, stream});
    if (found_stream == streams_.end()) {
      stream_key key{std::string{backend}, device, stream};
      found_stream = streams_.emplace(std::move(key), interval_union{window_}).first;
    }
    interval_union& stream_union = found_stream->second;
    last_ = last_stream{std::get<0>(found_stream->first), device, stream, &stream_union,
                        device_union_of(backend, device, stream_union)};
  }
  last_.stream_union->add(start, end);
  if (last_.device_union != nullptr) last_.device_union->add(start, end);
}

interval_union* timeline::device_union_of(std::string_view backend, int device,
                                          interval_union& stream_union) {
  if (const auto own = devices_.find(std::tuple{backend, device}); own != devices_.end()) {
    return &own->second;
  }
  const auto sole = sole_streams_.find(std::tuple{backend, device});
  if (sole == sole_streams_.end()) {
    sole_streams_.emplace(device_key{std::string{backend}, device}, &stream_union);
    return nullptr;
  }
  if (sole->second == &stream_union) return nullptr;
  // A second stream: the device's union so far is its first stream's, copied, and its own from now.
  auto made = devices_.emplace(sole->first, *sole->second).first;
  sole_streams_.erase(sole);
  return &made->second;
}

void timeline::add_sole_streams(std::map<device_key, interval_union, key_less>& devices) const {
  for (const auto& [key, stream_union] : sole_streams_) devices.emplace(key, *stream_union);
}

void timeline::add(const stream_info& stream, instant start, instant end) {
  add(stream.backend, stream.device, stream.stream, start, end);
}

std::pair<std::map<stream_key, interval_union, key_less>,
          std::map<device_key, interval_union, key_less>>
timeline::take() {
  // The remembered unions leave with the maps.
  last_ = {};
  add_sole_streams(devices_);
  sole_streams_.clear();
  auto taken = std::pair{std::exchange(streams_, {}), std::exchange(devices_, {})};
  for (auto& [key, u] : taken.first) u.finish();
  for (auto& [key, u] : taken.second) u.finish();
  return taken;
}

std::pair<std::map<stream_key, interval_union, key_less>,
          std::map<device_key, interval_union, key_less>>
timeline::snapshot() const {
  auto copied = std::pair{streams_, devices_};
  add_sole_streams(copied.second);
  for (auto& [key, u] : copied.first) u.finish();
  for (auto& [key, u] : copied.second) u.finish();
  return copied;
}

// --- summary_builder ---

summary_builder::summary_builder(const pass_record& tables) : tables_{tables} {
  scopes_.resize(tables.scopes.size());
  for (std::uint32_t i = 0; i < tables.scopes.size(); ++i) {
    const auto& info = tables.scopes[i];
    scopes_[i].self.node.kind = summary_node::node_kind::scope;
    scopes_[i].self.node.name = info.name;
    if (info.parent) {
      if (*info.parent >= i) {
        throw std::invalid_argument{
            "summarize: scope " + std::to_string(i) + " (`" + info.name + "`) names parent " +
            std::to_string(*info.parent) + ", which does not come before it in pass_record::scopes"};
      }
      scopes_[*info.parent].child_scopes.push_back(i);
    }
  }
  summary_.timing = tables.timing;
  summary_.outside.kind = summary_node::node_kind::scope;
  summary_.streams.resize(tables.streams.size());
  for (std::size_t i = 0; i < tables.streams.size(); ++i) summary_.streams[i].stream = tables.streams[i];
}

void summary_builder::add_to(row& r, const launch_group& group, bool own_time) {
  const issue_key key{group.first_issued, next_order_};
  if (!r.first || key < *r.first) {
    r.first = key;
    ++next_order_;
  }
  add_counts(r.node, group);
  if (own_time) r.node.self += group.time;
  r.node.total += group.time;
}

void summary_builder::add(const launch_group& group) {
  auto& kernels = group.scope ? scopes_.at(*group.scope).kernels : outside_;
  auto found = kernels.find(group.kernel);
  if (found == kernels.end()) {
    row fresh;
    fresh.node.kind = summary_node::node_kind::kernel;
    fresh.node.name = tables_.kernels.at(group.kernel);
    found = kernels.emplace(group.kernel, std::move(fresh)).first;
  }
  add_to(found->second, group, true);
  // Only kernel rows keep a shortest and a longest launch: one kernel's launches compare, a
  // scope's mix kernels. An aggregate-only attribution adds one group per thread for a row.
  widen(found->second.node.min_time, found->second.node.max_time, group.min_time, group.max_time);
  if (group.scope) {
    add_to(scopes_[*group.scope].self, group, true);
  } else {
    add_counts(summary_.outside, group);
    summary_.outside.self += group.time;
    summary_.outside.total += group.time;
  }

  summary_.launches += group.launches;
  summary_.timed_launches += group.timed_launches;
  summary_.dry_run_launches += group.dry_run_launches;
  summary_.captured_launches += group.captured_launches;
  summary_.methods |= group.methods;
  add_kinds(summary_.measurements, group.measurements);
  auto& stream = summary_.streams.at(group.stream);
  stream.launches += group.launches;
  stream.timed_launches += group.timed_launches;
  stream.kernel_time += group.time;
  stream.unplaced += group.unplaced;
}

std::vector<summary_node> summary_builder::in_issue_order(
    std::vector<std::pair<issue_key, summary_node>> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<summary_node> nodes;
  nodes.reserve(rows.size());
  for (auto& [key, node] : rows) nodes.push_back(std::move(node));
  return nodes;
}

summary_node summary_builder::assemble(std::uint32_t scope) {
  auto& rows = scopes_[scope];
  summary_node node = std::move(rows.self.node);
  std::vector<std::pair<issue_key, summary_node>> children;
  for (auto& [kernel, r] : rows.kernels) children.emplace_back(*r.first, std::move(r.node));
  for (const auto child : rows.child_scopes) {
    if (scopes_[child].self.node.launches > 0) {
      const auto key = *scopes_[child].self.first;
      children.emplace_back(key, assemble(child));
    }
  }
  node.children = in_issue_order(std::move(children));
  return node;
}

pass_summary summary_builder::finish(
    const lost_measurements& lost, std::size_t host_threads,
    const std::map<stream_key, interval_union, key_less>& stream_unions,
    const std::map<device_key, interval_union, key_less>& device_unions) {
  summary_.lost = lost;
  summary_.host_threads = host_threads;
  // Children come after their parents, so walking backwards completes each scope before adding it
  // to its parent. A scope's first issue is the earliest in its subtree.
  for (std::size_t i = scopes_.size(); i-- > 0;) {
    const auto& child = scopes_[i].self;
    const auto parent = tables_.scopes[i].parent;
    if (!parent || child.node.launches == 0) continue;
    auto& up = scopes_[*parent].self;
    up.node.launches += child.node.launches;
    up.node.timed_launches += child.node.timed_launches;
    up.node.dry_run_launches += child.node.dry_run_launches;
    up.node.total += child.node.total;
    up.node.methods |= child.node.methods;
    if (!up.first || *child.first < *up.first) up.first = child.first;
  }
  std::vector<std::pair<issue_key, summary_node>> top;
  for (std::uint32_t i = 0; i < scopes_.size(); ++i) {
    if (!tables_.scopes[i].parent && scopes_[i].self.node.launches > 0) {
      const auto key = *scopes_[i].self.first;
      top.emplace_back(key, assemble(i));
    }
  }
  summary_.scopes = in_issue_order(std::move(top));
  std::vector<std::pair<issue_key, summary_node>> outside;
  for (auto& [kernel, r] : outside_) outside.emplace_back(*r.first, std::move(r.node));
  summary_.outside.children = in_issue_order(std::move(outside));

  auto placed = [](const auto& unions, const auto& key) -> const interval_union* {
    const auto found = unions.find(key);
    return found == unions.end() ? nullptr : &found->second;
  };
  for (auto& stream : summary_.streams) {
    const auto& info = stream.stream;
    if (const auto* u = placed(stream_unions, std::tuple{std::string_view{info.backend}, info.device, info.stream})) {
      stream.idle = u->span() - u->busy();
      stream.overlap = u->length_sum() - u->busy();
      stream.window = u->span();
      summary_.out_of_order_kernels += u->out_of_order();
    }
    stream.window += stream.unplaced;
    summary_.window += stream.window;
    summary_.kernel_time += stream.kernel_time;
    summary_.idle += stream.idle;
    summary_.overlap += stream.overlap;
    summary_.unplaced += stream.unplaced;

    auto device = std::find_if(summary_.devices.begin(), summary_.devices.end(), [&](const device_summary& d) {
      return d.backend == info.backend && d.device == info.device;
    });
    if (device == summary_.devices.end()) {
      device = summary_.devices.insert(summary_.devices.end(), device_summary{});
      device->backend = info.backend;
      device->device = info.device;
    }
    ++device->streams;
    device->launches += stream.launches;
    device->timed_launches += stream.timed_launches;
    device->kernel_time += stream.kernel_time;
    device->unplaced += stream.unplaced;
  }
  for (auto& device : summary_.devices) {
    if (const auto* u = placed(device_unions, std::tuple{std::string_view{device.backend}, device.device})) {
      device.idle = u->span() - u->busy();
      device.overlap = u->length_sum() - u->busy();
      device.window = u->span();
    }
    device.window += device.unplaced;
    summary_.device_window += device.window;
    summary_.device_idle += device.idle;
    summary_.device_overlap += device.overlap;
  }
  return std::move(summary_);
}

}  // namespace detail

pass_summary summarize(const pass_record& pass) {
  detail::summary_builder builder{pass};
  detail::timeline placed;
  for (const auto& launch : pass.launches) {
    detail::launch_group group;
    group.scope = launch.scope;
    group.kernel = launch.kernel;
    group.stream = launch.stream;
    group.add(launch);
    builder.add(group);
    if (launch.timing && launch.timing->ticks && !launch.dry_run) {
      placed.add(pass.streams.at(launch.stream), launch.timing->ticks->start(), launch.timing->ticks->end());
    }
  }
  const auto [streams, devices] = placed.take();
  const auto host_threads = static_cast<std::size_t>(
      std::count_if(pass.threads.begin(), pass.threads.end(), [](const host_thread& t) { return !t.replays; }));
  return builder.finish(pass.lost, host_threads, streams, devices);
}

}  // namespace launchwatch
