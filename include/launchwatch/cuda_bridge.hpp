// The CUDA bridge: every CUDA kernel the process launches, reported like one of launchwatch's own.
//
// Most kernels a C++ program runs are not launched through launchwatch's client: cuBLAS, cuDNN,
// NCCL, CUTLASS, Triton, libtorch, the program's own `<<<>>>`. While a cuda_bridge lives, each of
// them reaches the installed launch observer through the same launch path as a native launch
// (launch_path.hpp): reported synchronously on the issuing thread before it is submitted, timed on
// request, attributed to scopes, rendered by the same reports. It hangs on CUPTI's driver-domain
// launch callbacks (which run exactly there) and takes device time from CUPTI's concurrent-kernel
// records on the steady clock. Facts behind the design: docs/design.md §8, research/cuda-bridge.md;
// user-facing guide: docs/cuda_bridge.md.
//
// Declared in every build, with no CUDA header: a build without CUDA (or without CUPTI) links, and
// constructing a bridge there throws cuda_bridge_unavailable saying so.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <launchwatch/errors.hpp>
#include <launchwatch/observe.hpp>
#include <launchwatch/profile.hpp>

namespace launchwatch {

namespace detail {
class cuda_bridge_engine;
}

/// Which launches the bridge reports: all of them, or only those between the program's
/// cudaProfilerStart / cuProfilerStart and the matching Stop (as Nsight Systems'
/// `--capture-range=cudaProfilerApi` does), so a program can mark the part worth watching.
enum class cuda_capture_range {
  /// Every launch while the bridge lives.
  whole,
  /// Only launches (and graph replays) issued while the profiler API range is open. Closed at
  /// construction; Start opens it, Stop closes it, any number of times. A graph captured (or
  /// built) outside the range is not reported, but its replays inside the range are
  /// (cuda_graph_replays::per_node), as with Nsight's capture-then-Start pattern. CUPTI's kernel
  /// records are on only inside the range (unless timing_windows decide): outside it a launch is
  /// counted at the cost of CUPTI's callback, without the record's (+1.9 µs a launch on the
  /// H200's host), and a launch timed inside it keeps its record when Stop comes before its
  /// submission ends.
  cuda_profiler_api,
};

/// What the bridge does with a CUDA graph's replays. A replay is never reported to `launched`
/// (behaviour 12: its kernels were reported once, when the capture recorded them).
enum class cuda_graph_replays {
  /// Replays are run and not reported at all. The default: nothing is traced for them.
  unreported,
  /// Each replayed kernel node's device time is told to an installed observer that also derives
  /// from graph_replay_observer, charged to the launch that recorded the node (its
  /// launch_info::launch_id). Enables CUPTI's concurrent-kernel records at construction, which
  /// costs every launch of the process about +0.8 µs host (research/cuda-bridge.md §2).
  per_node,
};

/// Device timing in windows, for a job that keeps watching for days: CUPTI's kernel records are on
/// for `on`, then off for `off`, and so on from the bridge's start. Every launch is still reported
/// and attributed; a deferred measurement is taken for the launches issued while a window is open,
/// and refused (names and counts only, said in the measurement and counted in
/// cuda_bridge_stats::untimed_outside_windows) for the others, so the records' cost (about +0.8 µs
/// a launch on the host and some device time, research/cuda-bridge.md §2) is paid only in windows.
/// Nothing is scaled: the report says which share of launches carries device time.
struct cuda_timing_windows {
  /// How long each window keeps kernel records on. Must be positive.
  std::chrono::milliseconds on{200};
  /// How long records stay off between windows. Must be positive.
  std::chrono::milliseconds off{800};
};

/// Reads `ON_MS/OFF_MS` (as `200/800`), the argument of `launchwatch run --timing windows:`.
/// Throws configuration_error saying what was wrong and what to give. Thread safety: a pure
/// function.
[[nodiscard]] cuda_timing_windows parse_timing_windows(std::string_view text);

/// How a cuda_bridge watches the process. Every field has a default that suits a program that
/// just wants its kernels in the reports.
struct cuda_bridge_options {
  /// Which launches are reported; see cuda_capture_range.
  cuda_capture_range capture_range = cuda_capture_range::whole;
  /// What graph replays are told; see cuda_graph_replays.
  cuda_graph_replays graph_replays = cuda_graph_replays::unreported;
  /// Turn CUPTI's concurrent-kernel records on at construction (with cuda_profiler_api, at each
  /// Start) rather than at the first launch an observer asks to time. The lazy default keeps a
  /// names-only pass at callback cost (+0.2-0.5 µs a launch); records cost about +0.8 µs a launch
  /// host and 9-10% device on back-to-back short kernels, from the moment they are on until the
  /// bridge is destroyed (timing_windows and the profiler API range turn them off and on instead,
  /// which was measured safe on driver 580).
  bool trace_kernels_from_start = false;
  /// Time only in windows (cuda_timing_windows); unset, every deferred measurement is taken. When
  /// set, it overrides trace_kernels_from_start, and graph replays (cuda_graph_replays::per_node)
  /// are told only for replays launched inside a window. Turning records on and off was shown safe
  /// on driver 580: 10,000 cycles while 8 threads launched (docs/benchmarks.md).
  std::optional<cuda_timing_windows> timing_windows;
  /// How often the collector thread asks CUPTI for completed records while a deferred measurement
  /// is awaited (and at once when a resolve starts waiting). CUPTI never delivers a buffer that is
  /// not full on its own, so someone must flush; a flush with nothing pending costs about 9 µs, and
  /// nothing is flushed while no measurement is awaited.
  std::chrono::milliseconds flush_period{10};
  /// How long resolving a deferred measurement waits for its record before giving up (the
  /// measurement is then empty, with behaviour 8's warning and a count in stats()). CUPTI withholds
  /// a record until every kernel sharing its buffer has finished, so this bounds the wait for the
  /// longest kernel in flight, not only this one.
  std::chrono::milliseconds record_timeout{std::chrono::seconds{30}};
  /// Honour LAUNCHWATCH_CUPTI (`on`, the default, or `off`): with `off` the constructor throws
  /// cuda_bridge_unavailable saying so, so an unmodified program can be run without the bridge. A
  /// value other than on/off throws configuration_error naming the variable and the accepted values.
  bool read_environment = true;
};

/// The bridge could not start, and why; the process's CUDA is left as it was, and launchwatch then
/// sees only its own launches (client::cuda).
///
/// The message says what to do. why() lets a program react (run without the bridge, or report the
/// other tool that holds CUPTI).
class cuda_bridge_unavailable : public backend_unavailable {
 public:
  /// What stood in the way.
  enum class reason {
    /// This build has no CUDA backend, or was built without CUPTI's headers.
    not_built,
    /// LAUNCHWATCH_CUPTI=off.
    turned_off,
    /// No CUDA device (or no driver) on this machine.
    no_device,
    /// Another CUPTI subscriber holds CUPTI (Nsight, compute-sanitizer, the PyTorch profiler,
    /// another tool's injection): holder() names it as CUPTI reports it.
    cupti_in_use,
    /// The CUPTI, driver or runtime versions do not fit each other (the versions are in the
    /// message).
    incompatible,
    /// CUPTI failed in another way (the call and CUPTI's error are in the message).
    cupti_failed,
    /// No CUPTI library was found at run time (LAUNCHWATCH_CUPTI_LIBRARY, the Python
    /// environment's nvidia-cuda-cupti wheel, the CUDA toolkit: the message names each place
    /// looked in), or the one LAUNCHWATCH_CUPTI_LIBRARY names does not open as CUPTI.
    cupti_not_found,
  };

  cuda_bridge_unavailable(reason why, const std::string& message, std::string holder = {})
      : backend_unavailable{message},
        why_{why},
        holder_{std::make_shared<const std::string>(std::move(holder))} {}

  /// What stood in the way.
  [[nodiscard]] reason why() const noexcept { return why_; }
  /// The name of the CUPTI subscriber that holds CUPTI, as CUPTI gives it (for example "CUPTI for
  /// <not provided>"); empty unless why() is cupti_in_use.
  [[nodiscard]] std::string_view holder() const noexcept { return *holder_; }

 private:
  reason why_;
  std::shared_ptr<const std::string> holder_;  // shared: an exception's copy must not throw
};

/// What a bridge has done so far, for tests, the `launchwatch run` summary and a program that wants
/// to say how complete its timings are. Counts since the process's first bridge was constructed.
struct cuda_bridge_stats {
  /// Foreign launches reported to the launch path (graph replays not included).
  std::uint64_t launches_reported = 0;
  /// Launches launchwatch's own CUDA backend issued, seen by CUPTI and skipped (reported by the
  /// backend itself, so never twice).
  std::uint64_t own_launches_skipped = 0;
  /// Launches outside the capture range (cuda_capture_range::cuda_profiler_api), not reported.
  std::uint64_t outside_capture_range = 0;
  /// Deferred measurements whose CUPTI record arrived.
  std::uint64_t measurements_delivered = 0;
  /// Deferred measurements that never got a record (timed out, the record was lost or carried no
  /// timestamps): each resolved empty, never as zero.
  std::uint64_t measurements_missing = 0;
  /// Records CUPTI says it dropped (its buffers were full).
  std::uint64_t records_dropped = 0;
  /// Replayed graph nodes told to a graph_replay_observer.
  std::uint64_t replayed_nodes_delivered = 0;
  /// Of those, nodes whose making the bridge never saw (no captured launch to charge them to):
  /// told under their kernel record's name, with captured_launch 0.
  std::uint64_t replayed_nodes_unmapped = 0;
  /// Launches reported untimed (their measurement refused, said once) because another CUPTI
  /// client of the program (a CUPTI tool that registers activity buffers although its
  /// subscription was refused) held CUPTI's kernel records: CUPTI hands every record
  /// to the last client that registered activity buffers, so the bridge counts launches names-only
  /// until the records reach it again.
  std::uint64_t untimed_records_elsewhere = 0;
  /// Windows during which another CUPTI client held the kernel records, and their length so far.
  std::uint64_t records_taken_windows = 0;
  std::chrono::nanoseconds records_taken_for{0};
  /// With cuda_bridge_options::timing_windows: launches reported untimed because they were issued
  /// between two timing windows, and the windows opened so far.
  std::uint64_t untimed_outside_windows = 0;
  std::uint64_t timing_windows_opened = 0;
};

// replayed_node and graph_replay_observer, what cuda_graph_replays::per_node tells, are in
// observe.hpp: observers (attribution among them) implement them without depending on the bridge.

/// Reports every CUDA kernel launch in the process to launchwatch's launch path while it lives.
///
/// RAII because the bridge holds a process-wide resource (CUPTI has one subscriber) that must be
/// given back exactly: the destructor turns records off after the device is idle, unsubscribes and
/// calls cuptiFinalize, so launches after it are as fast as before it (without cuptiFinalize they
/// stay slower for the rest of the process). That holds for a few bridges; CUPTI itself leaves a
/// little behind each time: after one CUPTI session a launch took 4.06 µs against 4.05 before it,
/// after 30 to 60 sessions in one process 4.4-5.2 µs (H200, driver 580, docs/benchmarks.md). Keep
/// one bridge for the process's life rather than making one per phase.
///
/// What it reports: each kernel launch CUDA's driver sees (runtime `<<<>>>`, cudaLaunchKernel[Ex],
/// cooperative launches, direct cuLaunchKernel[Ex], libraries that bypass the runtime), once, on the
/// issuing thread, before submission, with launch_info{kernel (demangled once per distinct name),
/// backend "cuda", device, stream, grid, block, capturing, collective for NCCL's kernels,
/// launch_id}. Launches made by launchwatch's own CUDA backend are skipped (the backend reports
/// them). A foreign launch cannot be skipped, so under a dry run it is reported with dry_run false
/// and runs. Inside a stream capture it is reported with capturing true and its measurement refused
/// (behaviour 10), and so is a kernel node added with the explicit graph API (cudaGraphAddKernelNode),
/// when it is added, on the adding thread, with stream 0; replays are not reported (see
/// cuda_graph_replays).
///
/// Timing: `deferred` hands a measurement that resolves from the kernel's CUPTI record (device
/// start and end, on the steady clock); `resolved` (and the logger past execution_only) brackets the
/// launch with two CUDA events and reads them at once, on the issuing thread.
///
/// One bridge per process at a time in effect: a second cuda_bridge constructed while one lives
/// shares it (its options are ignored) and the last one destroyed tears it down.
///
/// Thread safety: construct and destroy on any thread, not inside an observer method, and not while
/// another thread is constructing or destroying one. Launches may run on any thread meanwhile.
/// Cost (H200, docs/benchmarks.md): nothing measurable while nothing observes (CUPTI's launch
/// callbacks are enabled only while something watches); names only +0.27 µs a launch; deferred
/// +1.35 µs host (CUPTI's kernel records are +0.7-0.8 of it); resolved waits for each kernel.
class [[nodiscard]] cuda_bridge {
 public:
  /// Subscribes to CUPTI and starts reporting.
  ///
  /// Throws cuda_bridge_unavailable (why() says which case) when this build has no CUDA or CUPTI,
  /// LAUNCHWATCH_CUPTI=off, there is no device, another subscriber holds CUPTI (holder() names it),
  /// or the versions do not fit; configuration_error for a bad LAUNCHWATCH_CUPTI or timing windows
  /// whose on or off time is not positive. Nothing is left subscribed when it throws. Best
  /// constructed before the program's first CUDA call.
  explicit cuda_bridge(cuda_bridge_options options = {});
  /// Waits for the devices the bridge saw launches on, delivers what is pending, and gives CUPTI
  /// back (cuptiFinalize). Measurements not yet resolved then resolve from what arrived, or empty.
  ~cuda_bridge();

  cuda_bridge(const cuda_bridge&) = delete;
  cuda_bridge& operator=(const cuda_bridge&) = delete;
  cuda_bridge(cuda_bridge&&) = delete;
  cuda_bridge& operator=(cuda_bridge&&) = delete;

  /// Waits until every device the bridge saw a launch on is idle, then delivers every pending
  /// measurement (deferred records become readable at once; replayed graph nodes are told). For
  /// the end of a pass or of the process (`launchwatch run` calls it at exit), before reports are
  /// written.
  ///
  /// While a stream capture is in progress on any thread, a device synchronisation would
  /// invalidate it, so flush() then does not wait for the devices: it delivers the records that
  /// arrive within 2 s and leaves the rest awaited (their reads wait for them as usual); a capture
  /// that begins while flush() waits for the devices begins once that wait is over.
  ///
  /// Thread safety: any thread, not inside an observer method. Work that other threads launch
  /// meanwhile may still be pending when it returns. Cost: a device synchronise and a CUPTI flush.
  void flush();

  /// Counts of what the bridge did so far. Any thread. Cost: a few relaxed loads.
  [[nodiscard]] cuda_bridge_stats stats() const noexcept;

  /// Whether this build can run a bridge at all (CUDA and CUPTI were built in); false means the
  /// constructor always throws cuda_bridge_unavailable with reason not_built.
  [[nodiscard]] static bool built() noexcept;

 private:
  std::shared_ptr<detail::cuda_bridge_engine> engine_;
};

}  // namespace launchwatch
