// Merging the summaries of several processes, a top-level row each.

#include <launchwatch/report/merge.hpp>

#include <array>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

namespace launchwatch {
namespace {

/// The process as a scope row: its scopes, then its launches outside any scope as kernels of its
/// own, so its total is all of its kernel time and nothing else.
summary_node process_row(const process_summary& process) {
  const pass_summary& s = process.summary;
  summary_node row;
  row.kind = summary_node::node_kind::scope;
  row.name = process.label;
  const auto add = [&](const summary_node& part) {
    row.launches += part.launches;
    row.timed_launches += part.timed_launches;
    row.dry_run_launches += part.dry_run_launches;
    row.total += part.total;
    row.methods |= part.methods;
  };
  for (const auto& scope : s.scopes) {
    add(scope);
    row.children.push_back(scope);
  }
  add(s.outside);
  row.self = s.outside.total;
  for (const auto& kernel : s.outside.children) row.children.push_back(kernel);
  return row;
}

int measuring_rank(timing_request timing) {
  switch (timing) {
    case timing_request::deferred:
      return 2;
    case timing_request::resolved:
      return 1;
    case timing_request::none:
      break;
  }
  return 0;
}

}  // namespace

pass_summary merge_summaries(std::span<const process_summary> processes) {
  if (processes.empty()) {
    throw summary_error{"nothing to merge: give the summaries of the processes of one job"};
  }
  std::set<std::string> labels;
  for (const auto& process : processes) {
    if (!labels.insert(process.label).second) {
      throw summary_error{"two of the summaries to merge are both labelled '" + process.label +
                          "': merge the summaries of distinct processes (each rank writes its own)"};
    }
  }
  pass_summary merged;
  for (const auto& process : processes) {
    const pass_summary& s = process.summary;
    if (measuring_rank(s.timing) > measuring_rank(merged.timing)) merged.timing = s.timing;
    merged.methods |= s.methods;
    merged.measurements.device_stamped += s.measurements.device_stamped;
    merged.measurements.device_lengths += s.measurements.device_lengths;
    merged.measurements.system_stamped += s.measurements.system_stamped;
    merged.measurements.system_lengths += s.measurements.system_lengths;
    merged.launches += s.launches;
    merged.timed_launches += s.timed_launches;
    merged.dry_run_launches += s.dry_run_launches;
    merged.captured_launches += s.captured_launches;
    merged.host_threads += s.host_threads;
    merged.lost.empty += s.lost.empty;
    merged.lost.failed += s.lost.failed;
    merged.lost.unpaired += s.lost.unpaired;
    merged.window += s.window;
    merged.kernel_time += s.kernel_time;
    merged.idle += s.idle;
    merged.overlap += s.overlap;
    merged.unplaced += s.unplaced;
    merged.scopes.push_back(process_row(process));
    for (auto stream : s.streams) {
      stream.process = process.label;
      merged.streams.push_back(std::move(stream));
    }
    merged.device_window += s.device_window;
    merged.device_idle += s.device_idle;
    merged.device_overlap += s.device_overlap;
    for (auto device : s.devices) {
      device.process = process.label;
      merged.devices.push_back(std::move(device));
    }
    merged.out_of_order_kernels += s.out_of_order_kernels;
  }
  return merged;
}

std::string process_label_from_environment() {
  constexpr std::array variables{"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (const char* variable : variables) {
    const char* value = std::getenv(variable);
    if (value != nullptr && *value != '\0') return std::string{"rank "} + value;
  }
  return {};
}

}  // namespace launchwatch
