// Where a pass's device time went, by scope and kernel: the aggregate every report but the trace
// is drawn from (summary_json.hpp writes and reads it as JSON).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <launchwatch/errors.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>
#include <launchwatch/report/pass_record.hpp>

namespace launchwatch {

/// Which timing methods a set of measurements used. Kept per row because `device` and `system`
/// lengths mean different things, and a report must say when it added one to the other.
struct timing_methods {
  /// Some measurement was host wall time.
  bool system = false;
  /// Some measurement was device timestamps.
  bool device = false;

  /// Whether both methods are present.
  bool mixed() const noexcept { return system && device; }
  /// Whether any measurement is present.
  bool any() const noexcept { return system || device; }
  /// Adds the methods of `other`.
  timing_methods& operator|=(timing_methods other) noexcept {
    system = system || other.system;
    device = device || other.device;
    return *this;
  }
  friend bool operator==(const timing_methods&, const timing_methods&) = default;
};

/// How the launches whose time counts were measured: by method, and whether each measurement
/// came with its start and end on the pass's timeline or as a length only.
///
/// Kept because the two tell different stories: a measurement handed over unread (`deferred`) has
/// its start and end, from a pass whose kernels ran back to back; one the launch path read on the
/// issuing thread (`resolved`, or any request while the profiling logger reads every measurement)
/// has a length only, and its kernel ran alone. The tree's header says which the pass received.
struct measurement_kinds {
  /// Device timestamps: start and end on the device's clock.
  std::size_t device_stamped = 0;
  /// Device lengths, without a start or an end.
  std::size_t device_lengths = 0;
  /// Host wall time with its start and end.
  std::size_t system_stamped = 0;
  /// Host wall time as a length only.
  std::size_t system_lengths = 0;

  /// How many launches these are, all kinds together.
  std::size_t total() const noexcept {
    return device_stamped + device_lengths + system_stamped + system_lengths;
  }
  friend bool operator==(const measurement_kinds&, const measurement_kinds&) = default;
};

/// One row of the tree: a scope with everything launched under it, or a kernel within a scope.
struct summary_node {
  /// What a row stands for.
  enum class node_kind {
    scope,   ///< A scope: its children are its kernels and the scopes entered inside it.
    kernel,  ///< One kernel launched directly in the enclosing scope: no children.
  };

  node_kind kind = node_kind::scope;
  /// The scope's name, or the kernel's full name (shortened only when rendered).
  std::string name;
  /// Launches under this node, descendants included.
  std::size_t launches = 0;
  /// Of those, the ones with a measurement that counts as device time (not dry runs).
  std::size_t timed_launches = 0;
  /// Of those launches, the dry runs: reported, not executed, so never timed. Counted apart so a
  /// report can tell a dry run from a launch whose measurement is missing.
  std::size_t dry_run_launches = 0;
  /// Time of kernels launched directly in this scope; a kernel's own time for a kernel row.
  std::chrono::nanoseconds self{0};
  /// Time of everything under this node.
  std::chrono::nanoseconds total{0};
  /// For a kernel row, its shortest and its longest timed launch (`total` over `timed_launches` is
  /// the average). None for a scope row, for a kernel none of whose launches has a time, and for a
  /// row read from a summary written before they were recorded.
  std::optional<std::chrono::nanoseconds> min_time;
  std::optional<std::chrono::nanoseconds> max_time;
  /// How the time under this node was measured.
  timing_methods methods;
  /// Child scopes and kernels, in the order the pass first issued a launch under each: the order
  /// the program ran them, so `layer 0` comes before `layer 1`. Renderers sort them otherwise when
  /// asked (tree_options::order).
  std::vector<summary_node> children;

  friend bool operator==(const summary_node&, const summary_node&) = default;
};

/// The device time of one stream, accounted the same way as the whole pass.
struct stream_summary {
  /// The process the stream belongs to, in a summary merged from several (merge_summaries: its
  /// label, "rank 1"); empty for a process's own summary.
  std::string process;
  /// Which stream.
  stream_info stream;
  /// Launches issued to it.
  std::size_t launches = 0;
  /// Of those, the ones whose time counts (measured, not dry runs).
  std::size_t timed_launches = 0;
  /// First kernel start to last kernel end on this stream, plus the lengths of kernels known only by
  /// length (they have no place on the timeline).
  std::chrono::nanoseconds window{0};
  /// The sum of its kernels' lengths.
  std::chrono::nanoseconds kernel_time{0};
  /// Window time no kernel covered.
  std::chrono::nanoseconds idle{0};
  /// Time covered by more than one kernel at once, counted once per kernel in `kernel_time`.
  std::chrono::nanoseconds overlap{0};
  /// Kernel time known only by length (resolved timing): in the window, but with no place on the
  /// timeline, so idle time around it is unknown.
  std::chrono::nanoseconds unplaced{0};

  friend bool operator==(const stream_summary&, const stream_summary&) = default;
};

/// The device time of one device: its streams' kernels united on one timeline.
///
/// Kept beside the per-stream view because the two answer different questions. Two streams of one
/// device running kernels at the same time are both busy, so neither stream is idle, and the
/// device is not idle either; but one stream waiting while the other runs is stream idle time and
/// not device idle time. Summing the streams' idle time would report the device idle while it was
/// busy; the union of the device's kernels does not.
struct device_summary {
  /// The process the device was driven by, in a summary merged from several (merge_summaries: its
  /// label); empty for a process's own summary. Two ranks' `cuda device 0` are two devices.
  std::string process;
  /// The backend ("cpu", "cuda"; empty when launches were reported by name only).
  std::string backend;
  /// The device's index within its backend.
  int device = 0;
  /// Streams of this device that launches went to.
  std::size_t streams = 0;
  /// Launches issued to its streams.
  std::size_t launches = 0;
  /// Of those, the ones whose time counts.
  std::size_t timed_launches = 0;
  /// First kernel start to last kernel end over all of its streams, plus the lengths of kernels
  /// known only by length.
  std::chrono::nanoseconds window{0};
  /// The sum of its kernels' lengths.
  std::chrono::nanoseconds kernel_time{0};
  /// Window time during which no kernel of any of its streams ran.
  std::chrono::nanoseconds idle{0};
  /// Time covered by more than one kernel at once (on one stream or across streams), counted once
  /// per kernel in `kernel_time`.
  std::chrono::nanoseconds overlap{0};
  /// Kernel time known only by length: in the window, with no place on the timeline.
  std::chrono::nanoseconds unplaced{0};

  friend bool operator==(const device_summary&, const device_summary&) = default;
};

/// A pass aggregated by scope path and kernel, accounting for all of its device window.
///
/// It holds two accountings of the same kernels, each with its identity exact in nanoseconds: the
/// totals of the top-level scopes, plus launches outside any scope, plus idle time, minus overlap,
/// equal the window.
/// - Per stream (`window`, `idle`, `overlap`): each stream's first-kernel-start to last-kernel-end,
///   summed over streams. Concurrent streams count twice, and a stream waiting while another runs
///   is idle.
/// - Per device (`device_window`, `device_idle`, `device_overlap`): each device's streams united on
///   one timeline, summed over devices. Idle time is time the device ran nothing; kernels running
///   at once on two streams are overlap. The tree report shows this one unless asked otherwise.
/// With one stream per device the two are equal.
struct pass_summary {
  /// Which process this is, when a program names it (a rank of a job started by torchrun or mpirun:
  /// "rank 3"): merge_summaries labels its part of a merged report with it. Empty by default.
  std::string process;
  /// The timing the attribution asked for.
  timing_request timing = timing_request::none;
  /// How the measurements that count were taken.
  timing_methods methods;
  /// The same measurements counted by method and by kind (timestamps or lengths only).
  measurement_kinds measurements;
  /// Every launch reported.
  std::size_t launches = 0;
  /// Launches whose time counts: measured, and not dry runs.
  std::size_t timed_launches = 0;
  /// Launches reported but not executed.
  std::size_t dry_run_launches = 0;
  /// Launches recorded into a graph rather than run.
  std::size_t captured_launches = 0;
  /// Threads that launched or entered scopes.
  std::size_t host_threads = 0;
  /// Measurements that did not become a launch's time, and why.
  lost_measurements lost;
  /// 100% of the pass: the streams' windows summed.
  std::chrono::nanoseconds window{0};
  /// All kernels' time, overlaps counted once per kernel.
  std::chrono::nanoseconds kernel_time{0};
  /// Window time no kernel covered, summed over streams.
  std::chrono::nanoseconds idle{0};
  /// Time kernels on one stream overlapped, summed over streams.
  std::chrono::nanoseconds overlap{0};
  /// Time of kernels known only by length, summed over streams.
  std::chrono::nanoseconds unplaced{0};
  /// Top-level scopes that launched anything (scopes that launched nothing used no device time and
  /// are left out).
  std::vector<summary_node> scopes;
  /// Launches issued outside any scope: a scope node with an empty name whose children are kernels.
  summary_node outside;
  /// Per stream, in the order first used.
  std::vector<stream_summary> streams;
  /// The devices' windows summed: 100% of the per-device accounting.
  std::chrono::nanoseconds device_window{0};
  /// Time each device ran no kernel on any of its streams, summed over devices.
  std::chrono::nanoseconds device_idle{0};
  /// Time kernels of one device overlapped (on one stream or across streams), summed over devices.
  std::chrono::nanoseconds device_overlap{0};
  /// Per device, in the order first used.
  std::vector<device_summary> devices;
  /// Kernels whose place on the timeline reached an aggregate-only attribution too late to be put
  /// in order (see attribution_options::aggregate_only); 0 otherwise. When not 0, idle time and
  /// overlap are estimates (each such kernel is merged with the kernels after it) and the tree
  /// says so.
  std::size_t out_of_order_kernels = 0;

  friend bool operator==(const pass_summary&, const pass_summary&) = default;
};

/// Aggregates `pass` by scope path and kernel and accounts for its device window.
///
/// Dry-run launches are counted but given no time (nothing ran). Thread safety: a pure function.
pass_summary summarize(const pass_record& pass);

/// A summary file that could not be read: says which file, where in it, and what was expected.
///
/// A launchwatch::error (and so a std::runtime_error), like every exception launchwatch throws on
/// purpose, so one handler catches them all.
class summary_error : public error {
 public:
  using error::error;
};

}  // namespace launchwatch
