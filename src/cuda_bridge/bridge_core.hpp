// The CUDA bridge's core: the state machine fed with what CUPTI says (launch callbacks, graph
// resource callbacks, kernel records) that decides what is reported to the launch path and which
// measurement goes to whom. CUPTI-free and CUDA-free: the events are plain structs of its own and
// what it must ask of CUDA goes through `bridge_device`, so it builds in every build and is tested
// on the CPU against a fake CUPTI (tests/cuda_bridge/fake_cupti.hpp). The real bridge
// (callbacks.cpp) translates CUPTI's callback data into these events; cupti_device.cpp answers.
//
// Per launch, on the issuing thread (research/cuda-bridge.md §6): the driver domain's launch ids
// only (a runtime launch nests the driver's, same correlation id, so one domain reports each launch
// once, and libraries that bypass the runtime are caught); at ENTER, before submission, the launch
// is reported and the timing decided (launch_path::begin_issue); at EXIT, after submission, its
// measurement is routed (finish_issue). Between the two the thread keeps what ENTER decided.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include <launchwatch/cuda_bridge.hpp>
#include <launchwatch/profile.hpp>

#include "capture_gate.hpp"
#include "core/interface/thread_counts.hpp"
#include "graph_replays.hpp"
#include "kernel_records.hpp"
#include "kernel_records_gate.hpp"

namespace launchwatch::detail::cuda_bridge {

/// A kernel launch's ENTER or EXIT callback (cuLaunchKernel[Ex], cuLaunchCooperativeKernel and
/// their per-thread forms), as far as the core needs it.
struct launch_call {
  /// CUPTI's (32-bit) correlation id: the same at ENTER, at EXIT and in the kernel's record. The
  /// core widens it to 64 bits at ENTER (correlation_epochs.hpp).
  std::uint32_t correlation = 0;
  /// The kernel's device symbol (ENTER); valid only during the callback.
  const char* symbol = nullptr;
  /// The launch's CUcontext.
  void* context = nullptr;
  /// The CUstream the launch goes to (a per-thread launch's null stream already made explicit).
  void* stream = nullptr;
  /// launch_info::stream for that stream (cupti_calls.hpp's stream_number).
  std::uint64_t stream_number = 0;
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  /// EXIT: whether the driver call succeeded (a failed launch runs no kernel).
  bool launched = true;
};

/// A graph launch's ENTER callback (cuGraphLaunch and its per-thread form).
struct graph_launch_call {
  std::uint32_t correlation = 0;
  /// The key of the CUgraphExec replayed (its address): an executable graph made later at a
  /// destroyed one's address is another, since exec_destroyed forgot the old one first.
  std::uint64_t exec = 0;
  void* context = nullptr;
  std::uint64_t stream_number = 0;
};

/// A node CUPTI announces as created (GRAPHNODE_CREATED): by a capture, by the explicit graph API,
/// or as a copy made by cudaGraphInstantiate.
struct created_node {
  /// The CUgraphNode.
  const void* node = nullptr;
  /// CUPTI's id of the node (cuptiGetGraphNodeId), when CUPTI gave one.
  std::optional<std::uint64_t> id;
  /// Whether it is a kernel node.
  bool kernel = false;
  /// CUPTI's id of the graph it is in (cuptiGetGraphId): its destruction forgets the node.
  std::uint64_t graph = 0;
};

/// What a kernel node added by the explicit graph API says of itself.
struct kernel_node {
  /// The kernel's name as the driver gives it; null when it gives none.
  const char* name = nullptr;
  /// Its CUcontext (the current one when the node names none).
  void* context = nullptr;
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
};

/// What the core asks of CUDA: the real bridge answers through CUPTI and the driver
/// (cupti_device.hpp), tests through a fake. Called on the thread of the event being handled.
class bridge_device {
 public:
  /// The device ordinal of a CUcontext (0 when CUPTI cannot say).
  virtual int device_of(void* context) noexcept = 0;
  /// Whether a stream is recording a graph (stream capture) right now.
  virtual bool capturing(void* stream) noexcept = 0;
  /// Turns kernel records on if they are not yet. Returns whether they are on.
  virtual bool kernel_records_on() noexcept = 0;
  /// Turns kernel records off (the end of a timing window, cuda_timing_windows, or of the profiler
  /// API range, cuda_capture_range; otherwise records stay on until teardown). Returns whether
  /// CUPTI agreed.
  virtual bool kernel_records_off() noexcept = 0;
  /// `resolved` timing: marks the start of the launch's window on its stream, on the issuing thread
  /// before submission. Returns false when it could not.
  virtual bool open_window(void* context, void* stream) noexcept = 0;
  /// `resolved` timing: marks the window's end after submission and returns the measurement (read
  /// at once by the launch path), or nothing when it could not.
  virtual std::optional<profile_duration> close_window(void* stream) = 0;
  /// A kernel node of the explicit graph API, or nothing when the driver cannot describe it.
  virtual std::optional<kernel_node> describe_kernel_node(const void* node) noexcept = 0;

 protected:
  bridge_device() = default;
  ~bridge_device() = default;
  bridge_device(const bridge_device&) = default;
  bridge_device& operator=(const bridge_device&) = default;
};

/// The bridge's state machine. One per bridge engine; its events come from CUPTI's callbacks (any
/// thread, each on the thread CUPTI calls it on) and its records from CUPTI's buffers.
///
/// Thread safety: every member is safe from any thread; a launch's ENTER and EXIT must come on the
/// same thread, as CUPTI calls them. Exceptions never leave an event handler (they run in CUPTI's
/// callbacks): observers' are contained by the launch path, the rest swallowed.
class bridge_core {
 public:
  /// `device` answers the core's questions about CUDA and must outlive it; `flush` is how the
  /// kernel-record table asks for records (kernel_records::flusher). Nothing starts until
  /// start_collecting().
  bridge_core(const cuda_bridge_options& options, bridge_device& device,
              kernel_records::flusher flush);
  bridge_core(const bridge_core&) = delete;
  bridge_core& operator=(const bridge_core&) = delete;

  /// Whether a launch's ENTER is worth handling: something watches. The dispatcher asks before it
  /// counts a callback in flight. Cost: one relaxed load.
  [[nodiscard]] static bool wants_launch_enter() noexcept;
  /// Whether a launch's EXIT is worth handling: this thread has a reported launch open.
  /// Cost: a thread-local read.
  [[nodiscard]] static bool wants_launch_exit() noexcept;

  /// A launch's ENTER, on the issuing thread before submission: reports it (unless launchwatch's
  /// own backend reported it, an observer is launching, or it is outside the capture range) and
  /// decides its measurement. Cost of deferred timing beyond names only: kernel_records::await
  /// (no lock shared with the thread that delivers records, unless the ring slot is taken).
  void launch_entered(const launch_call& call);
  /// A launch's EXIT, on the issuing thread after submission: routes the measurement ENTER decided.
  /// Cost of deferred timing: kernel_records::adopt (no lock, likewise) and the measurement, which
  /// holds a reference to the table (an atomic increment, its decrement when read or dropped).
  void launch_exited(const launch_call& call);
  /// A graph launch's ENTER: its kernel nodes' records will be told, as replayed nodes, to the
  /// observation installed now.
  void graph_launch_entered(const graph_launch_call& call);
  /// ENTER (`entering`) or EXIT of a call of the explicit graph API that adds a node, on this
  /// thread; `adds_kernel`: the node it adds is a kernel node (a child-graph node is not, whatever
  /// kernels the copy of its graph holds: they were reported when they were added to that graph).
  /// `embeds`: the CUPTI id of the graph a child-graph node being added copies (0 for any other
  /// node): the kernel nodes CUPTI announces as created inside that call are copies of its kernel
  /// nodes, mapped to the launches that recorded those, in order, for the replays.
  void node_adding_call(bool entering, bool adds_kernel = true,
                        std::uint64_t embeds = 0) noexcept;
  /// A node was created (GRAPHNODE_CREATED).
  void node_created(const created_node& node);
  /// `clone` (in the executable graph `exec`, 0 when CUPTI did not say) was cloned
  /// from `original` (GRAPHNODE_CLONED). Inside an instantiate call on this thread, the clone
  /// belongs to the executable graph that call makes, whatever `exec` says (a child graph's clones
  /// are in a graph of their own).
  void node_cloned(std::uint64_t original, std::uint64_t clone, std::uint64_t exec);
  /// ENTER of a cudaGraphInstantiate call (any form) on this thread.
  void instantiate_entered() noexcept;
  /// Its EXIT: `exec` is CUPTI's id of the executable graph made, 0 when the call failed. The
  /// clones made during the call are filed under it.
  void instantiate_exited(std::uint64_t exec);
  /// The graph of CUPTI id `graph` is being destroyed (GRAPH_DESTROY_STARTING).
  void graph_destroyed(std::uint64_t graph);
  /// The executable graph `exec` is being destroyed (GRAPHEXEC_DESTROY_STARTING).
  void exec_destroyed(std::uint64_t exec);
  /// The launch callbacks were turned off (nothing watches): a launch caught between its ENTER and
  /// EXIT never gets its EXIT, so its awaited record is forgotten, and the timing window gate stops
  /// waiting for it.
  void launch_callbacks_off() noexcept;
  /// A stream capture is about to begin on `stream` (a key unique to the stream while it lives),
  /// at the ENTER of the driver's begin-capture call on the capturing thread: from now until
  /// capture_ended(), the bridge waits for no device (capture_gate.hpp). Returns once no such wait
  /// of the bridge is in flight.
  void capture_beginning(std::uint64_t stream);
  /// The capture on `stream` ended: the end-capture call returned, or the begin call failed.
  void capture_ended(std::uint64_t stream) noexcept;
  /// Whether kernel records go on as the bridge is made and stay on (records_from_start, with
  /// neither timing windows nor the profiler API range turning them on and off). The bridge's
  /// subscription asks, once.
  [[nodiscard]] bool records_on_from_construction() const noexcept {
    return records_from_start_ && !options_.timing_windows &&
           options_.capture_range != cuda_capture_range::cuda_profiler_api;
  }
  /// Says that the bridge sees every stream capture begin: it subscribed inside cuInit, before any
  /// stream existed, with the begin and end calls' callbacks on. From then on a launch made while
  /// no capture is in progress is known not to be captured, without asking the driver.
  void every_capture_seen() noexcept { every_capture_seen_.store(true, std::memory_order_release); }
  /// Says that the bridge hears of every unload of the memory CUPTI's kernel names point into
  /// (module unloads and context destructions, whose callbacks it subscribed to): from now a
  /// thread's symbol cache takes a name pointer it saw since the last unload without reading the
  /// text behind it (symbol_cache).
  /// Call once both callbacks are on; it starts a new span itself, since an unload may have come
  /// before they were.
  void every_unload_seen() noexcept {
    symbols_may_move();
    every_unload_seen_.store(true, std::memory_order_release);
  }
  /// A module is about to be unloaded, or a context destroyed: kernel names' memory may be freed
  /// and its addresses reused, so every thread's cached name pointers are checked against their
  /// text again. Thread safety: any thread. Cost: one atomic increment.
  static void symbols_may_move() noexcept;
  /// Runs `wait_idle` (a wait for the devices) unless a stream capture is in progress, which a
  /// device synchronisation would invalidate; returns whether the devices may be taken as idle
  /// (capture_gate::synchronise_outside_captures).
  bool wait_idle_outside_captures(const std::function<void()>& wait_idle);

  /// Another CUPTI client is about to take CUPTI's kernel records (the program says so, through
  /// the injection's C API): launches are reported untimed
  /// from now until records_returned() or a record of a later launch reaches the bridge
  /// (record_holder.hpp). Call after delivering what was pending.
  void records_taken_elsewhere();
  /// The other client released CUPTI's kernel records and the bridge registered its own callbacks
  /// again: launches are timed again.
  void records_returned() noexcept;

  /// With cuda_bridge_options::timing_windows, from the thread that keeps their time
  /// (timing_windows.hpp): turns kernel records on and times the launches issued from now on.
  /// Returns false (records stay off, launches untimed) when CUPTI refused.
  bool open_timing_window() noexcept;
  /// Stops timing new launches, waits (at most `patience`) for those already timed to be
  /// submitted, and turns kernel records off. A launch between ENTER and EXIT is a driver call's
  /// worth of time, unless its thread is descheduled (a loaded host: tens of milliseconds); one
  /// whose EXIT never comes is forgotten by launch_callbacks_off(). Past `patience` the records go
  /// off regardless, and the launches still inside may lose theirs.
  void close_timing_window(std::chrono::nanoseconds patience = std::chrono::seconds{1}) noexcept;

  /// cudaProfilerStart returned (cuda_capture_range::cuda_profiler_api opens the range). Where
  /// kernel records are wanted from the range's start (records_from_start), turns them on.
  void profiler_started() noexcept;
  /// cudaProfilerStop is called (the range closes). Where records follow the range (the profiler
  /// API range without timing windows), kernel records go off: outside the range a launch costs
  /// CUPTI's callback alone, not its kernel record too (+1.9 µs a launch on the H200's host). Not
  /// while a launch timed in the range is still between its ENTER and EXIT (its kernel must be
  /// submitted with records on): then the first launch outside the range that finds none turns
  /// them off. Nothing waits here, inside CUPTI's callback of the stop call.
  void profiler_stopped() noexcept;

  /// The table kernel records are delivered to (kernel_records::on_records).
  [[nodiscard]] const std::shared_ptr<kernel_records>& records() const noexcept { return records_; }
  /// Starts the record table's collector thread, once the records' source is ready.
  void start_collecting();
  /// Devices launches were reported on, one bit per ordinal below 64.
  [[nodiscard]] std::uint64_t devices_seen() const noexcept;
  /// Calls `wait_idle` (which waits for the devices; nothing when empty) unless a stream capture is
  /// in progress, then flushes until every awaited record arrived and no replay waits for records.
  /// Awaited records still missing when flushes of idle devices bring nothing, or after
  /// `patience`, are given up (kernel_records::flush_until_delivered): one deadline a flush, never
  /// one a record. While a capture is in progress the devices are not waited for and nothing is
  /// given up: it flushes until what was awaited arrived or `patience` passed, and what is still
  /// missing stays awaited. A replay still waiting then is left to age out (graph_replays), so a
  /// record it gets later is still told.
  void deliver_pending(std::chrono::milliseconds patience,
                       const std::function<void()>& wait_idle = {});
  /// Teardown or the end of `launchwatch run`, after the devices are idle: closes the record table
  /// (its collector stops, one forced flush) and gives up on replays still waiting for records.
  /// Later reads answer at once from what arrived. Once; later calls do nothing.
  void close() noexcept;

  [[nodiscard]] cuda_bridge_stats stats() const noexcept;
  /// The graph bookkeeping's table sizes (graph_replays::sizes), for tests that it stays flat.
  [[nodiscard]] graph_table_sizes graph_tables() const;

  /// The launch_info::launch_id of a launch: unique in the process across bridges (the lower 15
  /// bits of `generation`) and across the wrap of CUPTI's ids (`correlation` is the widened one, of
  /// which 48 bits count: 2^48 CUDA calls, 9 years at 1 M a second); bit 63 is clear.
  [[nodiscard]] static std::uint64_t launch_id_of(std::uint64_t generation,
                                                  std::uint64_t correlation) noexcept;

  /// What a thread keeps between a launch's ENTER and EXIT (bridge_core.cpp).
  struct thread_state;

 private:
  /// Where a kernel's name came from: CUPTI's symbolName in a launch callback, whose memory is
  /// freed only by the unloads the bridge hears of, or another driver call (cuFuncGetName,
  /// cuKernelGetName: a library's memory, which cuLibraryUnload frees with no callback).
  enum class name_source { launch_callback, driver_query };
  /// Sets what every foreign launch says of itself (kernel name, backend, device, grid, block,
  /// collective) and resets the rest; the caller adds stream, capturing and launch_id. A name from
  /// a launch callback is taken by its pointer while no unload came since the thread saw it
  /// (every_unload_seen()); any other is compared with the cached text.
  void describe(launch_info& info, const char* symbol, name_source source, void* context,
                std::array<std::uint32_t, 3> grid, std::array<std::uint32_t, 3> block,
                thread_state& state);
  int device_of(void* context, thread_state& state) noexcept;
  /// A launch recorded into a graph outside the profiler API range: not reported, but open on the
  /// thread so the node CUPTI announces inside it is mapped for the graph's replays (finding 10).
  void open_capture_outside_range(const launch_call& call, thread_state& state);
  /// A kernel node added to a graph by the explicit graph API (cudaGraphAddKernelNode), outside
  /// any capture: reported as a launch recorded into a graph, on the thread that added it.
  void report_kernel_node(const created_node& node);
  void note_device(int device) noexcept;
  /// Where records follow the profiler API range: turns them on for the rest of the range, unless
  /// it closed meanwhile. Returns whether the gate is open. Cost: a lock, once a range (at each
  /// timed launch of a range where CUPTI refuses to turn records on).
  bool open_range_records() noexcept;
  /// Closes the range's gate and turns records off if no launch timed in it is still being
  /// submitted; otherwise leaves that to a later launch outside the range. Holds range_mutex_.
  void close_range_records() noexcept;
  /// Whether `stream` is recording a graph. Asks the driver (cuStreamIsCapturing, 70-90 ns on the
  /// H200, a launch's largest part of the bridge's own names-only cost) only while a capture is in
  /// progress, where every capture's begin is seen (every_capture_seen()); otherwise at every call.
  bool stream_capturing(void* stream) noexcept;

  const cuda_bridge_options options_;
  /// Kernel records are on only inside the profiler API range (cuda_profiler_api without timing
  /// windows, which decide for themselves).
  const bool records_follow_range_;
  /// Records are turned on when watching starts (the range opens), not at the first launch timed:
  /// trace_kernels_from_start, and graph replays told per node (their kernels' records).
  const bool records_from_start_;
  /// Serialises opening the range's records with closing them (profiler_stopped).
  std::mutex range_mutex_;
  /// The range closed while a launch timed in it was being submitted: records are still on, for a
  /// launch outside the range to turn off once none is (close_range_records).
  std::atomic<bool> range_records_off_pending_{false};
  /// Distinguishes this core's launches from an earlier one's in a thread's state.
  const std::uint64_t generation_;
  bridge_device& device_;
  graph_replays graphs_;
  capture_gate captures_;
  std::shared_ptr<kernel_records> records_;
  /// Numbers explicit kernel nodes for their launch_info::launch_id (see report_kernel_node).
  std::atomic<std::uint32_t> explicit_nodes_{0};

  std::atomic<bool> every_capture_seen_{false};
  std::atomic<bool> every_unload_seen_{false};
  std::atomic<bool> in_range_{true};
  std::atomic<std::uint64_t> devices_seen_{0};
  /// The counts every launch changes, each thread on its own line, read only by stats(): a shared
  /// counter was a locked increment a launch, and on the line of the flags above it sent every
  /// other launching thread's next read of them to the changer's cache.
  enum count : std::size_t { reported_count, own_skipped_count, outside_range_count };
  thread_counts<3> launch_counts_;
  std::atomic<std::uint64_t> untimed_records_elsewhere_{0};
  /// Which launches may await their record while records go on and off: timing windows, or the
  /// profiler API range where records follow it (unused otherwise).
  kernel_records_gate records_gate_;
  std::atomic<std::uint64_t> untimed_outside_windows_{0};
};

}  // namespace launchwatch::detail::cuda_bridge
