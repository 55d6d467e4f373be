// Aggregating a pass by scope path and kernel, and accounting for its device window.

#include <launchwatch/attribute/summary.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace launchwatch {
namespace {

using std::chrono::nanoseconds;

/// Whether a launch's time counts: it was measured and something ran (a dry launch ran nothing).
bool counts_time(const launch_record& launch) { return launch.timing && !launch.dry_run; }

/// A launch's time: its ticks' length when it has them, so the timeline and the totals agree.
nanoseconds time_of(const launch_record& launch) {
  return launch.timing->ticks ? launch.timing->ticks->length() : launch.timing->length;
}

timing_methods method_set(timing_method method) {
  timing_methods methods;
  (method == timing_method::device ? methods.device : methods.system) = true;
  return methods;
}

/// Counts one measurement by its method and by whether it has a place on the timeline.
void count_kind(measurement_kinds& kinds, const launch_timing& timing) {
  const bool device = timing.method == timing_method::device;
  if (timing.ticks) {
    ++(device ? kinds.device_stamped : kinds.system_stamped);
  } else {
    ++(device ? kinds.device_lengths : kinds.system_lengths);
  }
}

/// Adds one launch to a node's own counts (not its total: totals are summed up the tree later).
void add_launch(summary_node& node, const launch_record& launch) {
  ++node.launches;
  if (launch.dry_run) ++node.dry_run_launches;
  if (!counts_time(launch)) return;
  ++node.timed_launches;
  node.self += time_of(launch);
  node.total += time_of(launch);
  node.methods |= method_set(launch.timing->method);
}

/// Orders rows so the largest comes first and equal rows always print the same way.
bool before(const summary_node& a, const summary_node& b) {
  if (a.total != b.total) return a.total > b.total;
  if (a.launches != b.launches) return a.launches > b.launches;
  if (a.kind != b.kind) return a.kind == summary_node::node_kind::scope;
  return a.name < b.name;
}

/// A scope being aggregated: its own row and its kernels by kernel index.
struct scope_builder {
  summary_node node;
  std::map<std::uint32_t, summary_node> kernels;
  std::vector<std::uint32_t> child_scopes;
};

summary_node kernel_row(const pass_record& pass, std::uint32_t kernel) {
  summary_node row;
  row.kind = summary_node::node_kind::kernel;
  row.name = pass.kernels.at(kernel);
  return row;
}

summary_node assemble(std::vector<scope_builder>& scopes, std::uint32_t index) {
  auto& builder = scopes[index];
  summary_node node = std::move(builder.node);
  for (auto& [kernel, row] : builder.kernels) node.children.push_back(std::move(row));
  for (const auto child : builder.child_scopes) {
    if (scopes[child].node.launches > 0) node.children.push_back(assemble(scopes, child));
  }
  std::sort(node.children.begin(), node.children.end(), before);
  return node;
}

nanoseconds between(instant start, instant end) {
  return std::chrono::duration_cast<nanoseconds>(end - start);
}

/// The union of `intervals`' lengths; sorts them.
nanoseconds covered(std::vector<std::pair<instant, instant>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  nanoseconds total{0};
  std::optional<std::pair<instant, instant>> run;
  for (const auto& [start, end] : intervals) {
    if (run && start <= run->second) {
      run->second = std::max(run->second, end);
      continue;
    }
    if (run) total += between(run->first, run->second);
    run.emplace(start, end);
  }
  if (run) total += between(run->first, run->second);
  return total;
}

}  // namespace

pass_summary summarize(const pass_record& pass) {
  pass_summary summary;
  summary.timing = pass.timing;
  summary.lost = pass.lost;
  summary.launches = pass.launches.size();
  summary.host_threads = pass.threads.size();
  summary.outside.kind = summary_node::node_kind::scope;

  std::vector<scope_builder> scopes(pass.scopes.size());
  for (std::uint32_t i = 0; i < pass.scopes.size(); ++i) {
    const auto& info = pass.scopes[i];
    scopes[i].node.kind = summary_node::node_kind::scope;
    scopes[i].node.name = info.name;
    if (info.parent) {
      if (*info.parent >= i) {
        throw std::invalid_argument{
            "summarize: scope " + std::to_string(i) + " (`" + info.name + "`) names parent " +
            std::to_string(*info.parent) + ", which does not come before it in pass_record::scopes"};
      }
      scopes[*info.parent].child_scopes.push_back(i);
    }
  }

  std::map<std::uint32_t, summary_node> outside_kernels;
  struct stream_builder {
    std::vector<std::pair<instant, instant>> placed;
  };
  std::vector<stream_builder> stream_builders(pass.streams.size());
  summary.streams.resize(pass.streams.size());
  for (std::size_t i = 0; i < pass.streams.size(); ++i) summary.streams[i].stream = pass.streams[i];

  for (const auto& launch : pass.launches) {
    if (launch.dry_run) ++summary.dry_run_launches;
    if (launch.captured) ++summary.captured_launches;
    auto& kernels = launch.scope ? scopes.at(*launch.scope).kernels : outside_kernels;
    auto& own = launch.scope ? scopes[*launch.scope].node : summary.outside;
    auto row = kernels.find(launch.kernel);
    if (row == kernels.end()) row = kernels.emplace(launch.kernel, kernel_row(pass, launch.kernel)).first;
    add_launch(row->second, launch);
    add_launch(own, launch);

    auto& stream = summary.streams.at(launch.stream);
    ++stream.launches;
    if (!counts_time(launch)) continue;
    ++summary.timed_launches;
    summary.methods |= method_set(launch.timing->method);
    count_kind(summary.measurements, *launch.timing);
    ++stream.timed_launches;
    stream.kernel_time += time_of(launch);
    if (const auto& ticks = launch.timing->ticks) {
      stream_builders[launch.stream].placed.emplace_back(ticks->start(), ticks->end());
    } else {
      stream.unplaced += launch.timing->length;
    }
  }

  // Children come after their parents, so walking backwards completes each scope before adding it
  // to its parent.
  for (std::size_t i = scopes.size(); i-- > 0;) {
    const auto& child = scopes[i].node;
    if (const auto parent = pass.scopes[i].parent) {
      auto& up = scopes[*parent].node;
      up.launches += child.launches;
      up.timed_launches += child.timed_launches;
      up.dry_run_launches += child.dry_run_launches;
      up.total += child.total;
      up.methods |= child.methods;
    }
  }
  for (std::uint32_t i = 0; i < scopes.size(); ++i) {
    if (!pass.scopes[i].parent && scopes[i].node.launches > 0) {
      summary.scopes.push_back(assemble(scopes, i));
    }
  }
  std::sort(summary.scopes.begin(), summary.scopes.end(), before);
  for (auto& [kernel, row] : outside_kernels) summary.outside.children.push_back(std::move(row));
  std::sort(summary.outside.children.begin(), summary.outside.children.end(), before);

  for (std::size_t i = 0; i < summary.streams.size(); ++i) {
    auto& stream = summary.streams[i];
    auto& placed = stream_builders[i].placed;
    nanoseconds span{0};
    nanoseconds busy{0};
    nanoseconds placed_time{0};
    if (!placed.empty()) {
      instant first = placed.front().first;
      instant last = placed.front().second;
      for (const auto& [start, end] : placed) {
        first = std::min(first, start);
        last = std::max(last, end);
        placed_time += between(start, end);
      }
      span = between(first, last);
      busy = covered(placed);
    }
    stream.window = span + stream.unplaced;
    stream.idle = span - busy;
    stream.overlap = placed_time - busy;
    summary.window += stream.window;
    summary.kernel_time += stream.kernel_time;
    summary.idle += stream.idle;
    summary.overlap += stream.overlap;
    summary.unplaced += stream.unplaced;
  }
  return summary;
}

}  // namespace launchwatch
