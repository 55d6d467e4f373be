// The bridge's state machine (bridge_core.hpp): launch ENTER/EXIT pairing, graph nodes and replays.
#include "bridge_core.hpp"

#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <launchwatch/launch_path.hpp>

#include "core/interface/kernel_symbols.hpp"
#include "core/interface/made_on_first_use.hpp"

namespace launchwatch::detail::cuda_bridge {

/// What a thread keeps between a launch's ENTER and EXIT callbacks, and its caches. Trivially
/// destructible, so reaching it costs a thread-local address and nothing at thread exit.
struct bridge_core::thread_state {
  /// A reported launch's ENTER came and its EXIT has not yet (or a capture_only one's).
  bool open = false;
  /// The open launch is recorded into a graph outside the profiler API range: not reported, only
  /// its node mapped to its launch id, so the graph's replays inside the range are told (review
  /// 2026-12-01b, finding 10).
  bool capture_only = false;
  /// The open launch awaits its kernel record (deferred timing).
  bool awaiting = false;
  /// The open launch entered the timing window gate (cuda_timing_windows) with `window_ticket`,
  /// and leaves it at its EXIT.
  bool in_window = false;
  std::uint32_t window_ticket = 0;
  /// The core generation inside whose callbacks this thread is in a call of the explicit graph API
  /// that adds a kernel node (cuGraphAddKernelNode, cuGraphAddNode), 0 when it is in none: the
  /// first kernel node CUPTI says was created meanwhile is that call's (not a capture's, nor a
  /// copy made by cudaGraphInstantiate, which CUPTI also announces as created). A generation, not
  /// a flag, so a call whose EXIT never came (its bridge was torn down between) misleads no later
  /// bridge. Reset once the call's node is reported: CUPTI may announce more kernel nodes inside
  /// one call (copies of a child graph's), which were reported when they were added there.
  std::uint64_t adding_node = 0;
  /// The generation inside whose callbacks this thread is in a call adding a child-graph node,
  /// and the CUPTI id of the graph it copies; `copies_made` counts the kernel copies announced.
  std::uint64_t embedding = 0;
  std::uint64_t embedded_graph = 0;
  std::uint32_t copies_made = 0;
  /// The generation inside whose callbacks this thread is in a cudaGraphInstantiate call (the
  /// clones CUPTI announces during it are in instantiate_clones).
  std::uint64_t instantiating = 0;
  /// The generation of the core that opened the launch.
  std::uint64_t generation = 0;
  /// The open launch's correlation id, widened (correlation_epochs.hpp).
  std::uint64_t correlation = 0;
  launch_info info;
  launch_path::issue_decision decision;
  std::string_view refusal;
  /// The open launch's CUstream, for the closing mark of a resolved window.
  void* stream = nullptr;
  // The device of the context last seen: launches of one thread mostly stay on one.
  void* device_context = nullptr;
  int device = 0;
  /// This thread's cache of kernel names (28 KiB), made at its first launch so that a thread that
  /// launches nothing carries none of it.
  made_on_first_use<symbol_cache> symbols;
};

namespace {

// Constant-initialised and trivially destructible, so a launch reads it directly: a thread_local
// with a destructor is reached through the file's thread-local initialisation function, a call at
// each of a launch's three reads (and in the injected library, a dynamic linker's lookup more).
constinit thread_local bridge_core::thread_state this_thread;
static_assert(std::is_trivially_destructible_v<bridge_core::thread_state>);

/// This thread's state, its address taken once. In the injected shared library a thread-local's
/// address comes from a call into the dynamic linker (__tls_get_addr), which GCC repeats after
/// every other call a function makes rather than keep its result: seven times on a launch's ENTER
/// path. Passed through an empty asm, the address is an ordinary value the compiler keeps.
bridge_core::thread_state& this_thread_state() noexcept {
  bridge_core::thread_state* state = &this_thread;
  asm("" : "+r"(state));
  return *state;
}

/// The clones (original, clone) CUPTI announced during this thread's cudaGraphInstantiate call,
/// filed once the call says its exec (thread_state::instantiating).
thread_local std::vector<std::pair<std::uint64_t, std::uint64_t>> instantiate_clones;

/// Numbers the spans in which no kernel name's memory was freed (symbol_cache's generation): raised
/// at every module unload or context destruction a bridge hears of, and when a bridge starts to
/// hear of them (every_unload_seen), since none heard of the unloads while no bridge lived.
std::atomic<std::uint64_t> symbol_generation{1};

constexpr std::string_view outside_windows_refusal =
    "the launch was issued between two timing windows (--timing windows): it is counted and "
    "attributed without device time";

constexpr std::string_view range_closed_refusal =
    "the profiler API range closed (cudaProfilerStop) while the launch was being issued: it is "
    "counted and attributed without device time";

constexpr std::string_view records_elsewhere_refusal =
    "another CUPTI client of the program holds CUPTI's kernel records; the launch is counted "
    "untimed until they reach launchwatch again";

std::atomic<std::uint64_t> generations{1};

}  // namespace

bridge_core::bridge_core(const cuda_bridge_options& options, bridge_device& device,
                         kernel_records::flusher flush)
    : options_{options},
      records_follow_range_{options.capture_range == cuda_capture_range::cuda_profiler_api &&
                            !options.timing_windows},
      records_from_start_{options.trace_kernels_from_start ||
                          options.graph_replays == cuda_graph_replays::per_node},
      generation_{generations.fetch_add(1)},
      device_{device},
      graphs_{options_.record_timeout},
      captures_{options_.record_timeout} {
  std::function<void(const kernel_record&)> others;
  std::function<bool()> others_pending;
  if (options_.graph_replays == cuda_graph_replays::per_node) {
    others = [this](const kernel_record& record) { graphs_.on_record(record); };
    others_pending = [this] { return graphs_.pending(); };
  }
  records_ = std::make_shared<kernel_records>(options_.flush_period, options_.record_timeout,
                                              std::move(flush), std::move(others),
                                              std::move(others_pending));
  if (options_.capture_range == cuda_capture_range::cuda_profiler_api) {
    in_range_.store(false, std::memory_order_relaxed);
  }
}

bool bridge_core::wants_launch_enter() noexcept { return launch_path::watched(); }

bool bridge_core::wants_launch_exit() noexcept { return this_thread.open; }

int bridge_core::device_of(void* context, thread_state& state) noexcept {
  if (context == state.device_context && context != nullptr) return state.device;
  state.device_context = context;
  state.device = device_.device_of(context);
  return state.device;
}

void bridge_core::symbols_may_move() noexcept {
  symbol_generation.fetch_add(1, std::memory_order_acq_rel);
}

void bridge_core::describe(launch_info& info, const char* symbol, name_source source, void* context,
                           std::array<std::uint32_t, 3> grid, std::array<std::uint32_t, 3> block,
                           thread_state& state) {
  const char* const spelt = symbol != nullptr ? symbol : "(unnamed CUDA kernel)";
  // Without a cache (out of memory, or the thread's end freed it) names come from the table.
  symbol_cache* const cache = state.symbols.get();
  const kernel_symbol named =
      cache == nullptr ? symbol_table::process().intern(spelt)
      : source == name_source::launch_callback && every_unload_seen_.load(std::memory_order_acquire)
          ? cache->find(spelt, symbol_table::process(),
                        symbol_generation.load(std::memory_order_acquire))
          : cache->find(spelt, symbol_table::process());
  info = launch_info{};
  info.kernel = named.name;
  info.backend = "cuda";
  info.device = device_of(context, state);
  info.cube_count = grid;
  info.cube_dim = block;
  // A foreign launch cannot be skipped: under a dry run it runs, and says so by dry_run false.
  info.dry_run = false;
  info.collective = named.collective;
}

void bridge_core::note_device(int device) noexcept {
  const std::uint64_t bit = std::uint64_t{1} << (device & 63);
  if ((devices_seen_.load(std::memory_order_relaxed) & bit) == 0) {
    devices_seen_.fetch_or(bit, std::memory_order_relaxed);
  }
}

void bridge_core::launch_entered(const launch_call& call) {
  thread_state& state = this_thread_state();
  if (launch_path::reported_here_now()) {
    // Launchwatch's own backend reported this launch through the launch path already.
    launch_counts_.add(own_skipped_count);
    return;
  }
  if (launch_path::inside_observer()) {
    // An observer method is launching (it called a library that launches): behaviour 13. Builds
    // that check abort here saying so; others leave the nested launch unreported rather than
    // deadlock on the slot's lock.
    launch_path::check_outside_observer("launch a CUDA kernel");
    return;
  }
  if (state.open) {
    // A launch whose EXIT never came: the callbacks were switched off between its ENTER and EXIT,
    // which happens only when nothing watched any more, so nobody wants its measurement.
    if (state.generation == generation_ && state.awaiting) records_->forget(state.correlation);
    state.open = false;
    state.awaiting = false;
  }
  state.capture_only = false;
  if (!in_range_.load(std::memory_order_relaxed)) {
    launch_counts_.add(outside_range_count);
    if (range_records_off_pending_.load(std::memory_order_relaxed)) {
      // Never waits for the lock: a launch outside the range only offers to finish the close.
      if (std::unique_lock lock{range_mutex_, std::try_to_lock};
          lock && !in_range_.load(std::memory_order_relaxed)) {
        close_range_records();
      }
    }
    // Nsight's usual pattern: capture, then cudaProfilerStart, replay, Stop. The capture is not
    // reported, but its node is mapped so the replays inside the range are told (finding 10).
    if (options_.graph_replays == cuda_graph_replays::per_node && stream_capturing(call.stream)) {
      open_capture_outside_range(call, state);
    }
    return;
  }
  const std::uint64_t correlation = records_->widen_at_enter(call.correlation);
  launch_info& info = state.info;
  describe(info, call.symbol, name_source::launch_callback, call.context, call.grid, call.block,
           state);
  info.stream = call.stream_number;
  info.capturing = stream_capturing(call.stream);
  info.launch_id = launch_id_of(generation_, correlation);

  state.generation = generation_;
  state.correlation = correlation;
  state.stream = call.stream;
  state.refusal = {};
  state.awaiting = false;
  try {
    state.decision = launch_path::begin_issue(info);
  } catch (...) {
    return;  // nothing may cross into CUPTI; begin_issue contains observers' exceptions itself
  }
  state.open = true;
  launch_counts_.add(reported_count);
  note_device(info.device);
  if (!state.decision.measure()) return;
  if (info.capturing) {
    state.refusal = launch_path::capture_refusal;
  } else if (state.decision.when() == launch_path::read_when::at_once) {
    if (!device_.open_window(call.context, call.stream)) {
      state.refusal = "CUDA could not record an event on its stream";
    }
  } else if (records_->holder().held_elsewhere()) {
    // Names only until they come back: a record awaited now would never come.
    state.refusal = records_elsewhere_refusal;
    untimed_records_elsewhere_.fetch_add(1, std::memory_order_relaxed);
  } else if (options_.timing_windows || records_follow_range_) {
    std::optional<std::uint32_t> ticket = records_gate_.enter();
    if (!ticket && records_follow_range_ && open_range_records()) ticket = records_gate_.enter();
    if (ticket) {
      state.in_window = true;
      state.window_ticket = *ticket;
      records_->await(correlation);
      state.awaiting = true;
    } else if (options_.timing_windows) {
      state.refusal = outside_windows_refusal;
      untimed_outside_windows_.fetch_add(1, std::memory_order_relaxed);
    } else {
      state.refusal = in_range_.load(std::memory_order_relaxed)
                          ? "CUPTI's kernel records could not be turned on"
                          : range_closed_refusal;
    }
  } else if (device_.kernel_records_on()) {
    records_->await(correlation);
    state.awaiting = true;
  } else {
    state.refusal = "CUPTI's kernel records could not be turned on";
  }
}

void bridge_core::open_capture_outside_range(const launch_call& call, thread_state& state) {
  const std::uint64_t correlation = records_->widen_at_enter(call.correlation);
  describe(state.info, call.symbol, name_source::launch_callback, call.context, call.grid,
           call.block, state);
  state.info.capturing = true;
  state.info.launch_id = launch_id_of(generation_, correlation);
  state.generation = generation_;
  state.correlation = correlation;
  state.awaiting = false;
  state.capture_only = true;
  state.open = true;
}

void bridge_core::launch_exited(const launch_call& call) {
  thread_state& state = this_thread_state();
  if (state.generation != generation_ ||
      static_cast<std::uint32_t>(state.correlation) != call.correlation) {
    return;
  }
  state.open = false;
  if (std::exchange(state.in_window, false)) records_gate_.leave(state.window_ticket);  // submitted
  if (std::exchange(state.capture_only, false)) return;  // never reported
  const bool awaiting = std::exchange(state.awaiting, false);
  try {
    if (!state.decision.measure()) {
      launch_path::finish_issue(state.info, state.decision);
      return;
    }
    launch_path::measured_submission submitted;
    if (!state.refusal.empty()) {
      submitted.refusal = state.refusal;
    } else if (!call.launched) {
      if (awaiting) records_->forget(state.correlation);
      submitted.refusal = "the launch failed, so no kernel ran";
    } else if (state.decision.when() == launch_path::read_when::at_once) {
      submitted.profile = device_.close_window(state.stream);
      if (!submitted.profile) submitted.refusal = "CUDA could not record an event on its stream";
    } else if (!records_->adopt(state.correlation)) {
      // The launch callbacks were turned off between this launch's ENTER and EXIT, and its entry
      // forgotten with the others caught there (launch_callbacks_off).
      submitted.refusal = "launchwatch stopped watching CUDA while the launch was being submitted";
    } else {
      submitted.profile.emplace(record_resolver{records_, state.correlation},
                                timing_method::device);
    }
    launch_path::finish_issue(state.info, state.decision, std::move(submitted));
  } catch (...) {
    // Nothing may cross into CUPTI (a failed allocation, a read that threw): the launch went on.
  }
}

void bridge_core::graph_launch_entered(const graph_launch_call& call) {
  if (options_.graph_replays != cuda_graph_replays::per_node) return;
  if (launch_path::reported_here_now() || !launch_path::is_observing()) return;
  if (!in_range_.load(std::memory_order_relaxed)) return;
  if (records_->holder().held_elsewhere()) return;  // its nodes' records would never come
  // Between timing windows, or with records off in the range, the nodes leave no records; one that
  // races a window's end ages out.
  if ((options_.timing_windows || records_follow_range_) && !records_gate_.is_open()) return;
  const launch_path::observation_ref observation = launch_path::current_observation();
  if (observation.empty()) return;
  (void)graphs_.replay_launched(records_->widen_at_enter(call.correlation), call.exec, observation,
                                device_of(call.context, this_thread_state()), call.stream_number);
}

void bridge_core::node_adding_call(bool entering, bool adds_kernel,
                                   std::uint64_t embeds) noexcept {
  thread_state& state = this_thread_state();
  state.adding_node = entering && adds_kernel ? generation_ : 0;
  state.embedding = entering && embeds != 0 ? generation_ : 0;
  state.embedded_graph = embeds;
  state.copies_made = 0;
}

void bridge_core::node_created(const created_node& node) {
  // Inside a reported launch's ENTER..EXIT on this thread: the node is that launch's kernel.
  thread_state& state = this_thread_state();
  if (!state.open || state.generation != generation_ || !state.info.capturing) {
    if (state.adding_node == generation_ && node.kernel) {
      state.adding_node = 0;  // the call's one node; later ones are copies (U3)
      report_kernel_node(node);
    } else if (state.embedding == generation_ && node.kernel && node.id &&
               options_.graph_replays == cuda_graph_replays::per_node) {
      // A copy of the embedded graph's next kernel node: not reported again (U3), but its
      // replays are the original's.
      try {
        graphs_.node_copied(*node.id, node.graph, state.embedded_graph, state.copies_made++);
      } catch (...) {
        // Out of memory: its replays are told unmapped; nothing may cross into CUPTI.
      }
    }
    return;
  }
  if (options_.graph_replays != cuda_graph_replays::per_node) return;
  if (!node.id) return;
  graphs_.node_created(*node.id, node.graph,
                       captured_node{state.info.kernel, state.info.launch_id});
}

void bridge_core::node_cloned(std::uint64_t original, std::uint64_t clone, std::uint64_t exec) {
  thread_state& state = this_thread_state();
  if (state.instantiating == generation_) {
    try {
      instantiate_clones.emplace_back(original, clone);
      return;
    } catch (...) {
      // Out of memory: filed under what CUPTI said instead.
    }
  }
  graphs_.node_cloned(original, clone, exec);
}

void bridge_core::instantiate_entered() noexcept {
  thread_state& state = this_thread_state();
  state.instantiating = generation_;
  instantiate_clones.clear();
}

void bridge_core::instantiate_exited(std::uint64_t exec) {
  thread_state& state = this_thread_state();
  if (state.instantiating != generation_) return;
  state.instantiating = 0;
  if (exec != 0) {
    for (const auto& [original, clone] : instantiate_clones) {
      graphs_.node_cloned(original, clone, exec);
    }
  }
  instantiate_clones.clear();
}

void bridge_core::graph_destroyed(std::uint64_t graph) { graphs_.graph_destroyed(graph); }

void bridge_core::exec_destroyed(std::uint64_t exec) { graphs_.exec_destroyed(exec); }

void bridge_core::launch_callbacks_off() noexcept {
  records_->forget_unadopted();
  records_gate_.forget_inside();  // their EXITs will not come either
}

std::uint64_t bridge_core::launch_id_of(std::uint64_t generation,
                                        std::uint64_t correlation) noexcept {
  constexpr std::uint64_t correlation_bits = 48;
  constexpr std::uint64_t generation_mask = (std::uint64_t{1} << 15) - 1;
  return ((generation & generation_mask) << correlation_bits) |
         (correlation & ((std::uint64_t{1} << correlation_bits) - 1));
}

void bridge_core::report_kernel_node(const created_node& node) {
  if (!launch_path::watched() || launch_path::reported_here_now() ||
      launch_path::inside_observer()) {
    return;
  }
  const bool in_range = in_range_.load(std::memory_order_relaxed);
  const bool per_node = options_.graph_replays == cuda_graph_replays::per_node;
  if (!in_range) launch_counts_.add(outside_range_count);
  // Outside the profiler API range a node is not reported, but still mapped for its replays
  // inside the range (finding 10).
  if (!in_range && (!per_node || !node.id)) return;
  const std::optional<kernel_node> described = device_.describe_kernel_node(node.node);
  if (!described) return;
  launch_info info;
  describe(info, described->name, name_source::driver_query, described->context, described->grid,
           described->block, this_thread_state());
  info.stream = 0;  // a node has no stream until a replay gives it one
  info.capturing = true;
  // Apart from the launches' ids (launch_id_of, bit 63 clear): the top bit.
  const std::uint32_t number = explicit_nodes_.fetch_add(1, std::memory_order_relaxed);
  info.launch_id = (std::uint64_t{1} << 63) | launch_id_of(generation_, number);
  if (!in_range) {
    try {
      graphs_.node_created(*node.id, node.graph, captured_node{info.kernel, info.launch_id});
    } catch (...) {
      // Out of memory: its replays go untold; nothing may cross into CUPTI.
    }
    return;
  }
  try {
    const launch_path::issue_decision decision = launch_path::begin_issue(info);
    launch_counts_.add(reported_count);
    if (decision.measure()) {
      launch_path::measured_submission refused;
      refused.refusal = launch_path::capture_refusal;
      launch_path::finish_issue(info, decision, std::move(refused));
    } else {
      launch_path::finish_issue(info, decision);
    }
    if (options_.graph_replays == cuda_graph_replays::per_node && node.id) {
      graphs_.node_created(*node.id, node.graph, captured_node{info.kernel, info.launch_id});
    }
  } catch (...) {
    // Nothing may cross into CUPTI: the node is added whatever happened here.
  }
}

void bridge_core::records_taken_elsewhere() {
  records_->holder().taken(taken_because::told, records_->newest_launch());
}

void bridge_core::records_returned() noexcept { records_->holder().returned(); }

void bridge_core::profiler_started() noexcept {
  in_range_.store(true, std::memory_order_relaxed);
  if (records_follow_range_ && records_from_start_) (void)open_range_records();
}

void bridge_core::profiler_stopped() noexcept {
  in_range_.store(false, std::memory_order_relaxed);
  if (!records_follow_range_) return;
  // After the store: a launch that opens the records under the lock either did so before this
  // close, or finds the range closed.
  std::lock_guard lock{range_mutex_};
  close_range_records();
}

void bridge_core::close_range_records() noexcept {
  // No wait: a launch still inside the gate is another thread's, in its driver call, which the
  // driver may hold up while this thread is in CUPTI's callback of the stop call.
  if (records_gate_.close(std::chrono::nanoseconds{0})) {
    (void)device_.kernel_records_off();
    range_records_off_pending_.store(false, std::memory_order_relaxed);
  } else {
    range_records_off_pending_.store(true, std::memory_order_relaxed);
  }
}

bool bridge_core::open_range_records() noexcept {
  std::lock_guard lock{range_mutex_};
  if (!in_range_.load(std::memory_order_relaxed)) return false;
  range_records_off_pending_.store(false, std::memory_order_relaxed);
  return records_gate_.is_open() || open_timing_window();
}

void bridge_core::start_collecting() { records_->start(); }

std::uint64_t bridge_core::devices_seen() const noexcept {
  return devices_seen_.load(std::memory_order_relaxed);
}

void bridge_core::capture_beginning(std::uint64_t stream) { captures_.beginning(stream); }

void bridge_core::capture_ended(std::uint64_t stream) noexcept { captures_.ended(stream); }

bool bridge_core::stream_capturing(void* stream) noexcept {
  // A stream joins a capture only through another stream's, begun by a call the bridge saw; so
  // with none in progress, none is capturing. A capture that begins while this launch is between
  // the question and its submission is the same race as the driver's answer would have.
  if (every_capture_seen_.load(std::memory_order_acquire) && captures_.in_progress() == 0) {
    return false;
  }
  return device_.capturing(stream);
}

bool bridge_core::wait_idle_outside_captures(const std::function<void()>& wait_idle) {
  return captures_.synchronise_outside_captures(wait_idle);
}

void bridge_core::deliver_pending(std::chrono::milliseconds patience,
                                  const std::function<void()>& wait_idle) {
  const std::uint64_t idle_from = records_->mark();
  const bool idle = wait_idle_outside_captures(wait_idle);
  records_->flush_until_delivered(
      patience, idle_from,
      idle ? kernel_records::devices::idle : kernel_records::devices::maybe_busy);
}

void bridge_core::close() noexcept {
  try {
    records_->close();
  } catch (...) {
    // A flush that threw (it cannot today): the table is closed whatever CUPTI did.
  }
  graphs_.forget_pending();
}

graph_table_sizes bridge_core::graph_tables() const { return graphs_.sizes(); }

cuda_bridge_stats bridge_core::stats() const noexcept {
  cuda_bridge_stats s;
  s.launches_reported = launch_counts_.sum(reported_count);
  s.own_launches_skipped = launch_counts_.sum(own_skipped_count);
  s.outside_capture_range = launch_counts_.sum(outside_range_count);
  const record_counts counts = records_->counts();
  s.measurements_delivered = counts.delivered;
  s.measurements_missing = counts.missing;
  s.records_dropped = counts.dropped;
  s.replayed_nodes_delivered = graphs_.delivered();
  s.replayed_nodes_unmapped = graphs_.delivered_unmapped();
  s.untimed_records_elsewhere = untimed_records_elsewhere_.load(std::memory_order_relaxed);
  const holder_counts holder = records_->holder().counts();
  s.records_taken_windows = holder.windows;
  s.records_taken_for = holder.held_elsewhere;
  s.untimed_outside_windows = untimed_outside_windows_.load(std::memory_order_relaxed);
  s.timing_windows_opened = options_.timing_windows ? records_gate_.opened() : 0;
  return s;
}

bool bridge_core::open_timing_window() noexcept {
  if (!device_.kernel_records_on()) return false;
  records_gate_.open();
  return true;
}

void bridge_core::close_timing_window(std::chrono::nanoseconds patience) noexcept {
  (void)records_gate_.close(patience);
  (void)device_.kernel_records_off();
}

}  // namespace launchwatch::detail::cuda_bridge
