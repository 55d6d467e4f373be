// The CUDA bridge's engine: one per process while any cuda_bridge lives (cuda_bridge.cpp shares
// it). It owns the CUPTI subscription (subscription.cpp), turns CUPTI's callbacks into the core's
// events (callbacks.cpp; the core, bridge_core.hpp, decides what is reported), and tears CUPTI down
// again.
#pragma once

#include <cupti.h>

#include <atomic>
#include <memory>
#include <mutex>

#include <launchwatch/cuda_bridge.hpp>

#include "bridge_core.hpp"
#include "core/interface/thread_presence.hpp"
#include "cupti_device.hpp"
#include "timing_windows.hpp"

namespace launchwatch::detail {

class cuda_bridge_engine;

/// What a CUPTI callback reads before it knows whether the engine is still there: the engine (null
/// once teardown began) and the callbacks in flight. CUPTI's user data points here, not at the
/// engine, and it is never freed (one allocation of 8 KiB per engine constructed), because
/// cuptiUnsubscribe promises only that no callback starts after it returns: a callback dispatched
/// before, whose thread has not reached the counter yet, may read this after the engine is gone
/// (review 2026-12-01b, finding 15).
///
/// Each thread counts its callbacks on a line of its own, without a locked instruction
/// (thread_presence): a launch passes the gate twice (ENTER, EXIT), and one shared counter made
/// every launching thread's callbacks write the same line with two locked instructions each.
struct callback_gate {
  std::atomic<cuda_bridge_engine*> engine{nullptr};
  thread_presence in_flight;

  /// Turns later callbacks away, then waits for those already in (teardown, or a failed start).
  void close() noexcept {
    engine.store(nullptr, std::memory_order_seq_cst);
    in_flight.wait_until_empty();
  }
};

class cuda_bridge_engine {
 public:
  /// Subscribes to CUPTI, or throws cuda_bridge_unavailable (configuration_error for a bad
  /// LAUNCHWATCH_CUPTI) leaving nothing subscribed.
  explicit cuda_bridge_engine(const cuda_bridge_options& options);
  /// Stops reporting, waits for the devices it saw, delivers what is pending, gives CUPTI back.
  ~cuda_bridge_engine();
  cuda_bridge_engine(const cuda_bridge_engine&) = delete;
  cuda_bridge_engine& operator=(const cuda_bridge_engine&) = delete;

  void flush();
  /// The end of `launchwatch run` (live_bridge.hpp): waits for the devices seen, closes the
  /// records (collector stopped, one forced flush), so nothing of the bridge runs through the
  /// process's teardown; stays subscribed, since the program's other threads may still call CUDA.
  void close_records() noexcept;
  /// Another CUPTI client of the program is about to take CUPTI's kernel records
  /// (live_bridge.hpp): delivers what is pending, then counts launches untimed until
  /// take_records_back().
  void lend_records() noexcept;
  /// The other client released them: registers the bridge's callbacks again and times launches
  /// again. Returns false (saying why) when CUPTI refused; launches then stay untimed.
  bool take_records_back() noexcept;
  cuda_bridge_stats stats() const noexcept;
  /// The core's graph bookkeeping sizes (live_bridge.hpp).
  cuda_bridge::graph_table_sizes graph_tables() const { return core_.graph_tables(); }

 private:
  /// CUPTI's callback: `gate` is the engine's callback_gate.
  static void CUPTIAPI on_callback(void* gate, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                   const void* data);
  /// The watch-state listener: launch callbacks on while something watches, off otherwise.
  static void on_watch_change() noexcept;

  /// A kernel launch's ENTER or EXIT.
  void on_launch(CUpti_CallbackId id, const CUpti_CallbackData& call);
  /// A driver or runtime API call other than a launch: graph launches, node-adding calls, stream
  /// captures beginning and ending, the profiler range.
  void on_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                   const CUpti_CallbackData& call);
  /// GRAPHNODE_CREATED, GRAPHNODE_CLONED, or a graph or executable graph being destroyed.
  void on_graph_node(CUpti_CallbackId id, const CUpti_ResourceData& resource);
  void apply_watch_state() noexcept;
  /// Waits for every device a launch was reported on (cudaDeviceSynchronize). Only through the
  /// core's wait_idle_outside_captures: it would invalidate a stream capture in progress.
  void synchronize_seen_devices() noexcept;
  void teardown() noexcept;

  /// Counts a callback in flight through `gate` (`entered`, for thread_presence::leave once it is
  /// done) and returns the engine; null (counting nothing) once the engine is being torn down.
  static cuda_bridge_engine* enter_callback(callback_gate& gate,
                                            thread_presence::ticket& entered) noexcept;

  const cuda_bridge_options options_;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  cuda_bridge::cupti_device device_;
  cuda_bridge::bridge_core core_;

  /// The thread that alternates timing windows (cuda_bridge_options::timing_windows); null
  /// without them.
  std::unique_ptr<cuda_bridge::timing_windows> windows_;

  std::mutex toggle_mutex_;
  bool launch_callbacks_on_ = false;  // guarded by toggle_mutex_

  /// Never freed (see callback_gate).
  callback_gate* const gate_ = new callback_gate;
};

}  // namespace launchwatch::detail
