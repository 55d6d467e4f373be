// What an attribution observed over one pass, as plain data: every launch with its scope path,
// thread, stream and measurement, and every host scope's interval.
//
// Plain data so collection and presentation never meet: the observer fills one of these, the
// reports and trace writers read one, and a test can build one by hand with exact numbers.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch {

/// A named scope within a pass: one node of the tree of scope paths the pass went through.
struct scope_info {
  /// The name the scope was given.
  std::string name;
  /// The index in `pass_record::scopes` of the scope it was entered in, or none at the top level.
  std::optional<std::uint32_t> parent;

  friend bool operator==(const scope_info&, const scope_info&) = default;
};

/// A device stream kernels ran on: one track of the trace.
struct stream_info {
  /// The backend the launches went to ("cpu", "cuda"); empty when the launch path reported only a
  /// kernel name.
  std::string backend;
  /// The device's index within its backend.
  int device = 0;
  /// The stream's process-wide identifier.
  std::uint64_t stream = 0;

  friend bool operator==(const stream_info&, const stream_info&) = default;
};

/// One scope's life on a host thread.
struct scope_interval {
  /// Its index in `pass_record::scopes`.
  std::uint32_t scope = 0;
  /// When it was entered.
  instant start;
  /// When it was left.
  instant end;

  friend bool operator==(const scope_interval&, const scope_interval&) = default;
};

/// A thread that issued launches or entered scopes during the pass.
struct host_thread {
  /// How reports name it ("host thread 1", numbered in the order threads were first seen).
  std::string name;
  /// The scopes it entered and left during the pass, in the order they were left. Intervals nest:
  /// the scopes of one thread never partly overlap.
  std::vector<scope_interval> scopes;
  /// Not a thread of the program: where replayed graph nodes are listed ("CUDA graph replays";
  /// see launch_record::replayed). Reports do not count it among the host threads.
  bool replays = false;

  friend bool operator==(const host_thread&, const host_thread&) = default;
};

/// How long one launch's kernel ran, and how that was measured.
struct launch_timing {
  /// The kernel's length.
  std::chrono::nanoseconds length{0};
  /// How it was measured: `device` and `system` lengths mean different things (see timing_method).
  timing_method method = timing_method::device;
  /// When the kernel started and ended, on the pass's timeline. Present when the measurement was
  /// handed over unread (`deferred`), absent when the launch path read it and gave only a length
  /// (`resolved`, or the profiling logger reading every measurement).
  std::optional<profile_ticks> ticks;

  friend bool operator==(const launch_timing&, const launch_timing&) = default;
};

/// One reported launch.
struct launch_record {
  /// Its kernel's index in `pass_record::kernels`.
  std::uint32_t kernel = 0;
  /// The innermost scope the issuing thread was in, as an index in `pass_record::scopes`; none
  /// when the launch was issued outside any scope.
  std::optional<std::uint32_t> scope;
  /// The issuing thread's index in `pass_record::threads`.
  std::uint32_t thread = 0;
  /// The stream's index in `pass_record::streams`.
  std::uint32_t stream = 0;
  /// Cubes in the grid and units per cube, as the launch path reported them.
  std::array<std::uint32_t, 3> cube_count{1, 1, 1};
  std::array<std::uint32_t, 3> cube_dim{1, 1, 1};
  /// When the launch path reported the launch, on the issuing thread.
  instant issued;
  /// When the launch path handed over its measurement (right after submitting it); `issued` when
  /// the launch was not timed. The host side of the launch spans `issued` to `returned`.
  instant returned;
  /// Its measurement; none when the launch was not timed or its measurement was lost.
  std::optional<launch_timing> timing;
  /// Whether it was a dry run: reported, not executed. A dry launch's measurement has no kernel
  /// under it, so reports count it but give it no device time.
  bool dry_run = false;
  /// Whether it was recorded into a graph rather than run.
  bool captured = false;
  /// Whether it is a kernel node of a replayed graph (graph_replay_observer) rather than a launch
  /// anyone issued: charged to the scope its capture was recorded in, on the pass's "CUDA graph
  /// replays" thread, `issued` and `returned` at the kernel's start.
  bool replayed = false;

  friend bool operator==(const launch_record&, const launch_record&) = default;
};

/// Measurements that did not become a launch's timing, counted so a report can say why a launch
/// has no time rather than leave a silent gap.
struct lost_measurements {
  /// Windows that carried no measurement when read.
  std::size_t empty = 0;
  /// Reads that threw (a kernel that faulted): the launch is kept without a timing.
  std::size_t failed = 0;
  /// Measurements that arrived for no launch this attribution saw on that thread (the observer
  /// was installed between a launch and its measurement).
  std::size_t unpaired = 0;

  friend bool operator==(const lost_measurements&, const lost_measurements&) = default;
};

/// What a pass's trace prefix left out: the launches and scope intervals of a pass that an
/// aggregate-only attribution counted in its summary but kept no record of
/// (attribution_options::trace_prefix_events), so a trace drawn from the prefix can say how much of
/// the pass it does not show.
///
/// Plain data; all zero (and `from` empty) when the prefix holds the whole pass.
struct prefix_left_out {
  /// Launches after the prefix filled: in the summary, not in the prefix.
  std::size_t launches = 0;
  /// Scope intervals left after the prefix filled (a scope still open when it filled is kept).
  std::size_t scope_intervals = 0;
  /// Where the prefix ends, from the pass's origin: the instant the first thing was left out.
  /// Empty when nothing was.
  std::optional<std::chrono::nanoseconds> from;

  /// Whether anything was left out.
  bool any() const noexcept { return launches > 0 || scope_intervals > 0; }

  friend bool operator==(const prefix_left_out&, const prefix_left_out&) = default;
};

/// Everything an attribution collected over one pass.
///
/// Launches and scopes refer to the tables by index, so a pass of a million launches stores each
/// kernel name and scope path once. Instants are on the host's steady clock (device timestamps are
/// mapped onto it), so renderers lay host scopes and kernels on one axis.
struct pass_record {
  /// Where the pass's timeline starts: reports and traces measure time from here. The
  /// attribution's creation or its previous `collect`, or, when that collect left a launch still
  /// waiting for its measurement to this pass, that launch's `issued` if earlier.
  instant origin;
  /// The timing the attribution asked of the launch path.
  timing_request timing = timing_request::none;
  /// Kernel names, each once, in the order first launched.
  std::vector<std::string> kernels;
  /// Scope paths as a tree: a scope's parent comes before it.
  std::vector<scope_info> scopes;
  /// Streams launches went to, in the order first used.
  std::vector<stream_info> streams;
  /// Host threads, in the order first seen.
  std::vector<host_thread> threads;
  /// Launches, in the order they were reported (by `issued`, then by thread).
  std::vector<launch_record> launches;
  /// Measurements that did not make it into `launches`.
  lost_measurements lost;

  /// The names along `scope`'s path, outermost first.
  ///
  /// Precondition: `scope` indexes `scopes`, and parents index earlier entries (throws
  /// std::out_of_range otherwise).
  std::vector<std::string_view> scope_path(std::uint32_t scope) const;

  /// `scope`'s path joined with `separator` ("model/layer 0/attention").
  std::string scope_path_text(std::uint32_t scope, std::string_view separator = "/") const;

  /// How deep `scope` is: 0 for a top-level scope.
  std::size_t scope_depth(std::uint32_t scope) const;

  /// The index of `name` in `kernels`, adding it if it is not there. For building a record by hand.
  std::uint32_t add_kernel(std::string_view name);

  /// The index of the scope at `path` (outermost first), adding any scope missing along it. For
  /// building a record by hand. Precondition: `path` is not empty (throws std::invalid_argument).
  std::uint32_t add_scope_path(const std::vector<std::string_view>& path);

  /// The index of `stream`, adding it if it is not there. For building a record by hand.
  std::uint32_t add_stream(const stream_info& stream);

  friend bool operator==(const pass_record&, const pass_record&) = default;
};

}  // namespace launchwatch
