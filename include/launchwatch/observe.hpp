// Watching kernel launches from the thread that issues them.
//
// An observer is called synchronously on the issuing thread before the launch is submitted: the one
// moment when what the caller is doing still holds, so a kernel can be paired with it. Nothing is
// installed in an ordinary run, and then a launch pays one relaxed load for all of this.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string_view>

#include <launchwatch/profile.hpp>

namespace launchwatch {

namespace detail {
struct observation_stack;
}

/// What an observer asks be done with each launch's measurement.
///
/// Declared once, up front, because the launch path has to decide whether to bracket a launch with
/// profile markers before it submits it. It must not change while an observation is installed: a
/// launch bracketed under one answer and delivered under another loses a measurement that was
/// already paid for (and says so, once per process).
enum class timing_request {
  /// Don't time launches. The default, because timing is not free.
  none,
  /// Time each launch, read the measurement on the issuing thread and call `timed`. The read blocks
  /// until the kernel has run, so kernels run one at a time: right for each kernel's own cost, wrong
  /// for a pipeline's.
  resolved,
  /// Time each launch and hand the measurement over unread to `profiled`, so the kernels keep
  /// running back to back and the observer reads them once the pass is over. Only while the
  /// profiling logger is at `execution_only` or below: past that the logger needs the reading too,
  /// so the launch path reads it and calls `timed` instead.
  deferred,
};

/// The request's name as reports and saved summaries spell it: "none", "resolved" or "deferred".
constexpr std::string_view to_string(timing_request request) noexcept {
  switch (request) {
    case timing_request::resolved:
      return "resolved";
    case timing_request::deferred:
      return "deferred";
    case timing_request::none:
      break;
  }
  return "none";
}

/// Everything the launch path knows about a launch when it reports it, for observers that want more
/// than the name: where it runs (to put kernels on one track per device stream), its grid, and
/// whether it will run at all.
///
/// Growable: fields are only ever added, so an observer written against this version keeps
/// compiling. Passed by reference for the duration of the call; copy what you keep (the views refer
/// to storage that outlives every launch).
struct launch_info {
  /// The kernel's name, as `launched` receives it.
  std::string_view kernel;
  /// The launch source that issued it: a backend's name ("cpu", "cuda", "vulkan"), or "cuda" for
  /// the CUDA bridge's launches.
  std::string_view backend = "cpu";
  /// The device's index within its backend.
  int device = 0;
  /// The stream it was issued on: unique within the process for its lifetime, so tracks never merge.
  std::uint64_t stream = 0;
  /// Cubes in the grid, x, y, z.
  std::array<std::uint32_t, 3> cube_count{1, 1, 1};
  /// Units in each cube, x, y, z.
  std::array<std::uint32_t, 3> cube_dim{1, 1, 1};
  /// Whether the launch will be skipped (a dry run): reported, not executed.
  bool dry_run = false;
  /// Whether it is being recorded into a graph rather than run now.
  bool capturing = false;
  /// Whether it is one side of a collective (it completes only when its peers launch: NCCL's
  /// kernels, a native kernel whose type says so through launchwatch::is_collective). Such a launch
  /// is never timed `resolved` (reading it at once could wait forever); `deferred` is kept.
  bool collective = false;
  /// An id unique within the process for a launch that a later event refers back to, 0 otherwise.
  /// The CUDA bridge numbers every launch it reports, so a graph replay's nodes can name the
  /// capture-time launch that recorded them (graph_replay_observer, below).
  std::uint64_t launch_id = 0;
};

/// Notified of every kernel launch in the process, on the thread that issued it.
///
/// Methods run inside the launch path, before the kernel is submitted, with the lock that guards the
/// installed observer held: they must be cheap, must not launch, and must not install or drop a
/// launch_observation (builds with LAUNCHWATCH_CHECK_REENTRY abort with a message instead of
/// deadlocking). They are not noexcept: an exception escaping one is caught by the launch path,
/// logged once per process, and the launch goes on. Methods may be called from several threads at
/// once, so an implementation guards its own state.
class launch_observer {
 public:
  virtual ~launch_observer() = default;

  /// A kernel was issued, named as it names itself (see format_kernel_name to shorten it).
  ///
  /// The view refers to storage that outlives every launch of the process, so it may be kept.
  /// Called before the launch reaches the backend, in issue order on each thread, also under a dry
  /// run (see dry_run()) and inside a graph capture window; not for a graph's replays.
  virtual void launched(std::string_view kernel) = 0;

  /// The same event with everything the launch path knows about it. Runtimes report through this;
  /// the default forwards the name to `launched`, so an observer overrides whichever it needs.
  virtual void launched_with(const launch_info& info) { launched(info.kernel); }

  /// Whether each launch is timed, and whether its measurement goes to `profiled` or `timed`.
  ///
  /// `none` by default: timing brackets every launch with profile markers, and `resolved` also
  /// blocks until each kernel has run. The answer must be constant while installed.
  virtual timing_request timing() const { return timing_request::none; }

  /// A launch's measurement, unread. Called only under `timing_request::deferred`, on the issuing
  /// thread, right after the launch. Keep it and resolve it once the measured work is over:
  /// resolving here would hold the observer lock for the length of the kernel. On device-timed
  /// backends the ticks are device timestamps on one clock, mapped onto `instant`, so gaps between
  /// kernels are the device's idle time. The default drops it.
  virtual void profiled(std::string_view kernel, profile_duration profile) {
    (void)kernel;
    (void)profile;
  }

  /// A launch finished and took `length`, measured by `method`.
  ///
  /// Called under `resolved`, and under `deferred` in place of `profiled` whenever the profiling
  /// logger is reading measurements too: an observer that keeps measurements unread still wants
  /// this, or it loses every timing while the logger is on. Arrives after the launch, so pair the
  /// kernel with your own state in `launched`. Only the observer the launch was reported to is told,
  /// and only while it is still installed. `system` and `device` are different measurements; don't
  /// report one as the other.
  virtual void timed(std::string_view kernel, std::chrono::nanoseconds length,
                     timing_method method) {
    (void)kernel;
    (void)length;
    (void)method;
  }
};

/// Installs an observer for every launch the process issues while it lives, then puts back whatever
/// it replaced.
///
/// Process-wide rather than per client, because the work a caller attributes reaches several
/// clients on several streams; filtering is the observer's job. A guard rather than an install and
/// stop pair, so the watched region is a C++ scope with no restore step an early return can skip.
/// There is one slot: a second observation replaces the first for its lifetime, and guards dropped
/// in reverse order leave the process as they found it. A guard dropped out of order (two threads
/// each watching for a while) takes its observer out of the stack without disturbing the others, so
/// an ended observation is never put back.
///
/// Thread safety: may be created and destroyed on any thread, while others launch; every launch
/// reaches exactly one observer or none, and none reaches an observer after its observation's
/// destructor returned. Must not be created or destroyed inside an observer method.
/// Cost: takes the slot's exclusive lock, waiting for launches being reported.
class [[nodiscard]] launch_observation {
 public:
  /// Installs `observer` until this guard is destroyed.
  ///
  /// Precondition: `observer` is not null (throws std::invalid_argument).
  explicit launch_observation(std::shared_ptr<launch_observer> observer);
  /// Puts back the observer this one replaced, or none.
  ~launch_observation();

  /// Whether `observer` is the installed observer now: the one the newest live observation
  /// installed (identity, not equality). An observer installed by an observation that a newer one
  /// shadows is not. For an observer that does not hold the observation installing it (attribution)
  /// and needs to know whether measurements can still reach it.
  ///
  /// The answer can be stale once it returns. Safe from any thread; must not be called from inside
  /// an observer method (aborts, with LAUNCHWATCH_CHECK_REENTRY). Cost: one relaxed load when
  /// nothing is installed; otherwise a shared lock of the observer slot.
  [[nodiscard]] static bool is_installed(const launch_observer& observer) noexcept;

  launch_observation(const launch_observation&) = delete;
  launch_observation& operator=(const launch_observation&) = delete;
  launch_observation(launch_observation&&) = delete;
  launch_observation& operator=(launch_observation&&) = delete;

 private:
  friend struct detail::observation_stack;

  // Observations form a stack in the order they were installed; the top one is the installed
  // observer. A guard unlinks itself wherever it stands, so one dropped out of order never puts back
  // an observer whose observation has already ended. Neither copyable nor movable, so these links
  // stay valid.
  std::shared_ptr<launch_observer> observer_;
  // Unique in the process and never reused: a launch remembers the observation it was reported to
  // by this, and a measurement arriving later goes to it only if it is still the installed one.
  std::uint64_t serial_ = 0;
  launch_observation* below_ = nullptr;
  launch_observation* above_ = nullptr;
};

/// One kernel node of a replayed CUDA graph, with its device time: what a graph_replay_observer is
/// told (by a cuda_bridge made with cuda_graph_replays::per_node).
struct replayed_node {
  /// The kernel's name: the same interned view its capture-time launch was reported with.
  std::string_view kernel;
  /// The launch_info::launch_id of the launch that recorded this node during the capture, so an
  /// observer charges the time to what it saw then (its scope path, for attribution).
  std::uint64_t captured_launch = 0;
  /// Which replay this was: the same for every node of one cudaGraphLaunch, distinct across replays.
  std::uint64_t replay = 0;
  /// The device and stream the replay ran on.
  int device = 0;
  std::uint64_t stream = 0;
  /// When the node's kernel ran, on the steady clock (device timestamps, timing_method::device).
  profile_ticks ticks = profile_ticks::from_start_end(instant{}, instant{});
};

/// Opt-in extension for observers that want device time of graph replays (beyond the spec, which
/// reports nothing per replay). An observer derives from launch_observer and from this; with a
/// bridge built with cuda_graph_replays::per_node (cuda_bridge.hpp), each replayed kernel node is
/// told here. `attribution` implements it: each node's time is charged to the scope its launch
/// was captured in, so a graph-heavy program's report still accounts for its device time.
///
/// Why a separate interface: a replay is not a launch (nothing is issued, no scope is current on
/// its thread for the nodes), so it must not reach `launched`, and an observer that never asked
/// pays nothing. The captured launch's id is the link back to what the observer saw at capture.
///
/// Contract: called on the bridge's collector thread (or the thread calling cuda_bridge::flush),
/// after the replay ran, with the observer slot's shared lock held, and only while the observation
/// that was installed when the replay was launched is still installed (behaviour 6's rule). Same
/// rules as launch_observer methods: cheap, must not launch, must not install or drop an
/// observation; exceptions are contained.
class graph_replay_observer {
 public:
  virtual ~graph_replay_observer() = default;
  /// A replayed kernel node ran; `node.ticks` says when.
  virtual void replayed(const replayed_node& node) = 0;
};

}  // namespace launchwatch
