// A fake CUPTI for the bridge's core (src/cuda_bridge/bridge_core.hpp), after kineto's
// CuptiCallbackApiMock: a program's CUDA calls become the callback events CUPTI would send, in the
// order CUPTI sends them, and kernels leave records in a buffer that is handed over only when the
// core's record table flushes, as CUPTI's buffers are (research/cuda-bridge.md §1-2). It also
// answers the core's questions about CUDA (bridge_device): which stream is capturing, a resolved
// window.
//
// What it models, from measurements on the H200: launch callbacks run on the issuing thread,
// ENTER before submission and EXIT after; GRAPHNODE_CREATED fires inside a capturing launch's
// ENTER..EXIT; instantiating a graph clones each node (GRAPHNODE_CLONED); a replay fires only the graph launch,
// and its kernels' records carry the replay's correlation id and the clones' node ids.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include <launchwatch/cuda_bridge.hpp>

#include "cuda_bridge/bridge_core.hpp"

namespace launchwatch::testing {

class fake_cupti final : public detail::cuda_bridge::bridge_device {
 public:
  using core_type = detail::cuda_bridge::bridge_core;
  using kernel_record = detail::cuda_bridge::kernel_record;

  explicit fake_cupti(const cuda_bridge_options& options = {})
      : core_{options, *this, [this](bool forced) { flush(forced); }} {
    core_.start_collecting();
  }
  ~fake_cupti() { core_.close(); }
  fake_cupti(const fake_cupti&) = delete;
  fake_cupti& operator=(const fake_cupti&) = delete;

  core_type& core() noexcept { return core_; }

  /// A stream handle of the fake program (never dereferenced).
  static void* stream(std::uintptr_t number) noexcept { return reinterpret_cast<void*>(number); }

  /// Launches `symbol` on `on` as cuLaunchKernel would: ENTER, submission, EXIT on this thread. A
  /// kernel launched outside a capture runs at once for `length` and leaves its record in the
  /// buffer; inside a capture it becomes a node of the graph being recorded. Returns the launch's
  /// correlation id.
  std::uint32_t launch(const char* symbol, void* on = stream(7),
                       std::chrono::nanoseconds length = std::chrono::microseconds{5}) {
    const std::uint32_t correlation = next_correlation_.fetch_add(1) + 1;
    detail::cuda_bridge::launch_call call;
    call.correlation = correlation;
    call.symbol = symbol;
    call.context = context;
    call.stream = on;
    call.stream_number = reinterpret_cast<std::uintptr_t>(on);
    if (core_type::wants_launch_enter()) core_.launch_entered(call);
    if (during_submission) during_submission();
    const std::optional<std::uint64_t> captured_into = capture_of(on);
    if (captured_into) {
      // GRAPHNODE_CREATED, inside the launch's ENTER..EXIT.
      const std::uint64_t node = next_node_id(*captured_into);
      core_.node_created({reinterpret_cast<const void*>(node), node, true, *captured_into});
      std::lock_guard lock{mutex_};
      graphs_[*captured_into].push_back(node);
      names_[node] = symbol;
    } else if (records_on_.load()) {  // CUPTI records a kernel submitted while records are on
      complete(kernel_record{correlation, 0, 0, 0, 0, 0}, length);
    } else {
      submitted_without_records_.fetch_add(1);
    }
    submitted_.fetch_add(1);
    if (core_type::wants_launch_exit()) core_.launch_exited(call);
    return correlation;
  }

  /// cudaStreamBeginCapture on `on`: the begin call's ENTER (which may wait, see
  /// bridge_core::capture_beginning), then launches on it are recorded into a new graph.
  void begin_capture(void* on) {
    core_.capture_beginning(reinterpret_cast<std::uintptr_t>(on));
    std::lock_guard lock{mutex_};
    capturing_[on] = next_graph_++;
  }
  /// cudaStreamEndCapture: returns the graph recorded; the call's EXIT tells the core.
  std::uint64_t end_capture(void* on) {
    std::uint64_t graph = 0;
    {
      std::lock_guard lock{mutex_};
      graph = capturing_.at(on);
      capturing_.erase(on);
    }
    core_.capture_ended(reinterpret_cast<std::uintptr_t>(on));
    return graph;
  }
  /// cudaGraphInstantiate: between the call's ENTER and EXIT, clones every node of `graph`
  /// (GRAPHNODE_CLONED) into a new executable graph, returned; at the address `at` when given
  /// (CUDA hands a destroyed one's out again), though CUPTI's id of it is always new. A clone of a
  /// child graph's node is said to be in a graph of its own (the child's copy in the exec).
  const void* instantiate(std::uint64_t graph, const void* at = nullptr) {
    core_.instantiate_entered();
    std::vector<std::uint64_t> originals;
    std::uint64_t exec_graph = 0;
    std::map<std::uint64_t, std::uint64_t> nested_in_exec;  // a child's copy -> its copy here
    {
      std::lock_guard lock{mutex_};
      originals = graphs_[graph];
      exec_graph = next_graph_++;
    }
    const void* exec = at != nullptr ? at : reinterpret_cast<const void*>(exec_graph);
    {
      std::lock_guard lock{mutex_};
      exec_ids_[exec] = exec_graph;
    }
    for (const std::uint64_t original : originals) {
      std::uint64_t in_graph = exec_graph;
      {
        std::lock_guard lock{mutex_};
        if (const auto nested = nested_of_.find(original); nested != nested_of_.end()) {
          if (nested_in_exec.count(nested->second) == 0) {
            nested_in_exec[nested->second] = next_graph_++;
          }
          in_graph = nested_in_exec[nested->second];
        }
      }
      const std::uint64_t clone = next_node_id(in_graph);
      core_.node_cloned(original, clone, in_graph);
      std::lock_guard lock{mutex_};
      clones_[exec].push_back(clone);
      originals_of_[exec].push_back(original);
      if (const auto name = names_.find(original); name != names_.end()) {
        names_[clone] = name->second;
      }
    }
    core_.instantiate_exited(exec_graph);
    return exec;
  }
  /// Replays' records name the captured node each kernel's node was cloned from, not the clone.
  /// Driver 580 names the clone (a probe on the H200); the bridge accepts either.
  void records_name_captured_nodes() {
    std::lock_guard lock{mutex_};
    records_name_originals_ = true;
  }
  /// cudaGraphCreate: an empty graph for the explicit graph API.
  std::uint64_t new_graph() {
    std::lock_guard lock{mutex_};
    return next_graph_++;
  }
  /// cudaGraphAddKernelNode of `name` to `graph`, outside any capture: GRAPHNODE_CREATED fires
  /// inside the node-adding call. Returns the node's id.
  std::uint64_t add_kernel_node(std::uint64_t graph, const char* name) {
    core_.node_adding_call(true, true);
    const std::uint64_t node = next_node_id(graph);
    {
      std::lock_guard lock{mutex_};
      names_[node] = name;
      graphs_[graph].push_back(node);
    }
    core_.node_created({reinterpret_cast<const void*>(node), node, true, graph});
    core_.node_adding_call(false);
    return node;
  }
  /// cuGraphAddNode of a child-graph node holding a copy of `child` into `graph`: the copy is a
  /// graph of its own, and CUPTI may announce each copied kernel node as created inside the call
  /// (review U3), which it does here unless announce_no_copies() was called.
  void add_child_graph_node(std::uint64_t graph, std::uint64_t child) {
    core_.node_adding_call(true, false, child);
    std::vector<std::uint64_t> nodes;
    std::uint64_t copy_graph = 0;
    {
      std::lock_guard lock{mutex_};
      nodes = graphs_[child];
      copy_graph = next_graph_++;
    }
    for (const std::uint64_t node : nodes) {
      const std::uint64_t copy = next_node_id(copy_graph);
      bool announce = true;
      {
        std::lock_guard lock{mutex_};
        names_[copy] = names_[node];
        graphs_[graph].push_back(copy);
        nested_of_[copy] = copy_graph;
        announce = announce_copies_;
      }
      if (announce) core_.node_created({reinterpret_cast<const void*>(copy), copy, true, copy_graph});
    }
    core_.node_adding_call(false);
  }
  /// Copies a child-graph node makes are not announced: the bridge never sees them made.
  void announce_no_copies() {
    std::lock_guard lock{mutex_};
    announce_copies_ = false;
  }
  /// cudaGraphExecDestroy: GRAPHEXEC_DESTROY_STARTING, then GRAPH_DESTROY_STARTING of the exec's
  /// internal graph, which has the exec's id (driver 580, a probe on the H200).
  void destroy_exec(const void* exec) {
    std::uint64_t id = 0;
    {
      std::lock_guard lock{mutex_};
      id = exec_ids_.at(exec);
      exec_ids_.erase(exec);
      clones_.erase(exec);
      originals_of_.erase(exec);
    }
    core_.exec_destroyed(id);
    core_.graph_destroyed(id);
  }
  /// cudaGraphDestroy (GRAPH_DESTROY_STARTING).
  void destroy_graph(std::uint64_t graph) {
    {
      std::lock_guard lock{mutex_};
      graphs_.erase(graph);
    }
    core_.graph_destroyed(graph);
  }
  /// cuGraphLaunch of `exec` on `on`: only the graph launch's callback fires; each node's kernel
  /// runs for `length` and, while records are on, leaves a record with the replay's correlation id
  /// and the clone's id.
  std::uint32_t replay(const void* exec, void* on = stream(7),
                       std::chrono::nanoseconds length = std::chrono::microseconds{3}) {
    const std::uint32_t correlation = next_correlation_.fetch_add(1) + 1;
    std::uint64_t id = 0;
    std::vector<std::uint64_t> nodes;
    {
      std::lock_guard lock{mutex_};
      id = exec_ids_.at(exec);
      nodes = records_name_originals_ ? originals_of_[exec] : clones_[exec];
    }
    core_.graph_launch_entered({correlation, id, context, reinterpret_cast<std::uintptr_t>(on)});
    for (const std::uint64_t node : nodes) {
      const char* name = nullptr;
      {
        std::lock_guard lock{mutex_};
        if (const auto found = names_.find(node); found != names_.end()) name = found->second;
      }
      if (records_on_.load()) complete(kernel_record{correlation, node, 0, 0, 0, 0, name}, length);
    }
    return correlation;
  }

  /// The kernel of `correlation` is still running: its record stays out of every flush until
  /// release(). Call before the launch.
  void withhold(std::uint32_t correlation) {
    std::lock_guard lock{mutex_};
    withheld_.insert(correlation);
  }
  /// The record of `correlation` may be handed over again (at the next flush).
  void release(std::uint32_t correlation) {
    std::lock_guard lock{mutex_};
    withheld_.erase(correlation);
  }
  /// The record of `correlation` never comes (another CUPTI client took it). Call before the
  /// launch.
  void lose(std::uint32_t correlation) {
    std::lock_guard lock{mutex_};
    lost_.insert(correlation);
  }
  /// Another CUPTI client registers its activity buffers (cuptiActivityRegisterCallbacks): the
  /// records in the buffer and every later one go to it, none to the bridge, until
  /// bridge_registers_again().
  void another_client_takes_records() {
    std::lock_guard lock{mutex_};
    elsewhere_ = true;
    buffer_.clear();
  }
  /// The bridge registered its own callbacks again: records reach it.
  void bridge_registers_again() {
    std::lock_guard lock{mutex_};
    elsewhere_ = false;
  }
  /// The correlation id the next launch or replay will get.
  std::uint32_t next_correlation() const noexcept { return next_correlation_.load() + 1; }
  /// The next launch or replay gets `id` (as if the calls between had been made unwatched).
  void jump_correlation(std::uint32_t id) noexcept { next_correlation_.store(id - 1); }

  /// Runs inside each launch between its ENTER and its submission, on the launching thread: what
  /// another thread does while a launch is in its driver call (empty: nothing).
  std::function<void()> during_submission;

  /// Launches submitted so far (counted between ENTER and EXIT).
  std::uint64_t submitted() const noexcept { return submitted_.load(); }
  /// Whether kernel records are on (they are at first; timing windows turn them off and on), how
  /// often the core turned them on, and the kernels submitted while they were off.
  bool records_on() const noexcept { return records_on_.load(); }
  std::uint64_t records_turned_on() const noexcept { return records_turned_on_.load(); }
  std::uint64_t submitted_without_records() const noexcept {
    return submitted_without_records_.load();
  }
  /// Flushes the core's table asked for.
  std::uint64_t flushes() const noexcept { return flushes_.load(); }
  /// How often the core asked whether a stream was capturing (cuStreamIsCapturing).
  std::uint64_t capture_questions() const noexcept { return capture_questions_.load(); }

  // bridge_device
  int device_of(void*) noexcept override { return 0; }
  bool capturing(void* on) noexcept override {
    capture_questions_.fetch_add(1);
    return capture_of(on).has_value();
  }
  bool kernel_records_on() noexcept override {
    if (!records_on_.exchange(true)) records_turned_on_.fetch_add(1);
    return true;
  }
  bool kernel_records_off() noexcept override {
    records_on_.store(false);
    return true;
  }
  bool open_window(void*, void*) noexcept override { return true; }
  std::optional<profile_duration> close_window(void*) override {
    const auto start = std::chrono::steady_clock::now();
    const auto ticks = profile_ticks::from_start_end(start, start + resolved_length);
    return profile_duration{[ticks]() -> std::optional<profile_ticks> { return ticks; },
                            timing_method::device};
  }
  std::optional<detail::cuda_bridge::kernel_node> describe_kernel_node(
      const void* node) noexcept override {
    std::lock_guard lock{mutex_};
    const auto found = names_.find(reinterpret_cast<std::uintptr_t>(node));
    if (found == names_.end()) return std::nullopt;
    detail::cuda_bridge::kernel_node described;
    described.name = found->second;
    described.context = context;
    return described;
  }

  /// What a resolved window measures.
  static constexpr std::chrono::nanoseconds resolved_length{4200};
  /// The fake program's one context.
  static inline int context_storage = 0;
  static inline void* const context = &context_storage;

 private:
  static std::uint64_t now_nanoseconds() {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }

  std::optional<std::uint64_t> capture_of(void* on) {
    std::lock_guard lock{mutex_};
    const auto found = capturing_.find(on);
    if (found == capturing_.end()) return std::nullopt;
    return found->second;
  }

  /// CUPTI's node ids: the graph's id in the upper half, the node's number in the lower.
  std::uint64_t next_node_id(std::uint64_t graph) {
    std::lock_guard lock{mutex_};
    return (graph << 32) | node_counts_[graph]++;
  }

  /// A kernel ran for `length` just now: its record waits in the buffer for a flush.
  void complete(kernel_record record, std::chrono::nanoseconds length) {
    record.end = now_nanoseconds();
    record.start = record.end - static_cast<std::uint64_t>(length.count());
    std::lock_guard lock{mutex_};
    if (elsewhere_ || lost_.count(static_cast<std::uint32_t>(record.correlation)) != 0) return;
    buffer_.push_back(record);
  }

  /// cuptiActivityFlushAll: hands the buffer's records over, but none of a kernel still running
  /// (a FORCED flush hands those over with no timestamps, as CUPTI does).
  void flush(bool forced) {
    flushes_.fetch_add(1);
    std::vector<kernel_record> handed;
    {
      std::lock_guard lock{mutex_};
      std::vector<kernel_record> kept;
      for (const kernel_record& record : buffer_) {
        if (withheld_.count(static_cast<std::uint32_t>(record.correlation)) == 0) {
          handed.push_back(record);
        } else if (forced) {
          handed.push_back(kernel_record{record.correlation, record.graph_node, 0, 0, 0, 0});
        } else {
          kept.push_back(record);
        }
      }
      buffer_ = std::move(kept);
    }
    if (!handed.empty()) core_.records()->on_records(handed, 0);
  }

  std::mutex mutex_;
  std::map<void*, std::uint64_t> capturing_;
  std::map<std::uint64_t, std::vector<std::uint64_t>> graphs_;
  std::map<const void*, std::vector<std::uint64_t>> clones_;
  std::map<const void*, std::vector<std::uint64_t>> originals_of_;  // the captured node of each clone
  bool records_name_originals_ = false;
  bool announce_copies_ = true;
  std::map<std::uint64_t, std::uint64_t> nested_of_;  // a child graph's copied node -> its graph
  bool elsewhere_ = false;
  std::map<const void*, std::uint64_t> exec_ids_;
  std::map<std::uint64_t, const char*> names_;
  std::map<std::uint64_t, std::uint32_t> node_counts_;
  std::uint64_t next_graph_ = 1;
  std::vector<kernel_record> buffer_;
  std::set<std::uint32_t> withheld_;
  std::set<std::uint32_t> lost_;
  std::atomic<std::uint32_t> next_correlation_{0};
  std::atomic<std::uint64_t> submitted_{0};
  std::atomic<bool> records_on_{true};
  std::atomic<std::uint64_t> records_turned_on_{0};
  std::atomic<std::uint64_t> submitted_without_records_{0};
  std::atomic<std::uint64_t> flushes_{0};
  std::atomic<std::uint64_t> capture_questions_{0};
  core_type core_;
};

}  // namespace launchwatch::testing
