// Subscribing to CUPTI and giving it back (bridge_engine.hpp), and switching the launch callbacks
// with the watch state.
#include <array>
#include <cstring>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include <launchwatch/launch_path.hpp>

#include "activity_buffers.hpp"
#include "availability.hpp"
#include "bridge_engine.hpp"
#include "capture_calls.hpp"
#include "cupti_calls.hpp"
#include "cupti_functions.hpp"
#include "inside_cuda_init.hpp"
#include "resolved_timing.hpp"

namespace launchwatch::detail {

using cuda_bridge::cupti;

namespace {

// The engine the watch listener switches; set while one lives.
std::mutex listener_mutex;
cuda_bridge_engine* listening = nullptr;

}  // namespace

cuda_bridge_engine::cuda_bridge_engine(const cuda_bridge_options& options)
    : options_{options}, core_{options_, device_, &cuda_bridge::flush_activity} {
  using reason = cuda_bridge_unavailable::reason;
  using cuda_bridge::unavailable;
  // Checked before anything is subscribed: the windows' thread starts last, when a throw would
  // leave CUPTI held.
  if (options_.timing_windows) cuda_bridge::require_positive(*options_.timing_windows);
  cuda_bridge::refuse_if_turned_off(options_);
  // Inside cuInit the runtime cannot be asked, and the driver being initialised says enough.
  if (!cuda_bridge::constructing_inside_cuda_init()) cuda_bridge::require_a_device();
  // CUPTI is found at run time (cupti_places.hpp): the program's Python environment's, the
  // toolkit's, or the one LAUNCHWATCH_CUPTI_LIBRARY names.
  (void)cuda_bridge::load_cupti();
  cuda_bridge::require_fitting_versions();

  std::array<char, 256> holder{};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "launchwatch";
  params.oldSubscriberName = holder.data();
  params.oldSubscriberSize = holder.size();
  gate_->engine.store(this, std::memory_order_seq_cst);
  if (const CUptiResult r = cupti().subscribe(&subscriber_, &on_callback, gate_, &params);
      r != CUPTI_SUCCESS) {
    subscriber_ = nullptr;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      std::string name{holder.data(), ::strnlen(holder.data(), holder.size())};
      if (name.empty()) name = "<not named>";
      unavailable(reason::cupti_in_use,
                  fmt::format("CUPTI is in use by '{}' (Nsight Systems or Compute, "
                              "compute-sanitizer, cuda-gdb, the PyTorch profiler or another tool's "
                              "injection), and CUPTI has one subscriber per process; launchwatch "
                              "sees only its own launches. Run without that tool to watch every "
                              "CUDA kernel.",
                              name),
                  name);
    }
    if (r == CUPTI_ERROR_NOT_INITIALIZED) {
      unavailable(reason::incompatible,
                  fmt::format("CUPTI could not initialise: {}; the versions may not fit ({}).",
                              cuda_bridge::cupti_error(r), cuda_bridge::versions()));
    }
    unavailable(reason::cupti_failed,
                fmt::format("cuptiSubscribe_v2 failed: {}", cuda_bridge::cupti_error(r)));
  }

  // From here a failure must give CUPTI back before it throws.
  const auto fail = [&](const char* call, CUptiResult r) {
    gate_->close();
    (void)cupti().unsubscribe(subscriber_);
    (void)cupti().finalize();
    subscriber_ = nullptr;
    unavailable(reason::cupti_failed, fmt::format("{} failed: {} ({})", call,
                                                  cuda_bridge::cupti_error(r),
                                                  cuda_bridge::versions()));
  };
  if (const int r = cuda_bridge::deliver_activity_to(core_.records()); r != CUPTI_SUCCESS) {
    fail("registering CUPTI's activity callbacks", static_cast<CUptiResult>(r));
  }
  core_.start_collecting();
  const auto close_records = [&] {
    core_.records()->close();
    cuda_bridge::stop_delivering_to(*core_.records());
  };
  const auto enable = [&](CUpti_CallbackDomain domain, CUpti_CallbackId id) {
    if (const CUptiResult r = cupti().enable_callback(1, subscriber_, domain, id);
        r != CUPTI_SUCCESS) {
      close_records();
      fail("cuptiEnableCallback", r);
    }
  };
  if (options_.capture_range == cuda_capture_range::cuda_profiler_api) {
    enable(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    enable(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    enable(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
    enable(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
  }
  if (options_.graph_replays == cuda_graph_replays::per_node) {
    enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
    // So a program that captures and instantiates again and again does not grow the bookkeeping.
    enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING);
    enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING);
    // The clones an instantiate call makes belong to its exec, also a child graph's (whose
    // GRAPHNODE_CLONED names a graph of its own); a CUPTI that lacks one form's id still works.
    for (const auto id : cuda_bridge::instantiate_ids) {
      (void)cupti().enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
  }
  // Nodes added by the explicit graph API are launches recorded into a graph, and are reported
  // whatever graph_replays says (the node-adding calls mark the thread, GRAPHNODE_CREATED names the
  // node); per_node also links captured nodes to their replays.
  enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  // Unloads of the memory kernel names live in: heard of, a thread's cached name pointers need no
  // check of their text at each launch (bridge_core::every_unload_seen). Not fatal: a bridge that
  // misses them checks the text.
  if (cupti().enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) == CUPTI_SUCCESS &&
      cupti().enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                              CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) == CUPTI_SUCCESS) {
    core_.every_unload_seen();
  }
  for (const auto id : cuda_bridge::add_node_ids) enable(CUPTI_CB_DOMAIN_DRIVER_API, id);
  // Stream captures, whoever makes them: the bridge must not wait for a device while one records
  // (capture_gate.hpp). Not fatal: a CUPTI older than the headers (12.2 and before) knows no
  // cuStreamBeginCaptureToGraph, and a bridge blind to some captures is still a bridge.
  bool every_capture_call = true;
  for (const auto id : cuda_bridge::begin_capture_ids) {
    every_capture_call &=
        cupti().enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id) == CUPTI_SUCCESS;
  }
  for (const auto id : cuda_bridge::end_capture_ids) {
    every_capture_call &=
        cupti().enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id) == CUPTI_SUCCESS;
  }
  // Made inside cuInit (launchwatch run's injection), before the program has a stream: every
  // capture begins after this, and is seen, so launches outside captures need not ask the driver.
  // A bridge made later may have missed a capture begun before it, and asks at every launch.
  if (every_capture_call && cuda_bridge::constructing_inside_cuda_init()) {
    core_.every_capture_seen();
  }
  // For after_cuda_runtime_initialised: a context is created once the runtime is up.
  enable(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  // Otherwise on only inside timing windows (timing_windows.hpp, started below) or the profiler
  // API range (bridge_core::profiler_started), or from the first launch timed.
  if (core_.records_on_from_construction()) {
    if (!device_.kernel_records_on()) {
      close_records();
      fail("cuptiActivityEnable(CONCURRENT_KERNEL)", CUPTI_ERROR_UNKNOWN);
    }
  }
  {
    std::lock_guard lock{listener_mutex};
    listening = this;
  }
  launch_path::on_watched_change(&on_watch_change);
  apply_watch_state();
  if (options_.timing_windows) {
    windows_ = std::make_unique<cuda_bridge::timing_windows>(core_, *options_.timing_windows);
  }
}

cuda_bridge_engine::~cuda_bridge_engine() { teardown(); }

void cuda_bridge_engine::teardown() noexcept {
  if (windows_) windows_->stop();
  {
    std::lock_guard lock{listener_mutex};
    listening = nullptr;
    launch_path::on_watched_change(nullptr);
  }
  {
    std::lock_guard lock{toggle_mutex_};
    for (const auto id : cuda_bridge::launch_ids) {
      (void)cupti().enable_callback(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
    for (const auto id : cuda_bridge::graph_launch_ids) {
      (void)cupti().enable_callback(0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
    launch_callbacks_on_ = false;
  }
  // Callbacks already running finish before anything they touch goes away; one CUPTI dispatches
  // later finds the gate (never freed) empty.
  gate_->close();
  core_.launch_callbacks_off();
  try {
    (void)core_.wait_idle_outside_captures([this] { synchronize_seen_devices(); });
  } catch (...) {
    // Only the gate's lock can throw (std::system_error): teardown goes on regardless.
  }
  core_.close();
  cuda_bridge::release_resolved_windows();
  cuda_bridge::stop_delivering_to(*core_.records());
  if (device_.kernel_records_were_turned_on()) {
    (void)cupti().activity_disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  (void)cupti().unsubscribe(subscriber_);
  // Without it launches stay slower for the rest of the process (research/cuda-bridge.md §4).
  (void)cupti().finalize();
}

void cuda_bridge_engine::on_watch_change() noexcept {
  std::lock_guard lock{listener_mutex};
  if (listening != nullptr) listening->apply_watch_state();
}

void cuda_bridge_engine::apply_watch_state() noexcept {
  // Enabled launch ids cost every launch CUPTI's dispatch (+0.3-0.5 µs) even when the callback
  // returns at once, so they are on only while something watches.
  std::lock_guard lock{toggle_mutex_};
  const bool want = launch_path::watched();
  if (want == launch_callbacks_on_) return;
  for (const auto id : cuda_bridge::launch_ids) {
    (void)cupti().enable_callback(want ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
  }
  if (options_.graph_replays == cuda_graph_replays::per_node) {
    for (const auto id : cuda_bridge::graph_launch_ids) {
      (void)cupti().enable_callback(want ? 1 : 0, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, id);
    }
  }
  launch_callbacks_on_ = want;
  // A launch caught between its ENTER and EXIT gets no EXIT now: nobody will read its record
  // (review 2026-12-01b, finding 13).
  if (!want) core_.launch_callbacks_off();
}

}  // namespace launchwatch::detail
